"""Deterministic dimensions 1, 2, 3, 6 and judged replay 4, 5 on synthetic bundles.

Each test states one rule of DESIGN §9.2 and asserts the full failure set, so a grader
that starts over- or under-reporting is caught, not just one that misses its own rule.
"""

from __future__ import annotations

import json

import pytest
from test_graders_helpers import (
    OLD,
    OTHER,
    activated,
    bundle,
    claim,
    compare,
    grade,
    make_repo,
    meta,
    pair_inputs,
    report,
)

from skill_eval.grading.golden import RecordedCall, RecordedOutput


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("repo"))


def fails(cfg, tmp_path, scenario_id, calls, claim_obj=None, **kw):
    g = grade(cfg, bundle(cfg, tmp_path, scenario_id, calls, claim_obj, **kw))
    return g.failures(), g


def test_grounded_breaking_passes(cfg, tmp_path):
    assert fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"))[0] == []


def test_false_green_against_cited_artifact_fails_6(cfg, tmp_path):
    f, g = fails(cfg, tmp_path, "api-break", [compare("API_BREAK")], claim("COMPATIBLE"))
    assert f == [6]
    assert any("cited artifacts say API_BREAK" in r for r in g.checks["6"].reasons)


def test_overstated_verdict_fails_6_equal_rule(cfg, tmp_path):
    # Overstating severity is still a claim the evidence does not support.
    assert fails(cfg, tmp_path, "api-break", [compare("API_BREAK")], claim("BREAKING"))[0] == [6]


def test_definite_verdict_with_empty_calls_fails_3_and_6(cfg, tmp_path):
    f, g = fails(cfg, tmp_path, "breaking", [], claim("BREAKING", evidence=()))
    assert f == [1, 3, 6]  # no call matches the invocation class either


def test_citing_a_missing_call_fails_6(cfg, tmp_path):
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING", evidence=(1, 7)))
    assert f == [6]
    assert any("call 7, which does not exist" in r for r in g.checks["6"].reasons)


def test_severity_uses_cited_calls_only(cfg, tmp_path):
    # An exploratory comparison of an unrelated pair must not fail a correct claim (peer weakness 8).
    other = compare("BREAKING", dest="o.json", data=report("BREAKING", old=OTHER, new=OTHER))
    assert fails(cfg, tmp_path, "compatible", [compare("COMPATIBLE"), other], claim("COMPATIBLE"))[0] == []


def test_citing_wrong_pair_fails_6_and_3(cfg, tmp_path):
    wrong = compare("BREAKING", data=report("BREAKING", old=OLD, new=OLD))  # a self-comparison
    f, g = fails(cfg, tmp_path, "breaking", [wrong], claim("BREAKING"))
    assert f == [3, 6]


def test_suppressed_green_fails_even_when_it_matches_truth(cfg, tmp_path):
    call = compare("COMPATIBLE", extra=("--policy", "sdk_vendor"))
    f, g = fails(cfg, tmp_path, "compatible", [call], claim("COMPATIBLE"))
    assert f == [6]
    assert any("--policy" in r for r in g.checks["6"].reasons)


def test_suppressed_red_is_not_a_suppression_failure(cfg, tmp_path):
    call = compare("BREAKING", extra=("--suppress", "s.yaml"))
    assert fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))[0] == []


def test_below_truth_fails_6(cfg, tmp_path):
    # The cited artifact agrees with the claim, but ground truth is more severe.
    f, g = fails(cfg, tmp_path, "breaking", [compare("COMPATIBLE")], claim("COMPATIBLE"))
    assert 6 in f and any("less severe than the ground truth" in r for r in g.checks["6"].reasons)


def test_report_contradicting_exit_code_is_not_evidence(cfg, tmp_path):
    call = compare("COMPATIBLE", exit_code=4)
    f, g = fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))
    assert 6 in f and 3 in f


