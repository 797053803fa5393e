"""Accepted L0 findings: per-finding suppressions (with a reason) and the adoption baseline.

A finding is accepted by
- an inline comment on its line or the line before, like ruff's `noqa`:
  `<!-- skill-eval: ignore[link-leaves-skill] shipped together as a plugin -->` (rules comma-separated;
  the reason is required: a comment without one suppresses nothing and is itself an error);
- a `[[checks.ignore]]` entry in the config: `id` (as printed in [brackets], fnmatch wildcards allowed)
  and `reason`;
- the baseline file (`check-skills --write-baseline`): the ids of the findings a repository had when it
  adopted skill-eval. A baselined finding no longer fails; a new one does.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from skill_eval.checks.findings import Finding
from skill_eval.core import fsio, schemas, strict

if TYPE_CHECKING:
    from skill_eval.content.config import Config

INLINE_RE = re.compile(r"<!--\s*skill-eval:\s*ignore\[([a-z0-9,\s*-]+)\]\s*(.*?)\s*-->")
BASELINE_VERSION = 1


@dataclass
class Accepted:
    """The findings that still count, and the ones accepted (with why)."""

    kept: list[Finding] = field(default_factory=list)
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)  # (finding, reason)
    baselined: list[Finding] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # baseline ids no finding matches any more (fixed)


def _inline(cfg: Config, where: str, cache: dict[str, dict[int, tuple[set[str], str]]], extra: list[Finding]) -> dict[int, tuple[set[str], str]]:
    """line number -> (rules, reason) of the inline suppressions in one repository file."""
    if where in cache:
        return cache[where]
    found: dict[int, tuple[set[str], str]] = {}
    path = cfg.root / where
    if path.is_file() and path.suffix == ".md":
        text = path.read_bytes().decode("utf-8", errors="replace")
        for n, line in enumerate(() if "skill-eval:" not in text else text.replace("\r\n", "\n").split("\n"), start=1):
            for m in INLINE_RE.finditer(line):
                rules = {r.strip() for r in m.group(1).split(",") if r.strip()}
                if not m.group(2):
                    extra.append(Finding("error", where, f"line {n}: inline suppression of {', '.join(sorted(rules))} gives no "
                                         "reason (write <!-- skill-eval: ignore[rule] why it is fine -->)",
                                         "suppression", f"line-{n}", n))
                    continue
                found[n] = (rules, m.group(2))
    cache[where] = found
    return found


def apply(cfg: Config, findings: list[Finding], *, baseline: bool = True) -> Accepted:
    """Split findings into kept / suppressed / baselined (notes are always kept)."""
    out = Accepted()
    cache: dict[str, dict[int, tuple[set[str], str]]] = {}
    extra: list[Finding] = []
    known = load_baseline(cfg) if baseline else set()
    matched: set[str] = set()
    for f in findings:
        if f.level == "note":
            out.kept.append(f)
            continue
        reason = next((s.reason for s in cfg.suppressions if fnmatch.fnmatchcase(f.id, s.id)), None)
        if reason is None and f.line:
            inline = _inline(cfg, f.where, cache, extra)
            for n in (f.line, f.line - 1):
                rules, why = inline.get(n, (set(), ""))
                if f.rule in rules or "*" in rules:
                    reason = why
                    break
        if reason is not None:
            out.suppressed.append((f, reason))
        elif f.id in known:
            out.baselined.append(f)
            matched.add(f.id)
        else:
            out.kept.append(f)
    out.kept += extra
    out.stale = sorted(known - matched)
    return out


def load_baseline(cfg: Config) -> set[str]:
    path = cfg.l0_baseline_path
    if not path.is_file():
        return set()
    data = strict.load_json(path)
    schemas.validate(data, "check_skills_baseline", path)
    return {e["id"] for e in data["findings"]}


def write_baseline(cfg: Config, findings: list[Finding]) -> str:
    """Write every current error and warning as the baseline; returns its repository-relative path."""
    entries = sorted({f.id: f for f in findings if f.level in ("error", "warning")}.values(), key=lambda f: f.id)
    record = {"schema_version": BASELINE_VERSION,
              "findings": [{"id": f.id, "level": f.level, "message": f.message} for f in entries]}
    schemas.validate(record, "check_skills_baseline", cfg.l0_baseline_path)
    rel = cfg.l0_baseline_path.relative_to(cfg.root).as_posix()
    fsio.write_file(cfg.root, rel, (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode())
    return rel
