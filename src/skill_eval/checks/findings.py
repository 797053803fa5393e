"""An L0 finding: one defect in one file, with an id (rule:where:subject) that suppressions and the
adoption baseline match (checks.suppress)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One L0 finding. `id` (rule:where:subject, no line number) is stable across edits elsewhere in
    the file, so a suppression or a baseline entry keeps matching it."""

    level: str  # error | warning | note (not a skill, skipped by rule)
    where: str
    message: str
    rule: str = "structure"
    subject: str = ""  # what the finding is about: a link target, a path, a frontmatter field
    line: int = 0  # 1-based line in `where` (0: the whole file); for inline suppressions, not part of the id

    @property
    def id(self) -> str:
        return f"{self.rule}:{self.where}" + (f":{self.subject}" if self.subject else "")

    def as_dict(self) -> dict[str, Any]:
        return {"level": self.level, "where": self.where, "message": self.message, "rule": self.rule, "id": self.id,
                **({"line": self.line} if self.line else {})}

    def __str__(self) -> str:  # `file:line:` as compilers and linters print it (an editor jumps there)
        return f"{self.level}: {self.where}{f':{self.line}' if self.line else ''}: {self.message} [{self.id}]"
