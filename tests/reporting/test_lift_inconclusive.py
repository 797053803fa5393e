"""Issue 28 item 5: a lift or an A/A over runs that mostly never finished is INCONCLUSIVE, in every output.

Incomplete = a scored behavioural run cut by its budget (`budget_stop`), with no final answer, or
a verdict scenario left with neither a subject call nor a claim (runs.incomplete_reason). Above
`[stats] max_incomplete_rate` (default 25 %) of an arm's scored runs, the comparison carries the
word and the reason, never a number: lift JSON and text, scorecard JSON/Markdown/HTML, calibration.
"""

from __future__ import annotations

import argparse

import pytest

from skill_eval.commands import lift as lift_cmd
from skill_eval.content import config
from skill_eval.core import schemas
from skill_eval.reporting import lift
from skill_eval.reporting import scorecard as sc
from skill_eval.reporting.lift import Run, Settings
from skill_eval.reporting.scorecard import build as build_mod
from skill_eval.reporting.scorecard import html as html_mod
from skill_eval.reporting.scorecard import markdown as md_mod
from skill_eval.reporting.scorecard.runs import MAIN, RunRecord, incomplete_reason

SETTINGS = Settings(bootstrap_samples=500, min_paired_scenarios=6, seed=7, confidence=0.95)


def arm(n: int, passed: bool, *, hollow: int = 0) -> list[Run]:
    """n scenarios x 4 runs; the first `hollow` runs (in order) budget-stopped (scored failures)."""
    out = [Run(f"s{i}", passed) for i in range(n) for _ in range(4)]
    for j in range(hollow):
        out[j] = Run(out[j].scenario, False, incomplete="budget_stop")
    return out


# -- the statistics -------------------------------------------------------------------------------

def test_settings_default_and_config_agree():
    assert Settings().max_incomplete_rate == 0.25 == config.Stats().max_incomplete_rate


def test_all_budget_stopped_arms_are_inconclusive_never_a_number():
    t = [Run(f"s{i}", False, incomplete="budget_stop") for i in range(8) for _ in range(3)]
    c = [Run(f"s{i}", False, incomplete="budget_stop") for i in range(8) for _ in range(3)]
    r = lift.lift("skill-agent", "baseline", t, c, SETTINGS)
    assert r.verdict == lift.INCONCLUSIVE and not r.has_number
    assert "100% of skill-agent runs are incomplete (24 budget_stop) > max_incomplete_rate 25%" in r.reason
    j = r.to_json()
    assert j["effect"] is None and j["ci"] is None and j["sign_test"] is None


def test_a_hollow_control_alone_makes_a_clear_lift_inconclusive():
    t = arm(8, True)
    c = arm(8, False, hollow=16)  # 50 % of the control never finished
    r = lift.lift("skill-agent", "baseline", t, c, SETTINGS)
    assert r.verdict == lift.INCONCLUSIVE and "of baseline runs are incomplete" in r.reason
    # without the guard the same data would be called (significant, no A/A: UNCALIBRATED)
    loose = lift.lift("skill-agent", "baseline", t, c, Settings(bootstrap_samples=500, seed=7, max_incomplete_rate=1.0))
    assert loose.verdict == lift.UNCALIBRATED


def test_exactly_the_limit_is_still_scored_one_more_is_not():
    t, c = arm(8, True, hollow=8), arm(8, False)  # 8 of 32 = 25 %
    assert lift.lift("skill-agent", "baseline", t, c, SETTINGS).verdict != lift.INCONCLUSIVE
    t = arm(8, True, hollow=9)
    assert lift.lift("skill-agent", "baseline", t, c, SETTINGS).verdict == lift.INCONCLUSIVE


def test_infra_errors_are_not_counted_as_incomplete():
    runs = [Run("s", None, infra_error=True), Run("s", None, infra_error=True), Run("s", True), Run("s", False, incomplete="x")]
    assert lift.incomplete_rate(runs) == 0.5


