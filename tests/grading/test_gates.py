"""pass^k for the zero-tolerance dimensions, per-(skill, agent, model) baselines, trigger thresholds."""

from __future__ import annotations

import json

import pytest
from test_graders_helpers import activated, bundle, claim, compare, grade, make_repo, meta

from skill_eval.core.errors import CheckFailed, ConfigError
from skill_eval.grading import baselines, gates


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("repo"))


def run_k(cfg, tmp_path, k, verdict="BREAKING", scenario="breaking", **kw):
    m = meta(scenario, k=k)
    m.update(kw)
    return grade(cfg, bundle(cfg, tmp_path, scenario, [compare("BREAKING")], claim(verdict), meta=m, name=f"{scenario}-{k}-{verdict}"))


def test_pass_k_all_runs_pass(cfg, tmp_path):
    grades = [run_k(cfg, tmp_path, k) for k in range(3)]
    assert gates.pass_k(grades, 3) == []


def test_pass_k_one_failing_run_blocks(cfg, tmp_path):
    grades = [run_k(cfg, tmp_path, 0), run_k(cfg, tmp_path, 1, verdict="COMPATIBLE"), run_k(cfg, tmp_path, 2)]
    problems = gates.pass_k(grades, 3)
    assert problems == ["pass^k: breaking [skill-agent] fails zero-tolerance dimension 6 in run(s) k=[1]"]


def test_pass_k_incomplete_group_fails(cfg, tmp_path):
    grades = [run_k(cfg, tmp_path, 0), run_k(cfg, tmp_path, 2)]
    assert "has runs k=[0, 2]" in gates.pass_k(grades, 3)[0]


def test_pass_k_groups_by_arm(cfg, tmp_path):
    grades = [run_k(cfg, tmp_path, k) for k in range(3)] + [run_k(cfg, tmp_path, 0, arm="baseline", verdict="COMPATIBLE")]
    problems = gates.pass_k(grades, 3)
    assert any("[baseline]" in p and "dimension 6" in p for p in problems)
    assert not any("[skill-agent]" in p for p in problems)


def test_first_failing_run_never_becomes_a_baseline(cfg, tmp_path):
    grades = [run_k(cfg, tmp_path, 0, verdict="COMPATIBLE")]
    problems = gates.pass_k(grades, 1)
    with pytest.raises(CheckFailed, match="zero-tolerance"):
        baselines.update(cfg, grades, problems)


def test_baseline_update_gate_and_regression(cfg, tmp_path):
    good = [run_k(cfg, tmp_path, k) for k in range(3)]
    [path] = baselines.update(cfg, good, gates.pass_k(good, 3), now="2026-11-30T00:00:00Z")
    rec = json.loads(path.read_text())
    assert rec["dimensions"]["1"] == {"rate": 1.0, "passed": 3, "total": 3} and "2" not in rec["dimensions"]
    assert baselines.gate(cfg, good) == []
    # Dimension 1 regresses: wrong skill activated in one run.
    m = meta("breaking", k=0)
    worse_run = grade(cfg, bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m,
                                  events=activated("abi-release-matrix"), name="worse"))
    worse = [worse_run] + good[1:]
    assert "dimension 1 pass rate 2/3 is below the baseline 1.00" in baselines.gate(cfg, worse)[0]
    with pytest.raises(CheckFailed, match="would go down"):
        baselines.update(cfg, worse, [])
    with pytest.raises(ConfigError, match="--reason"):
        baselines.update(cfg, worse, [], allow_regression=True)
    baselines.update(cfg, worse, [], allow_regression=True, reason="model upgrade changes activation wording")
    rec = json.loads(path.read_text())
    assert rec["dimensions"]["1"]["passed"] == 2 and rec["history"] and rec["reason"].startswith("model upgrade")
    path.unlink()


def test_missing_baseline_fails_the_gate(cfg, tmp_path):
    grades = [run_k(cfg, tmp_path, 0)]
    assert "no baseline" in baselines.gate(cfg, grades)[0]


def test_model_change_is_a_new_baseline_key(cfg, tmp_path):
    a = run_k(cfg, tmp_path, 0)
    b = run_k(cfg, tmp_path, 0, model="scripted:other")
    assert baselines.triple_of(a) != baselines.triple_of(b)


def test_trigger_gate(cfg, tmp_path):
    def trig(pid, events, name):
        return grade(cfg, bundle(cfg, tmp_path, "", None, final="x\n", events=events,
                                 meta=meta(kind="trigger", prompt_id=pid), name=name))

    expected = {"pos": "abi-compat-review", "neg": None}
    ok = [trig("pos", activated(), "p"), trig("neg", [], "n")]
    assert gates.trigger_gate(cfg, ok, expected) == []
    bad = [trig("pos", [], "p2"), trig("neg", activated(), "n2")]
    s = gates.trigger_stats(bad, expected)
    assert (s.recall, s.negative_accuracy) == (0.0, 0.0)
    assert len(gates.trigger_gate(cfg, bad, expected)) == 3


def _reference_rates(grades, dims, arm="skill-agent"):
    """baselines.rates as it was written before status_of (a Check built per question), for comparison."""
    from collections import defaultdict

    out = defaultdict(lambda: {d: [0, 0, 0] for d in dims})
    for g in grades:
        t = baselines.triple_of(g)
        if t is None or g.meta.get("arm") != arm:
            continue
        for d in dims:
            c = g.checks.get(str(d))
            if c is None or c.status == "not_applicable":
                continue
            out[t][d][2] += 1
            if c.status == "not_judged":
                continue
            out[t][d][1] += 1
            out[t][d][0] += c.status == "pass"
    return {t: {d: (v[0], v[1]) for d, v in ds.items() if v[2]} for t, ds in out.items()}


def test_rates_and_pass_k_answer_as_before_for_full_and_slim_grades():
    """rates / pass_k over this repository's evidence, full Grades and SlimGrades, and grades lacking
    every asked dimension (their triple stays out of the answer) or with no skill: the reference's answers."""
    from pathlib import Path

    from skill_eval.content import config
    from skill_eval.grading import evidence, regrade
    from skill_eval.grading.graders import Check, Grade

    root = Path(__file__).resolve().parents[2]
    grades = evidence.check(config.load(root)).grades
    assert len(grades) > 100
    slim = [regrade.SlimGrade(g) for g in grades]
    odd = [Grade("x", "behavioral", "i", {"arm": "skill-agent", "skill": "s", "agent": "a", "model": "m", "k": 0},
                 {"9": Check("9", "pass", [])}),
           Grade("y", "behavioral", "i", {"arm": "skill-agent", "skill": "", "agent": "a", "model": "m", "k": 0},
                 {"1": Check("1", "fail", [])})]
    for gs in (grades, slim, grades + odd, odd):
        for dims in (baselines.MERGE_DIMS, baselines.MERGE_DIMS + baselines.RELEASE_DIMS, (7,)):
            assert baselines.rates(gs, dims) == _reference_rates(gs, dims)
    behavioural = [g for g in grades if g.kind == "behavioral"]
    assert gates.pass_k(behavioural, 5) == gates.pass_k([regrade.SlimGrade(g) for g in behavioural], 5)
