"""The release's lift gate (issue 28 item 2) and the released arm of a host in a subfolder (item 3).

Lift gate: per skill, skill-agent over baseline and over the released arm; the CI's lower bound must
be >= -[release] lift_margin; INDETERMINATE (too few paired scenarios) is incomplete, never a pass.
The host is release_helpers' mini host (two cases per skill, min_paired_scenarios 2).
"""

from __future__ import annotations

import shutil

import pytest
import yaml
from conftest import git, git_commit_all
from release_helpers import SKILL, commit_evidence, record_run, setup_host

from skill_eval.content import config
from skill_eval.reporting import lift
from skill_eval.reporting.release import flow, lift_gate
from skill_eval.reporting.release import snapshot as snap

GATES = [{"gate": g, "status": "pass"} for g in ("check_skills", "evidence", "pack")]
CASES = tuple(SKILL)


@pytest.fixture
def cfg(mini_repo):
    return setup_host(mini_repo)


def _record(cfg, *, candidate=None, baseline=None, **over):
    for case in CASES:
        for k in range(cfg.k):
            record_run(cfg, case, "skill-agent", k, **{**over, **(candidate or {}).get(case, {})})
            record_run(cfg, case, "baseline", k, **{**over, **(baseline or {}).get(case, {})})


def _stage(cfg, tmp_path):
    commit_evidence(cfg.root)
    return flow.stage(cfg, out_dir=tmp_path / "out", session="s1", source="evidence", released_ref=None, checks=GATES, force=True)


def _resume(cfg, st, answer="candidate-only", waiver=None):
    ws = yaml.safe_load(st.worksheet_path.read_text())
    for row in ws["cases"]:
        row["comparison"] = answer if row["evidence"] == "complete" else "inconclusive"
        row["review"] = "reviewed"
    path = st.worksheet_path.with_name("filled.yaml")
    path.write_text(yaml.safe_dump(ws))
    return flow.resume(cfg, st.stage_path, path, waiver_path=waiver).record


def _set(cfg, text):
    toml = cfg.root / "skill-eval.toml"
    toml.write_text(toml.read_text() + text)
    return config.load(cfg.root)


@pytest.mark.parametrize("ci,margin,want", [((0.0, 0.0), 0.0, "pass"), ((-0.05, 0.3), 0.1, "pass"),
                                            ((-0.2, 0.3), 0.1, "fail"), ((-0.01, 0.0), 0.0, "fail")])
def test_gate_reads_the_ci_lower_bound_against_the_margin(ci, margin, want):
    result = lift.Lift("skill-agent", "baseline", lift.NO_LIFT, 6, effect=sum(ci) / 2, ci=ci)
    assert lift_gate.gate(result, margin)[0] == want


@pytest.mark.parametrize("verdict", [lift.INDETERMINATE, lift.ERROR])
def test_no_number_is_incomplete_never_a_pass(verdict):
    result = lift.Lift("skill-agent", "baseline", verdict, 1, reason="1 paired scenario(s) < min_paired_scenarios 6")
    status, why = lift_gate.gate(result, 1.0)  # even the widest margin cannot turn no number into a pass
    assert status == "incomplete" and "never a pass" in why


def test_equal_arms_pass_with_the_figures_in_the_report(cfg, tmp_path):
    _record(cfg)
    r = _resume(cfg, _stage(cfg, tmp_path))
    assert r["outcome"] == "pass", r["reasons"]
    figures = r["lift"]["skills"]["alpha"]["baseline"]
    assert (figures["gate"], figures["n_paired"], figures["effect"], figures["ci"]) == ("pass", 2, 0.0, [0.0, 0.0])
    assert r["lift"]["skills"]["alpha"]["released"]["gate"] == "not_applicable" and r["lift"]["margin"] == 0.0


def test_negative_lift_fails_even_when_every_case_is_only_incomplete(cfg, tmp_path):
    """The candidate hits its budget (the agent's failure, a scored 0) where the baseline passes: its cases are
    incomplete, but the lift over baseline is negative, so the release fails (and no waiver can cover it)."""
    _record(cfg, candidate={c: {"status": "incomplete"} for c in CASES if SKILL[c] == "alpha"})
    st = _stage(cfg, tmp_path)
    gate = st.record["snapshot"]["lift"]["skills"]["alpha"]["baseline"]
    assert gate["gate"] == "fail" and gate["effect"] == -1.0 and gate["ci"][0] == -1.0
    assert {st.record["snapshot"]["cases"][c]["state"] for c in CASES if SKILL[c] == "alpha"} == {"incomplete"}
    r = _resume(cfg, st)
    assert r["outcome"] == "fail" and r["reasons"][0].startswith("lift of skill-agent over baseline for skill alpha")


def test_a_margin_in_config_accepts_a_small_loss(cfg, tmp_path):
    _record(cfg, baseline={"alpha-break": {"verdict": "OK"}})  # baseline worse on one scenario: lift +0.5, fine
    assert _resume(cfg, _stage(cfg, tmp_path))["outcome"] == "pass"
    shutil.rmtree(cfg.evals_dir / "evidence")
    _record(cfg, candidate={"alpha-break": {"status": "incomplete"}})
    st = _stage(cfg, tmp_path)
    assert st.record["snapshot"]["lift"]["skills"]["alpha"]["baseline"]["gate"] == "fail"
    cfg2 = _set(cfg, "\n[release]\nlift_margin = 1.0\n")
    st2 = _stage(cfg2, tmp_path)
    assert st2.record["snapshot"]["lift"]["margin"] == 1.0
    assert st2.record["snapshot"]["lift"]["skills"]["alpha"]["baseline"]["gate"] == "pass"


