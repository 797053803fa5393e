"""Whole-run facts the graders read (issue 34 item 7, grading/graders/recorded.py): a recorded `run_error`
makes a bundle incomplete in every kind of bundle — trigger bundles too — bar the runner's own stop of a
trigger run after the activation it waited for; an activation of a skill the run did not install fails."""

from __future__ import annotations

import json

import pytest
from test_graders_helpers import NEW, OLD, activated, bundle, claim, compare, grade, make_repo, meta, pair_inputs, sha

from skill_eval.grading.golden import DEFAULT_USAGE

STOP = "incomplete_stream: no result event (the agent was killed, timed out or crashed)"


@pytest.fixture
def cfg(tmp_path):
    return make_repo(tmp_path)


def trigger(cfg, tmp_path, events, *, stopped=False, name="t", prompt="pos", stop_reason=None):
    m = meta(kind="trigger", prompt_id=prompt)
    m["extra"] = {"installed_skills": ["abi-compat-review", "abi-release-matrix"], "stopped_on_activation": stopped}
    usage = {**DEFAULT_USAGE, "stop_reason": stop_reason or ("activation_observed" if stopped else "end_turn")}
    path = bundle(cfg, tmp_path, "", None, final="", events=events, meta=m, usage=usage, name=name)
    return grade(cfg, path)


def test_a_run_error_in_a_complete_trigger_bundle_is_never_a_pass(cfg, tmp_path):
    assert trigger(cfg, tmp_path, activated()).failures() == []
    g = trigger(cfg, tmp_path, [*activated(), {"type": "run_error", "reason": "max_turns: stopped after 3 turns"}], name="e")
    assert g.failures() == ["bundle"] and not g.passed()
    assert "records run_error (max_turns: stopped after 3 turns) but meta.json status is 'complete'" in \
        g.checks["bundle"].reasons[0]
    neg = trigger(cfg, tmp_path, [{"type": "run_error", "reason": "permission_denied: Bash"}], name="n", prompt="neg")
    assert neg.failures() == ["bundle"]  # a negative prompt that activated nothing still did not finish


def test_the_runners_own_stop_on_activation_is_the_one_excused_run_error(cfg, tmp_path):
    cut = [*activated(), {"type": "run_error", "reason": STOP}]
    assert trigger(cfg, tmp_path, cut, stopped=True).failures() == []
    # the same stream without the runner's sealed stop, or the stop's error before any activation, or another kind
    assert trigger(cfg, tmp_path, cut, name="a").failures() == ["bundle"]
    assert trigger(cfg, tmp_path, cut, stopped=True, stop_reason="end_turn", name="b").failures() == ["bundle"]
    early = [{"type": "run_error", "reason": STOP}, *activated()]
    assert trigger(cfg, tmp_path, early, stopped=True, name="c").failures() == ["bundle"]
    other = [*activated(), {"type": "run_error", "reason": "permission_denied: Bash"}]
    assert trigger(cfg, tmp_path, other, stopped=True, name="d").failures() == ["bundle"]


def test_an_activation_of_a_skill_the_run_did_not_install_fails_the_bundle(cfg, tmp_path):
    m = meta("breaking")
    m["extra"] = {"installed_skills": ["abi-compat-review"]}
    ok = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m)
    assert grade(cfg, ok).failures() == []
    events = [*activated(), {"type": "skill_file_read", "skill": "abi-release-matrix", "path": "SKILL.md"}]
    bad = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m, events=events, name="x")
    g = grade(cfg, bad)
    assert g.failures() == ["bundle"]
    assert "records a read of skill 'abi-release-matrix', which this run did not install" in g.checks["bundle"].reasons[0]


def test_a_control_arm_activation_fails_its_grade_as_well_as_isolation(cfg, tmp_path):
    m = meta("breaking", arm="baseline")
    m["extra"] = {"installed_skills": []}  # what the runner writes for baseline and docs
    clean = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m, events=[])
    assert "bundle" not in grade(cfg, clean).failures()
    forged = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m,
                    events=activated("abi-release-matrix"), name="f")
    assert "bundle" in grade(cfg, forged).failures()


