"""Waivers: a named maintainer accepts *exactly* the incomplete evidence of a release.

A waiver turns `incomplete` into `waived` and nothing else: it is rejected over `fail` (a
failed check or case, or a `worse` comparison, cannot be waived) and over `pass` (there is
nothing to accept). It must list exactly the incomplete cases and their skills — not one
more, not one fewer — sorted, and its compensating evidence must name, sorted, the task-tool
seed's six credential-free gates (`command`, `cross-platform`, `lifecycle`, `machine-api`,
`parity`, `security`), each of which passed. It does not establish the approver's authority;
repository governance does that outside the report.

The seed's gate names are not this project's: the stage records the `pr` steps it ran
(`check_skills`, `surface`, ...). SEED_GATES below is the one table from the first to the second —
shown in docs/RELEASE_GATES.md and meant for the release report (`seed_gate_status`,
`table_markdown`). A seed gate passes when every mapped step the stage ran passed; it fails when
one failed, is `skipped` when one was skipped (a gate nobody ran is not evidence), and is
`not_applicable` when the host has none of its steps (the `pr` profile declared them not
applicable). A stage step that no seed gate names is refused: the table must grow with the steps.
A waiver written before the table (naming, sorted, exactly the steps the stage ran) is still
accepted; it is checked against the same table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from skill_eval.core import formats, schemas, strict
from skill_eval.core.errors import CheckFailed, InputError
from skill_eval.core.vocab import ReleaseOutcome

SeedGateStatus = Literal["pass", "fail", "skipped", "not_applicable"]

# seed gate -> (what the task-tool seed asks for, {this project's pr step: what it checks towards it})
SEED_GATES: Final[dict[str, tuple[str, dict[str, str]]]] = {
    "command": ("real commands and flags", {
        "check_skills": "every subject command and flag a skill names in a code block exists in the committed CLI reference",
        "surface": "that committed reference still matches the installed subject CLI",
    }),
    "cross-platform": ("provider independence: any agent, any machine", {
        "check_skills": "Agent Skills spec frontmatter, the part every client reads (client-only keys are flagged)",
        "check_triggers": "descriptions alone, the activation signal every agent uses, separate the labelled prompts, "
                          "negatives included (L1s)",
        "local_paths": "no sandbox or home path in a committed bundle: the evidence re-grades on any machine",
    }),
    "lifecycle": ("canonical order: content frozen, then recorded, then re-graded", {
        "freshness": "every committed bundle was recorded against the current content digests (the pack)",
        "evidence": "the expected set, derived from the selection rule, is complete and passes its gates (pass^k on 2 and 6)",
    }),
    "machine-api": ("common-JSON use when consuming results", {
        "surface": "the subject's machine-readable CLI reference (commands, flags) is current",
        "golden": "the graders read the typed claim envelope and the subject's JSON reports, never prose: golden bad "
                  "bundles (no envelope, two envelopes, a verdict outside the vocabulary, a claim the report "
                  "contradicts) fail exactly as expected (L4)",
    }),
    "parity": ("byte parity across embedded and committed copies, nested resources packaged", {
        "check_skills": "published copies are byte-identical to what skills-src/ generates; every link and "
                        "references/ path resolves inside the published tree",
        "pack": "the committed evaluation pack equals the one recomputed from the current bytes",
    }),
    "security": ("no leaked local state, no unverifiable or unsafe evidence", {
        "evidence": "every bundle's seal verifies (a forged bundle fails; unsigned ones under signatures = require)",
        "local_paths": "no machine-local path or the recording user's home in a committed bundle",
        "golden": "the zero-tolerance graders (dimensions 2 and 6) catch their golden false-green bundles",
        "security_rules": "no error-level finding of check-skills' security rules (checks/security_rules.yaml: "
                          "instruction overrides, hidden Unicode, encoded payloads run, credential or environment "
                          "reads, secrets sent to a URL) in any skill file",
    }),
}
SEED_GATE_NAMES: Final[tuple[str, ...]] = tuple(sorted(SEED_GATES))


def seed_gate_status(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The seed's six gates, sorted, from the stage's recorded steps ({"gate", "status"} each):
    [{"gate", "status", "steps": {step: status}}]. Raises CheckFailed for a step no seed gate maps."""
    recorded = {c["gate"]: c["status"] for c in checks}
    mapped = {step for _, steps in SEED_GATES.values() for step in steps}
    unmapped = sorted(set(recorded) - mapped)
    if unmapped:
        raise CheckFailed(f"credential-free gate(s) {unmapped} have no seed gate in waiver.SEED_GATES",
                          fix="add each step to the seed gate whose contract it checks (docs/RELEASE_GATES.md)")
    out = []
    for seed in SEED_GATE_NAMES:
        steps = {s: recorded[s] for s in sorted(SEED_GATES[seed][1]) if s in recorded}
        status: SeedGateStatus = ("not_applicable" if not steps else "fail" if "fail" in steps.values()
                                  else "pass" if set(steps.values()) == {"pass"} else "skipped")
        out.append({"gate": seed, "status": status, "steps": steps})
    return out


def table_markdown(statuses: list[dict[str, Any]] | None = None) -> str:
    """The seed-gate table as Markdown; with `seed_gate_status` output, each row's status and steps."""
    by = {s["gate"]: s for s in statuses or []}
    head = "| seed gate | the seed asks | this project's checks (`pr` steps) |" + (" status |" if statuses else "")
    rule = "|---|---|---|" + ("---|" if statuses else "")
    rows = [head, rule]
    for seed in SEED_GATE_NAMES:
        asks, steps = SEED_GATES[seed]
        cell = "; ".join(f"`{step}`: {what}" for step, what in sorted(steps.items()))
        row = f"| `{seed}` | {asks} | {cell} |"
        if statuses:
            st = by.get(seed, {"status": "not_applicable", "steps": {}})
            ran = ", ".join(f"{k} {v}" for k, v in st["steps"].items()) or "none of its steps apply to this host"
            row += f" {st['status']} ({ran}) |"
        rows.append(row)
    return "\n".join(rows) + "\n"


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
    seeds = seed_gate_status(checks)
    not_passed = [f"{s['gate']} ({s['status']})" for s in seeds if s["status"] not in ("pass", "not_applicable")]
    if not_passed or not any(s["status"] == "pass" for s in seeds):
        raise CheckFailed(f"every credential-free seed gate must have passed to waive (not passed: {not_passed})",
                          source=path, field="compensating_evidence", fix="run the deterministic checks and fix them")
    named = waiver["compensating_evidence"]
    if named != list(SEED_GATE_NAMES) and named != gates:  # the seed's names; or, from older waivers, the steps
        raise CheckFailed(f"compensating_evidence must name each credential-free gate as the seed lists them, sorted: "
                          f"{list(SEED_GATE_NAMES)} (docs/RELEASE_GATES.md maps them to this project's checks)",
                          source=path, field="compensating_evidence", fix=f"use {list(SEED_GATE_NAMES)}")