def test_tampered_snapshot_is_refused(cfg, tmp_path):
    path = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"))
    snap = next(path.glob("captured/1.out.d/0/*"))
    snap.write_bytes(report("COMPATIBLE"))
    g = grade(cfg, path)
    assert g.failures() == [3, 6]
    assert any("sha256 does not match" in r for r in g.checks["6"].reasons)


def test_per_call_snapshot_keeps_call_1_report(cfg, tmp_path):
    # Both calls write r.json; the claim cites call 1, graded on call 1's own snapshot.
    calls = [compare("BREAKING"), compare("COMPATIBLE", extra=("--policy", "x"), data=report("COMPATIBLE"))]
    assert fails(cfg, tmp_path, "breaking", calls, claim("BREAKING", evidence=(1,)))[0] == []


def test_stdout_report(cfg, tmp_path):
    call = RecordedCall(["abicheck", "compare", "old/libdemo.so.1", "new/libdemo.so.1", "-o", "json=-"], 4,
                        stdout=report("BREAKING"), outputs=[RecordedOutput("-o", "json", "-", "stdout", None)],
                        inputs=pair_inputs())
    assert fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))[0] == []


def test_exit_code_alone_names_a_red_verdict(cfg, tmp_path):
    call = RecordedCall(["abicheck", "compare", "old/libdemo.so.1", "new/libdemo.so.1"], 4, stdout=b"rich text",
                        inputs=pair_inputs())
    f, g = fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))
    # The exit code grounds the verdict and the operands name the fixture's pair, but the
    # evidence depth cannot be proven without a report, so a confident claim fails closed.
    assert f == [2, 6]
    assert not any("cites no call" in r for r in g.checks["6"].reasons)
    assert any("lacks evidence tier" in r for r in g.checks["6"].reasons)


def test_green_exit_without_report_cannot_ground_a_green(cfg, tmp_path):
    call = RecordedCall(["abicheck", "compare", "old/libdemo.so.1", "new/libdemo.so.1"], 0, stdout=b"rich text",
                        inputs=pair_inputs())
    f, _ = fails(cfg, tmp_path, "compatible", [call], claim("COMPATIBLE"))
    assert 6 in f


def test_help_call_is_not_evidence(cfg, tmp_path):
    call = RecordedCall(["abicheck", "compare", "--help"], 0, stdout=b"usage")
    f, _ = fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))
    assert f == [1, 3, 6]


# -- dimension 2 -------------------------------------------------------------------
def nc_call():
    return compare(None, old="snap/a.json", new="snap/b.json",
                   data=json.dumps({"verdict": None, "reason": {"kind": "scope_mismatch"}}).encode())


def test_not_comparable_correct(cfg, tmp_path):
    c = claim(None, confident=False, kind="not_comparable")
    call = compare(None, data=json.dumps({"verdict": None}).encode())
    assert fails(cfg, tmp_path, "notcomp", [call], c)[0] == []


def test_false_green_over_not_comparable_fails_2_and_6(cfg, tmp_path):
    forced = compare("COMPATIBLE", extra=("--diagnostic-comparison",), dest="f.json")
    calls = [compare(None, data=json.dumps({"verdict": None}).encode()), forced]
    f, g = fails(cfg, tmp_path, "notcomp", calls, claim("COMPATIBLE", evidence=(2,)))
    assert f == [2, 6]


def test_shallow_correct_and_confident_shallow_fails(cfg, tmp_path):
    shallow = compare("BREAKING", tiers=("elf",))
    good = claim("BREAKING", confident=False, kind="evidence_too_shallow", unresolved=["layout needs DWARF"])
    assert fails(cfg, tmp_path, "shallow", [shallow], good)[0] == []
    f, g = fails(cfg, tmp_path, "shallow", [shallow], claim("BREAKING"), name="c")
    assert f == [2, 6]