def test_indeterminate_lift_is_incomplete_and_names_the_skills_cases(cfg, tmp_path):
    _record(cfg)
    cfg3 = _set(cfg, "\n")
    toml = cfg3.root / "skill-eval.toml"
    toml.write_text(toml.read_text().replace("min_paired_scenarios = 2", "min_paired_scenarios = 3"))
    cfg3 = config.load(cfg3.root)
    st = _stage(cfg3, tmp_path)
    assert all(c["state"] == "complete" for c in st.record["snapshot"]["cases"].values())
    r = _resume(cfg3, st)
    assert r["outcome"] == "incomplete"
    assert any("INDETERMINATE" in x for x in r["reasons"]) and any("the lift of skill alpha is incomplete" in x for x in r["reasons"])


def test_changing_the_margin_after_staging_is_refused(cfg, tmp_path):
    _record(cfg)
    st = _stage(cfg, tmp_path)
    cfg2 = _set(cfg, "\n[release]\nlift_margin = 0.5\n")
    with pytest.raises(Exception, match="lift.margin changed"):
        flow.recheck(cfg2, st.stage_path)


@pytest.mark.parametrize("source", ["scripted", "local-endpoint"])
def test_scripted_or_local_endpoint_evidence_never_passes(cfg, tmp_path, source):
    """Default [evals] release_sources counts remote providers only: such runs never vote, never complete."""
    _record(cfg, scripted=source == "scripted", model_source=source)
    st = _stage(cfg, tmp_path)
    assert {c["state"] for c in st.record["snapshot"]["cases"].values()} == {"incomplete"}
    assert {r["gate"] for s in st.record["snapshot"]["lift"]["skills"].values() for r in s.values()} <= {"incomplete",
                                                                                                         "not_applicable"}
    assert _resume(cfg, st)["outcome"] == "incomplete"


def test_a_forged_baseline_run_fails_the_case_instead_of_flattering_the_lift(cfg, tmp_path):
    _record(cfg)
    bundle = cfg.evals_dir / "evidence/alpha/baseline/run1/alpha-break/0"
    (bundle / "final.md").write_text((bundle / "final.md").read_text() + "\nedited after sealing\n")
    st = _stage(cfg, tmp_path)
    case = st.record["snapshot"]["cases"]["alpha-break"]
    assert case["state"] == "fail" and case["reasons"][0].startswith("baseline: ") and "forged" in case["reasons"][0]


# ----------------------------------------------------------------------------- item 3: a host in a subfolder
def test_released_skill_of_a_host_in_a_subfolder_is_read_by_repository_path(mini_repo, tmp_path):
    top = setup_host(mini_repo)
    at_root = snap.released_skills(top, "v1", ["alpha", "beta"])
    outer = tmp_path / "outer"
    shutil.copytree(mini_repo, outer / "hosts" / "mini", ignore=shutil.ignore_patterns(".git"))
    (outer / "README.md").write_text("outer repository\n")
    git(outer, "init", "-q")
    git_commit_all(outer, "a host in a subfolder")
    git(outer, "tag", "v1")
    sub = config.load(outer / "hosts" / "mini")
    inside = snap.released_skills(sub, "v1", ["alpha", "beta"])
    assert inside["skills"] == at_root["skills"] and set(inside["skills"]) == {"alpha", "beta"}
    from skill_eval.content.released import released_tree

    files = released_tree(sub, "v1", "alpha")
    assert "SKILL.md" in files and files["SKILL.md"] == (outer / "hosts/mini/.agents/skills/alpha/SKILL.md").read_bytes()


def test_a_lone_judges_verdict_leaves_the_case_incomplete(cfg, tmp_path):
    """Issue 28 item 4: a release is judged by a panel; an entry one judge wrote (judgments v1, or a
    single `--model`) is not a pass, whatever it says."""
    import json

    from release_helpers import LONE_JUDGE, signing_key

    from skill_eval.grading import judgments

    _record(cfg)
    evidence = cfg.evals_dir / "evidence"
    lone = [b for b in sorted(evidence.rglob("judgments.json")) if "/alpha/skill-agent/" in b.as_posix()]
    assert lone
    for path in lone:
        path.write_text(json.dumps({"schema_version": 1, "judgments": [
            dict(j, rubric_version=json.loads(path.read_text())["judgments"][0]["rubric_version"]) for j in LONE_JUDGE["judgments"]]}))
        judgments.sign(path.parent, signing_key()[0])  # re-signed, as `skill-eval judge` does on every append
    st = _stage(cfg, tmp_path)
    cases = st.record["snapshot"]["cases"]
    alpha = [c for c in cases.values() if c["skill"] == "alpha"]
    assert alpha and all(c["state"] == "incomplete" for c in alpha)
    assert any("judged by one judge, not a panel" in r for c in alpha for r in c["reasons"]), alpha[0]["reasons"]
    assert all(c["state"] == "complete" for c in cases.values() if c["skill"] == "beta")