def test_hollow_aa_is_inconclusive_and_gives_no_floor():
    a = [Run(f"s{i}", False, incomplete="budget_stop") for i in range(6) for _ in range(5)]
    b = [Run(f"s{i}", False, incomplete="budget_stop") for i in range(6) for _ in range(5)]
    cal = lift.calibrate("baseline", a, b, SETTINGS)
    assert cal.status == lift.INCONCLUSIVE and cal.noise_floor is None and cal.false_difference_rate is None
    assert cal.reason.startswith("A/A 100% of baseline (A) runs are incomplete")
    # the old answer on the same data: a 0 % false-difference rate and a 0 floor — the lie of issue 28
    old = lift.calibrate("baseline", a, b, Settings(max_incomplete_rate=1.0))
    assert old.status == "ok" and old.noise_floor == 0 and old.false_difference_rate == 0


# -- what makes a run incomplete --------------------------------------------------------------------

@pytest.mark.parametrize(("outcome", "final_empty", "calls", "needs", "claimed", "want"), [
    ("budget_stop", False, 3, True, True, "budget_stop"),
    ("completed", True, 1, True, False, "no final answer"),
    ("agent_error", True, 0, False, False, "no final answer"),
    ("completed", False, 0, True, False, "no subject call and no claim"),
    ("completed", False, 0, True, True, ""),  # claimed without evidence: a finished, wrong run (dimension 3 fails it)
    ("completed", False, 0, False, False, ""),  # no verdict question: no subject call needed
    ("completed", False, 2, True, True, ""),
    ("infra_error", True, 0, True, False, ""),  # not scored: ERROR's business
])
def test_incomplete_reason(outcome, final_empty, calls, needs, claimed, want):
    assert incomplete_reason("behavioral", outcome, final_empty=final_empty, subject_calls=calls, needs_subject=needs,
                             claimed=claimed) == want


def test_trigger_runs_are_never_incomplete():
    assert incomplete_reason("trigger", "budget_stop", final_empty=True, subject_calls=0, needs_subject=False,
                             claimed=False) == ""


# -- every output ---------------------------------------------------------------------------------

def rec(arm_name: str, item: str, passed: bool, incomplete: str = "") -> RunRecord:
    return RunRecord(path=f"{arm_name}/{item}", kind="behavioral", skill="s", arm=arm_name, replicate=MAIN,
                     agent="claude-code", model="m", scripted=False, item=item, k=0,
                     outcome="budget_stop" if incomplete == "budget_stop" else "completed", passed=passed,
                     checks={"1": "pass" if passed else "fail"}, incomplete=incomplete)


@pytest.fixture
def card():
    records = [rec("skill-agent", f"x{i}", True) for i in range(8) for _ in range(2)]
    records += [rec("baseline", f"x{i}", False, "budget_stop") for i in range(8) for _ in range(2)]
    audit = {"ngram": 8, "flagged": [], "holdout": []}
    card = build_mod.build(records, SETTINGS, k=2, cost_regression=0.1, audit=audit)
    schemas.validate(card, "scorecard", "scorecard.json")
    return card


def test_scorecard_json_markdown_and_html_say_inconclusive_with_the_reason(card):
    (entry,) = [e for e in card["cells"][0]["lift"] if e["split"] == "main"]
    assert entry["verdict"] == "INCONCLUSIVE" and entry["effect"] is None
    assert "100% of baseline runs are incomplete (16 budget_stop)" in entry["reason"]
    base = card["cells"][0]["arms"]["baseline"]["incomplete"]
    assert base == {"runs": 16, "rate": 1.0, "reasons": {"budget_stop": 16}}
    assert card["settings"]["max_incomplete_rate"] == 0.25
    md = md_mod.render(card)
    assert "**INCONCLUSIVE**" in md and "100% of baseline runs are incomplete" in md
    assert "1 INCONCLUSIVE" in md_mod.summary_line(card)
    page = html_mod.render(card)
    assert "INCONCLUSIVE" in page and "100% of baseline runs are incomplete" in page


def test_lift_command_text_and_json_say_inconclusive(card, monkeypatch, capsys):
    monkeypatch.setattr(sc, "compute", lambda cfg, evidence=None: sc.Result(card, []))
    monkeypatch.setattr(config, "load", lambda root: None)
    for as_json in (False, True):
        ns = argparse.Namespace(root=None, json=as_json, evidence=None, skill=None, require_lift=False, report_only=False)
        lift_cmd.run(ns)
        out = capsys.readouterr().out
        assert "INCONCLUSIVE" in out and "runs are incomplete" in out