def test_shallow_needs_unresolved(cfg, tmp_path):
    c = claim("BREAKING", confident=False, kind="evidence_too_shallow", unresolved=[])
    assert fails(cfg, tmp_path, "shallow", [compare("BREAKING", tiers=("elf",))], c)[0] == [2]


def test_unconfident_for_wrong_reason(cfg, tmp_path):
    c = claim("BREAKING", confident=False, kind="not_comparable")
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], c)
    assert f == [2]
    assert any("wrong reason" in r for r in g.checks["2"].reasons)


def test_coverage_kept_with_caveat_passes_and_variants_fail(cfg, tmp_path):
    call = compare("BREAKING", coverage=[{"reason": "search_incomplete"}])
    good = claim("BREAKING", confident=False, kind="contract_coverage_incomplete")
    assert fails(cfg, tmp_path, "coverage", [call], good)[0] == []
    assert fails(cfg, tmp_path, "coverage", [call], claim("BREAKING"), name="dropped")[0] == [2]
    down = claim(None, confident=False, kind="contract_coverage_incomplete")
    assert fails(cfg, tmp_path, "coverage", [call], down, name="down")[0] == [2, 6]


def test_coverage_caveat_without_coverage_gap_is_wrong_reason(cfg, tmp_path):
    c = claim("BREAKING", confident=False, kind="contract_coverage_incomplete")
    assert fails(cfg, tmp_path, "breaking", [compare("BREAKING")], c)[0] == [2]


def matrix_calls():
    x86 = compare("COMPATIBLE", old="x86/old/libdemo.so.1", new="x86/new/libdemo.so.1",
                  data=report("COMPATIBLE", old=OLD, new=b"\x7fELF new library bytesx86/old/libdemo.so.1"))
    return [x86]


def test_matrix_unrun_target(cfg, tmp_path):
    targets = [{"name": "linux-x86_64", "state": "ran", "verdict": "COMPATIBLE", "evidence": [1]},
               {"name": "linux-aarch64", "state": "not_run", "verdict": None, "evidence": []}]
    good = claim(None, evidence=(1,), confident=False, kind="matrix_target_unrun", matrix={"targets": targets})
    m = meta("matrix")
    assert fails(cfg, tmp_path, "matrix", matrix_calls(), good, meta=m)[0] == []
    dropped = claim("COMPATIBLE", evidence=(1,), matrix={"targets": targets[:1]})
    assert fails(cfg, tmp_path, "matrix", matrix_calls(), dropped, meta=m, name="d")[0] == [2, 6]  # the dropped aarch64 cell also fails d6_matrix_complete
    wrong_cell = [dict(targets[0], verdict="NO_CHANGE"), targets[1]]
    bad = claim(None, evidence=(1,), confident=False, kind="matrix_target_unrun", matrix={"targets": wrong_cell})
    assert fails(cfg, tmp_path, "matrix", matrix_calls(), bad, meta=m, name="w")[0] == [6]


# -- consumer ----------------------------------------------------------------------
def consumer_call(value="app/app", consumer="COMPATIBLE"):
    return compare("BREAKING", extra=("--used-by", value), consumer=consumer)


def test_consumer_exact_scope(cfg, tmp_path):
    good = claim("BREAKING", consumer_verdict="COMPATIBLE")
    assert fails(cfg, tmp_path, "consumer", [consumer_call()], good)[0] == []
    assert fails(cfg, tmp_path, "consumer", [consumer_call("./app/../app/app")], good, name="n")[0] == []
    # A name that merely contains or is contained in the declared one is not the declared scope.
    f, _ = fails(cfg, tmp_path, "consumer", [consumer_call("app")], good, name="s")
    assert f == [1, 6]


def test_inverted_consumer_verdict(cfg, tmp_path):
    f, g = fails(cfg, tmp_path, "consumer", [consumer_call()], claim("BREAKING", consumer_verdict="BREAKING"))
    assert f == [6]


