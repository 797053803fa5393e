"""The named L0 rules beyond structure: their finding type and their `explain` pages.

A RuleFinding is an L0 Finding (same id, suppression and baseline) that also carries the
column and the fix, so a SARIF or JUnit writer has rule id, file, line, column, level,
message and fix for every finding. The hygiene rules (checks.hygiene) are documented here;
the security rules document themselves in their data file (checks.security).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from skill_eval.checks.findings import Finding

# Anthropic's skill authoring best practices: "For reference files longer than 100 lines, include a
# table of contents at the top" (platform.claude.com/docs/en/agents-and-tools/agent-skills/best-practices)
TOC_LINES = 100
TOC_WINDOW = 60  # the table of contents must start within the file's first lines
# Anthropic's skill name rule: "Cannot contain reserved words: 'anthropic', 'claude'"
RESERVED_WORDS = ("anthropic", "claude")


@dataclass(frozen=True)
class RuleFinding(Finding):
    """A Finding with its 1-based column (0: none) and the fix, for machine-readable reports."""

    column: int = 0
    fix: str = ""

    def at(self, line: int) -> RuleFinding:
        """The same finding at a line (counted only once a finding exists)."""
        return dataclasses.replace(self, line=line)

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        if self.column:
            out["column"] = self.column
        if self.fix:
            out["fix"] = self.fix
        return out

    def __str__(self) -> str:
        where = f"{self.where}{f':{self.line}' if self.line else ''}{f':{self.column}' if self.line and self.column else ''}"
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{self.level}: {where}: {self.message}{fix} [{self.id}]"


@dataclass(frozen=True)
class RuleDoc:
    """One rule's `explain` page."""

    id: str
    level: str
    summary: str
    why: str
    fix: str

    def page(self) -> str:
        return (f"({self.level}) {self.summary}\n  why: {self.why}\n  fix: {self.fix}\n  suppress: "
                f"<!-- skill-eval: ignore[{self.id}] why it is fine --> on the line or the line before (Markdown), or "
                f"[[checks.ignore]] id = \"{self.id}:<file>*\" with a reason (`skill-eval explain suppress`)")


HYGIENE: dict[str, RuleDoc] = {d.id: d for d in (
    RuleDoc("name-reserved", "warning", "the skill name contains a reserved word ('anthropic' or 'claude')",
            "Anthropic's skill rules reserve these words: claude.ai and the Claude API refuse such a skill on upload "
            "(Claude Code and other clients still load it).",
            "rename the skill folder and its `name` without the reserved word (e.g. 'claude-api' -> 'api-guide')"),
    RuleDoc("file-unreferenced", "warning", "a bundled file that no other file of the skill names",
            "An agent learns what a skill holds only from SKILL.md and the files it points at: a script or asset "
            "nothing names is never used (or is left over). A file counts as named when another file of the skill "
            "names its path, its file name, one of its folders below scripts/, references/ or assets/, or (a Python "
            "module) its import name. The finding has no line: accept it in [[checks.ignore]].",
            "name it where the agent should use it ('Run scripts/x.py to ...'), or delete it"),
    RuleDoc("reference-no-toc", "warning", f"a reference file over {TOC_LINES} lines without a table of contents at "
            "the top",
            f"Anthropic's skill authoring best practices ask for a table of contents in reference files longer than "
            f"{TOC_LINES} lines: an agent that previews the top of a long file must see what else it holds. A heading "
            f"such as 'Contents' or 'Table of contents', or three or more in-page links (#anchors), within the first "
            f"{TOC_WINDOW} lines counts.",
            "add a '## Contents' list of the file's sections at its top"),
    RuleDoc("command-unpinned", "warning", "`npx`, `bunx`, `pnpm dlx`, `uvx` or `pipx run` of a package with no "
            "pinned version, in a shell code block or inline code",
            "The command downloads and runs whatever version is newest on the day the agent runs it: a skill that "
            "worked can break, and a compromised release runs with the user's rights.",
            "pin the version: `npx pkg@1.2.3`, `uvx pkg@1.2.3` (or `uvx --from 'pkg==1.2.3' cmd`), "
            "`pipx run 'pkg==1.2.3'`"),
)}