def test_an_unconfident_claim_citing_a_self_contradicting_call_is_not_grounded(cfg, tmp_path):
    """d6_null_verdict_grounded used to drop the cited artifacts' problems for every kind but not_comparable:
    a claim of evidence_too_shallow resting on a call whose report contradicts its exit code passed dimension 6."""
    c = claim(None, confident=False, kind="evidence_too_shallow", unresolved=("no DWARF",))
    ok = bundle(cfg, tmp_path, "shallow", [compare("BREAKING", tiers=("elf",))], c, meta=meta("shallow"))
    assert 6 not in grade(cfg, ok).failures()
    forged = bundle(cfg, tmp_path, "shallow", [compare("BREAKING", tiers=("elf",), exit_code=0)], c,
                    meta=meta("shallow"), name="f")
    g = grade(cfg, forged)
    assert 6 in g.failures() and any("exit 0" in r and "report states BREAKING" in r for r in g.checks["6"].reasons), \
        g.checks["6"].reasons


def test_an_output_argv_never_requested_poisons_the_call_log(cfg, tmp_path):
    path = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"))
    assert grade(cfg, path).failures() == []
    rec = json.loads((path / "calls.jsonl").read_text())
    assert rec["argv"][-2:] == ["-o", "json=r.json"] and rec["outputs"][0]["requested"] == "r.json"
    for argv in (rec["argv"][:-2], [*rec["argv"][:-1], "json=other.json"]):
        (path / "calls.jsonl").write_text(json.dumps({**rec, "argv": argv}) + "\n")
        g = grade(cfg, path)  # calls.jsonl poisons every dimension that reads calls
        assert g.failures() == [1, 2, 3, 6] and any("asks for no such output" in r for r in g.checks["6"].reasons)
    for argv in ([*rec["argv"][:-2], "-ojson=r.json"], [*rec["argv"][:-2], "--output=json=r.json"]):
        (path / "calls.jsonl").write_text(json.dumps({**rec, "argv": argv, "outputs": [
            {**rec["outputs"][0], "option": argv[-1][:2] if argv[-1].startswith("-o") else "--output"}]}) + "\n")
        assert grade(cfg, path).failures() == [], argv


def test_meta_facts_that_contradict_each_other_fail_the_bundle(cfg, tmp_path):
    m = meta("breaking")
    m["outcome"] = "budget_stop"  # while status says complete
    g = grade(cfg, bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m))
    assert any("outcome 'budget_stop' contradicts status 'complete'" in r for r in g.checks["bundle"].reasons)
    t = meta(kind="trigger", prompt_id="pos")
    t["extra"] = {"origin": "harbor"}
    g = grade(cfg, bundle(cfg, tmp_path, "", None, final="", meta=t, name="t"))
    assert g.failures() == ["bundle"] and "imports are behavioural bundles only" in g.checks["bundle"].reasons[0]


def test_a_call_whose_operands_run_the_other_way_than_its_report_is_not_the_pair(cfg, tmp_path):
    """Found by the re-signed mutants: argv's operands exchanged (each input entry following its operand) while the
    report still states old/new passed; the old side's bytes must be read before the new side's."""
    swapped = pair_inputs("new/libdemo.so.1", "old/libdemo.so.1", sha(NEW), sha(OLD))
    call = compare("BREAKING", old="new/libdemo.so.1", new="old/libdemo.so.1", inputs=swapped)
    g = grade(cfg, bundle(cfg, tmp_path, "breaking", [call], claim("BREAKING")))
    assert 6 in g.failures() and any("read the fixture's new side before its old side" in r for r in g.checks["6"].reasons)
    unsided = compare("BREAKING", old="new/libdemo.so.1", new="old/libdemo.so.1", sides=False, inputs=swapped)
    g = grade(cfg, bundle(cfg, tmp_path, "breaking", [unsided], claim("BREAKING"), name="u"))
    assert any("names the fixture's new side before its old side" in r for c in g.checks.values() for r in c.reasons)


def test_a_stream_digest_no_grader_reads_is_still_checked(cfg, tmp_path):
    """Found by the re-signed mutants: a call record's stderr digest that is not the captured stream's passed,
    because no rule read that stream. Every recorded stream digest is checked now."""
    path = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"))
    rec = json.loads((path / "calls.jsonl").read_text())
    rec["stderr"]["sha256"] = "0" * 64
    (path / "calls.jsonl").write_text(json.dumps(rec) + "\n")
    g = grade(cfg, path)
    assert g.failures() == ["bundle"] and "captured/1.err: sha256 does not match the call record" in g.checks["bundle"].reasons[0]