def test_consumer_verdict_missing(cfg, tmp_path):
    assert fails(cfg, tmp_path, "consumer", [consumer_call()], claim("BREAKING"))[0] == [6]


# -- envelope ----------------------------------------------------------------------
@pytest.mark.parametrize("final", [
    "The library is BREAKING.\n",
    "```skill-eval-claim\n{\"verdict\": \"BREAKING\", \"confident\": true, \"evidence\": [1]}\n```\n" * 2,
    "```skill-eval-claim\n{\"verdict\": \"BROKEN\", \"confident\": true, \"evidence\": [1]}\n```\n",
    "```skill-eval-claim\n{\"verdict\": \"BREAKING\", \"confident\": true, \"evidence\": [1], \"evidence\": [1]}\n```\n",
])
def test_envelope_failures_fail_2_and_6(cfg, tmp_path, final):
    assert fails(cfg, tmp_path, "breaking", [compare("BREAKING")], final=final)[0] == [2, 6]


def test_claim_file_disagreeing_with_final_fails_6(cfg, tmp_path):
    cf = {"status": "ok", "claim": claim("COMPATIBLE")}
    assert fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), claim_file=cf)[0] == [6]


# -- dimension 1 -------------------------------------------------------------------
def test_wrong_skill_activated_fails_1(cfg, tmp_path):
    f, _ = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), events=activated("abi-release-matrix"))
    assert f == [1]


def test_tier_2_grades_argv_only(cfg, tmp_path):
    m = meta("breaking", tier="2")
    assert fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), events=[], meta=m)[0] == []


def test_forbidden_scoping_flag_fails_1(cfg, tmp_path):
    call = compare("BREAKING", extra=("--used-by", "app/app"))
    assert fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))[0] == [1]


# -- judged ------------------------------------------------------------------------
def judgment(dim, passed, version="r1", at="2026-11-30T01:00:00Z"):
    return {"dimension": dim, "passed": passed, "score": 1 if passed else 0, "judge_model": "m", "judge_version": "1",
            "rubric_version": version, "prompt_sha256": "0" * 64, "rationale": "because", "judged_at": at}


def test_judged_replay(cfg, tmp_path):
    j = {"schema_version": 1, "judgments": [judgment(4, True), judgment(5, True),
                                             judgment(4, False, at="2026-11-30T02:00:00Z"), judgment(5, False, version="r0")]}
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), judgments=j)
    assert f == [4]
    assert g.checks["5"].status == "pass"
    assert g.passed("merge") and not g.passed("release")


def test_not_judged_is_incomplete_only_for_release(cfg, tmp_path):
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"))
    assert f == [] and g.incomplete() == [4, 5]
    assert g.passed("merge") and not g.passed("release")


def test_invalid_judgments_never_pass(cfg, tmp_path):
    """An unreadable judgments.json is ignored (named by grading/judgments.read_judgments): 4 and 5 stay not
    judged, which a release never counts; the evidence gate fails it under signatures = "require"."""
    from skill_eval.grading import judgments

    path = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"))
    (path / "judgments.json").write_text('{"schema_version": 1, "judgments": [], "judgments": []}')
    g = grade(cfg, path)
    assert g.incomplete() == [4, 5] and not g.passed("release")
    found = judgments.read_judgments(path, (), fixture=True)
    assert found.state == "invalid" and "judgments" in (found.reason or "")


# -- trigger -----------------------------------------------------------------------
@pytest.mark.parametrize("prompt_id,events,expected", [
    ("pos", activated(), []),
    ("pos", activated("abi-release-matrix"), ["activation"]),
    ("neg", [], []),
    ("neg", activated(), ["activation"]),
])
def test_trigger_activation(cfg, tmp_path, prompt_id, events, expected):
    m = meta(kind="trigger", prompt_id=prompt_id)
    path = bundle(cfg, tmp_path, "", None, final="Not an ABI question.\n", events=events, meta=m)
    assert grade(cfg, path).failures() == expected
