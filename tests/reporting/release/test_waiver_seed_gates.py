"""Issue 28 item 7: the waiver's deterministic-check names are the task-tool seed's six, mapped to this
project's `pr` steps in one table (reporting/release/waiver.py SEED_GATES), shown in docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from skill_eval.commands import pr
from skill_eval.core.errors import CheckFailed
from skill_eval.reporting.release import waiver

REPO = Path(__file__).resolve().parents[3]
SEED = ["command", "cross-platform", "lifecycle", "machine-api", "parity", "security"]  # the seed, verbatim and sorted
STEPS = [m for _, m, _ in pr.STEPS]


def checks(**status: str) -> list[dict[str, str]]:
    return [{"gate": step, "status": status.get(step, "pass")} for step in STEPS]


def wv(evidence: list[str]) -> dict:
    return {"schema_version": 1, "approver": "Release Maintainer <rm@example.org>", "reason": "no credential",
            "unavailable_capability": "a real model", "skills": ["s"], "cases": ["c1"], "residual_risk": "r",
            "compensating_evidence": evidence, "follow_up": "#1"}


def apply(evidence: list[str], gates: list[dict[str, str]]) -> None:
    waiver.apply(Path("waiver.yaml"), wv(evidence), "incomplete", [], {"c1": "s"}, gates)


def test_the_seed_names_are_the_table_keys():
    assert list(waiver.SEED_GATE_NAMES) == SEED == sorted(waiver.SEED_GATES)


def test_every_pr_step_is_mapped_and_every_mapping_is_a_pr_step():
    mapped = {step for _, steps in waiver.SEED_GATES.values() for step in steps}
    assert mapped == set(STEPS) | {pr.SECURITY_GATE}  # plus the gate pr derives from check-skills' security findings


def test_seed_gate_status_reads_the_stage_checks():
    assert {s["gate"]: s["status"] for s in waiver.seed_gate_status(checks())} == dict.fromkeys(SEED, "pass")
    st = {s["gate"]: s for s in waiver.seed_gate_status(checks(pack="fail", golden="skipped"))}
    assert st["parity"]["status"] == "fail" and st["parity"]["steps"] == {"check_skills": "pass", "pack": "fail"}
    assert st["machine-api"]["status"] == "skipped" and st["security"]["status"] == "skipped"
    assert st["command"]["status"] == "pass"
    # a host without a subject and a golden corpus (the pr profile omits those steps): machine-api has no step
    host = [c for c in checks() if c["gate"] not in ("surface", "golden")]
    st = {s["gate"]: s for s in waiver.seed_gate_status(host)}
    assert st["machine-api"] == {"gate": "machine-api", "status": "not_applicable", "steps": {}}
    assert st["command"]["steps"] == {"check_skills": "pass"}


def test_a_step_no_seed_gate_names_is_refused():
    with pytest.raises(CheckFailed, match=r"\['new_step'\] have no seed gate"):
        waiver.seed_gate_status([*checks(), {"gate": "new_step", "status": "pass"}])


def test_waiver_names_the_seed_gates_sorted():
    apply(SEED, checks())  # accepted
    with pytest.raises(CheckFailed, match="as the seed lists them, sorted"):
        apply(SEED[::-1], checks())
    with pytest.raises(CheckFailed, match="as the seed lists them"):
        apply(SEED[:-1], checks())


def test_an_older_waiver_naming_the_steps_is_still_checked_against_the_table():
    apply(sorted(STEPS), checks())
    with pytest.raises(CheckFailed, match="no seed gate"):
        apply(sorted([*STEPS, "new_step"]), [*checks(), {"gate": "new_step", "status": "pass"}])


@pytest.mark.parametrize("bad", ["fail", "skipped"])
def test_a_failed_or_skipped_step_blocks_the_waiver_whatever_it_names(bad):
    with pytest.raises(CheckFailed, match="must have passed"):
        apply(SEED, checks(local_paths=bad))


def test_the_table_is_in_the_docs_and_shows_statuses_for_a_report():
    text = waiver.table_markdown()
    for seed in SEED:
        assert f"| `{seed}` |" in text
    for step in STEPS:
        assert f"`{step}`:" in text
    assert text in (REPO / "docs/RELEASE_GATES.md").read_text()  # docs show the code's table, byte for byte
    shown = waiver.table_markdown(waiver.seed_gate_status(checks(pack="fail")))
    assert "| fail (check_skills pass, pack fail) |" in shown


def test_the_release_report_shows_the_seed_gates_with_their_status():
    from skill_eval.reporting.release import report

    shown = report._seed_statuses(checks(pack="fail"))
    assert shown is not None and {s["gate"]: s["status"] for s in shown}["parity"] == "fail"
    assert report._seed_statuses([{"gate": "a-step-no-seed-gate-maps", "status": "pass"}]) is None  # table alone, no status
