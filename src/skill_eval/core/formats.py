"""Format versions of every record skill-eval writes, in one table (inspect_ai's way).

Evidence is committed and re-graded for years, so each record carries `schema_version` and every
reader checks it *first*: a version newer than this table is one clear error ("written by a newer
skill-eval"), an older one is upgraded on read by a named migration in UPGRADES, and only then is
the record validated against its schema. Writers take their version from FORMATS, never a literal.
This module is a leaf (it imports only errors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skill_eval.core.errors import InputError

# format name -> the version this skill-eval writes (and the newest it reads)
FORMATS: dict[str, int] = {
    "config": 1,
    "meta": 2,  # v2: isolation, outcome (runner-executed subject calls, OS sandbox)
    "call": 2,  # v2: inputs (digests of the files the subject read), recorded by the runner
    "facts": 2,  # v2: `case` (the sandbox name) and `seed` (receipts of the runner-executed seed recipe)
    "seed": 1,  # fixtures/<case>/seed.json: the runner-executed initialization recipe
    "pack": 1,
    "baseline": 1,
    "evidence_pending": 1,
    "judgments": 3,  # v2: judge panels (`panel`, `agreement`, `needs_human_review`), issue 28 item 4; v3: `judge_source`
    "judgments_seal": 1,  # the pair judgments.sig signs (grading/judgments.py), rebuilt by the reader
    "cli_surface": 1,
    "shim_config": 1,
    "release_stage": 1,  # release flow (DESIGN §10): sealed stage, worksheet, waiver, report
    "release_worksheet": 1,
    "release_waiver": 1,
    "release_report": 1,
    "security_rules": 1,  # checks/security_rules.yaml: the L0 security rules, kept as data
    "seal": 1,  # seal.json: the recorder's signed manifest of a bundle (core/seal.py)
}

Migration = Callable[[dict[str, Any]], dict[str, Any]]

# (format, from_version) -> function returning the record at from_version + 1
UPGRADES: dict[tuple[str, int], Migration] = {}


def migration(name: str, from_version: int) -> Callable[[Migration], Migration]:
    """Register `fn` as the upgrade of `name` records from `from_version` to `from_version + 1`."""

    def register(fn: Migration) -> Migration:
        UPGRADES[(name, from_version)] = fn
        return fn

    return register


def upgrade(record: Any, name: str, source: object) -> Any:
    """Check `record`'s schema_version against FORMATS[name]; upgrade an older one step by step.

    Raises InputError (exit 2) for a newer version, a missing/non-integer version, or an older
    version with no migration path. Returns the record at the current version (a new dict when
    upgraded; the same object otherwise).
    """
    current = FORMATS[name]
    if not isinstance(record, dict):
        return record  # the schema reports the shape
    version = record.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputError(f"missing or not an integer (this skill-eval writes {current})",
                         source=source, field="schema_version", fix=f"set schema_version = {current}")
    if version > current:
        raise InputError(f"written by a newer skill-eval ({name} format version {version}; this one reads up to "
                         f"{current})", source=source, field="schema_version", fix="upgrade skill-eval")
    while version < current:
        step = UPGRADES.get((name, version))
        if step is None:
            raise InputError(f"{name} format version {version} is no longer readable (no migration to "
                             f"{version + 1})", source=source, field="schema_version",
                             fix="re-create the file with this skill-eval")
        record = step(dict(record))
        version = record["schema_version"] = version + 1
    return record


# -- migrations (one per version step; each returns the record at from_version + 1) ------------


@migration("meta", 1)
def _meta_1_to_2(record: dict[str, Any]) -> dict[str, Any]:
    """v1 bundles were recorded without an OS sandbox, so isolation is "none"; the v2 `outcome`
    is derived from the v1 `status` (an incomplete run stopped by its turn or cost budget is a
    budget stop; any other incomplete run is an infrastructure error)."""
    from skill_eval.core import outcomes  # a pure leaf as well: the one status -> outcome rule

    status = record.get("status")
    extra = raw_extra if isinstance(raw_extra := record.get("extra"), dict) else {}
    reason = str(record.get("status_reason") or "")
    if not reason and isinstance(extra.get("stop_reason"), str):
        reason = extra["stop_reason"] + ":"  # v1 runs cut by a budget say so only in extra.stop_reason
    outcome = (outcomes.derive(status, reason) if status in ("complete", "incomplete", "error")
               else None)  # else the schema names `status`
    record.setdefault("isolation", "none")
    if outcome is not None:
        record.setdefault("outcome", outcome)
    return record


@migration("facts", 1)
def _facts_1_to_2(record: dict[str, Any]) -> dict[str, Any]:
    """v1 receipts predate seed recipes: no `case`, no `seed` block — exactly what a v2 receipt of a
    scenario without a seed recipe holds, so nothing is added (the grader then requires neither)."""
    return record


@migration("judgments", 1)
def _judgments_1_to_2(record: dict[str, Any]) -> dict[str, Any]:
    """v1 entries are single-judge verdicts: a v2 entry without `panel` means exactly that."""
    return record


@migration("judgments", 2)
def _judgments_2_to_3(record: dict[str, Any]) -> dict[str, Any]:
    """v2 entries did not record where their judge model was served: `unrecorded` says exactly that (a
    release never counts such a judgment as a provider judge's, grading/judgments.py)."""
    for entry in record.get("judgments") or []:
        if isinstance(entry, dict):
            entry.setdefault("judge_source", "unrecorded")
    return record


@migration("call", 1)
def _call_1_to_2(record: dict[str, Any]) -> dict[str, Any]:
    """v1 call records were written by the in-sandbox shim, with no input digests: `inputs`
    null means "no input evidence", so such a call can never carry a verdict."""
    record.setdefault("inputs", None)
    return record
