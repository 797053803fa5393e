"""Waivers: a named maintainer accepts *exactly* the incomplete evidence of a release.

A waiver turns `incomplete` into `waived` and nothing else: it is rejected over `fail` (a
failed check or case, or a `worse` comparison, cannot be waived) and over `pass` (there is
nothing to accept). It must list exactly the incomplete cases and their skills — not one
more, not one fewer — sorted, and its compensating evidence must name, sorted, every
credential-free gate the stage ran, each of which passed. It does not establish the
approver's authority; repository governance does that outside the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skill_eval.core import formats, schemas, strict
from skill_eval.core.errors import CheckFailed, InputError
from skill_eval.core.vocab import ReleaseOutcome


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = strict.load_json(path) if path.suffix == ".json" else strict.load_yaml(path)
    data = formats.upgrade(data, "release_waiver", path)
    schemas.validate(data, "release_waiver", path)
    for key in ("skills", "cases", "compensating_evidence"):
        if data[key] != sorted(set(data[key])):
            raise InputError(f"{key} must be sorted and free of repeats", source=path, field=key,
                             fix=f"use {sorted(set(data[key]))}")
    return data


def apply(path: Path, waiver: dict[str, Any], outcome: ReleaseOutcome, fail_reasons: list[str], incomplete: dict[str, str],
          checks: list[dict[str, Any]]) -> None:
    """Raise CheckFailed (naming the field) unless the waiver covers exactly this incomplete release."""
    if outcome == "fail":
        raise CheckFailed(f"a waiver cannot cover a failed release ({'; '.join(fail_reasons[:3])})", source=path,
                          fix="fix the failure; waivers accept incomplete evidence only")
    if outcome != "incomplete":
        raise CheckFailed(f"the release is {outcome}, not incomplete: there is nothing to waive", source=path,
                          fix="drop --waiver")
    want_cases = sorted(incomplete)
    if waiver["cases"] != want_cases:
        extra = sorted(set(waiver["cases"]) - set(want_cases))
        missing = sorted(set(want_cases) - set(waiver["cases"]))
        raise CheckFailed(f"cases must be exactly the incomplete cases (not incomplete or unknown: {extra}; "
                          f"incomplete but not listed: {missing})", source=path, field="cases", fix=f"use {want_cases}")
    want_skills = sorted(set(incomplete.values()))
    if waiver["skills"] != want_skills:
        raise CheckFailed(f"skills {waiver['skills']} are not exactly the incomplete cases' skills", source=path,
                          field="skills", fix=f"use {want_skills}")
    gates = sorted(c["gate"] for c in checks)
    not_passed = sorted(c["gate"] for c in checks if c["status"] != "pass")
    if not gates or not_passed:
        raise CheckFailed(f"every credential-free gate must have passed to waive (not passed: {not_passed or 'no gates ran'})",
                          source=path, field="compensating_evidence", fix="run the deterministic checks and fix them")
    if waiver["compensating_evidence"] != gates:
        raise CheckFailed(f"compensating_evidence must name each credential-free gate, sorted: {gates}", source=path,
                          field="compensating_evidence", fix=f"use {gates}")
