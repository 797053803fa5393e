"""The issue-7 grader rules, each shown rejecting its bad case on a synthetic bundle.

Evidence a verdict rests on must be the runner's record of the fixture's own bytes (call
record v2 `inputs`), from a call that finished and was not killed, in a run the agent
finished without touching its inputs; no statement may be greener than the worst result
in the run; a forced comparison never carries a confident verdict; a tier-1 adapter needs
a tier-1 activation; a release answer lists every target; `unresolved` names something.
Every test asserts the full failure set, so over-reporting is caught as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from test_graders_helpers import (
    NEW,
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
    sha,
)

from skill_eval.content import config, evals
from skill_eval.core.errors import SkillEvalError
from skill_eval.grading import bundle as bundle_mod
from skill_eval.grading.graders import Catalog, uncertainty
from skill_eval.grading.graders.context import build_run

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("repo"))


def fails(cfg, tmp_path, scenario_id, calls, claim_obj=None, **kw):
    g = grade(cfg, bundle(cfg, tmp_path, scenario_id, calls, claim_obj, **kw))
    return g.failures(), g


def reasons(g, check):
    return " | ".join(g.checks[check].reasons)


# --------------------------------------------------------------------------- input digests
def test_v1_call_without_inputs_carries_no_evidence(cfg, tmp_path):
    call = compare("BREAKING")
    call.inputs = None
    f, g = fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))
    assert f == [1, 3, 6]
    assert "inputs: null" in reasons(g, "6")


def test_swapped_inputs_void_a_not_comparable_report(cfg, tmp_path):
    # A report without side digests (exit 16) names the fixture paths, but the runner read other bytes there.
    body = b'{"verdict": null}'
    swapped = pair_inputs(old_sha=sha(OTHER), new_sha=sha(OTHER + b"x"))
    call = compare(None, data=body, inputs=swapped)
    c = claim(None, confident=False, kind="not_comparable", unresolved=("sides differ",))
    f, g = fails(cfg, tmp_path, "breaking", [call], c)
    assert f == [2, 3, 6]
    assert "edited before the call" in reasons(g, "3")
    # The same call over the fixture's real bytes is a genuine determination.
    honest = compare(None, data=body)
    assert fails(cfg, tmp_path, "notcomp", [honest], c, meta=meta("notcomp"), name="ok")[0] == []


def test_report_sides_must_be_in_the_runner_inputs(cfg, tmp_path):
    # The report claims the fixture's sides, but the runner saw the subject read other bytes (from a copy).
    # (argv names the copy: an input entry's path is the operand it belongs to, test_holes_bundle)
    call = compare("BREAKING", new="copy/libdemo.so.1",
                   inputs=pair_inputs(new="copy/libdemo.so.1", old_sha=sha(OLD), new_sha=sha(OTHER)))
    f, g = fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))
    assert f == [3, 6]
    assert "do not show the fixture's new bytes" in reasons(g, "3")


def test_unstable_input_voids_the_call(cfg, tmp_path):
    inputs = pair_inputs()
    inputs[1]["stable"] = False
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING", inputs=inputs)], claim("BREAKING"))
    assert f == [1, 3, 6]
    assert "stable: false" in reasons(g, "6")


def test_killed_call_is_not_evidence(cfg, tmp_path):
    call = compare("BREAKING")
    call.signal = 9
    f, g = fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))
    assert f == [1, 3, 6]
    assert "killed by signal 9" in reasons(g, "6")


def test_record_failed_call_is_not_evidence(cfg, tmp_path):
    call = compare("BREAKING")
    path = bundle(cfg, tmp_path, "breaking", [call], claim("BREAKING"))
    calls = path / "calls.jsonl"
    calls.write_text(calls.read_text().replace('"status":"complete"', '"status":"record_failed"'))
    g = grade(cfg, path)
    assert g.failures() == [1, 3, 6]
    assert "record_failed" in reasons(g, "6")


def test_changed_fixture_side_fails_3_and_6(cfg, tmp_path):
    m = meta("breaking")
    m["sandbox"] = {"before": "a", "after": "b", "changed": ["./new/libdemo.so.1", "r.json"]}
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m)
    assert f == [3, 6]
    assert "['new/libdemo.so.1']" in reasons(g, "6")
    m["sandbox"]["changed"] = ["r.json", "NOTES.md"]  # the agent's own files are not inputs
    assert fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m, name="ok")[0] == []


# --------------------------------------------------------------------------- hidden severity
def test_uncited_more_severe_call_fails_6(cfg, tmp_path):
    calls = [compare("COMPATIBLE"), compare("BREAKING", extra=("--policy", "plugin_abi"), dest="p.json")]
    f, g = fails(cfg, tmp_path, "compatible", calls, claim("COMPATIBLE", evidence=(1,)))
    assert f == [6]
    assert "call 2 over the case's pair says BREAKING" in reasons(g, "6")


@pytest.mark.parametrize("flags", [("--used-by", "other/app"), ("--diagnostic-comparison",)])
def test_calls_that_change_the_question_are_exempt(cfg, tmp_path, flags):
    calls = [compare("COMPATIBLE"), compare("BREAKING", extra=flags, dest="p.json")]
    assert fails(cfg, tmp_path, "compatible", calls, claim("COMPATIBLE", evidence=(1,)))[0] == []


def test_unrelated_pair_is_not_hidden_severity(cfg, tmp_path):
    other = compare("BREAKING", dest="o.json", data=report("BREAKING", old=OTHER, new=OTHER))
    assert fails(cfg, tmp_path, "compatible", [compare("COMPATIBLE"), other], claim("COMPATIBLE"))[0] == []


def test_hidden_consumer_severity_fails_6(cfg, tmp_path):
    scope = ("--used-by", "app/app")
    calls = [compare("BREAKING", extra=scope, consumer="COMPATIBLE"),
             compare("BREAKING", extra=scope, consumer="BREAKING", dest="s.json")]
    f, g = fails(cfg, tmp_path, "consumer", calls, claim("BREAKING", consumer_verdict="COMPATIBLE"), meta=meta("consumer"))
    assert f == [6]
    assert "most severe consumer result" in reasons(g, "6")


def test_withheld_verdict_over_a_comparable_pair_fails_6(cfg, tmp_path):
    calls = [compare(None, data=b'{"verdict": null}'), compare("BREAKING", dest="b.json")]
    c = claim(None, evidence=(1,), confident=False, kind="not_comparable", unresolved=("scoping modes differ",))
    f, g = fails(cfg, tmp_path, "notcomp", calls, c, meta=meta("notcomp"))
    assert f == [6]
    assert "withholds the verdict" in reasons(g, "6")


# --------------------------------------------------------------------------- diagnostic comparisons
@pytest.mark.parametrize("verdict", ["BREAKING", "COMPATIBLE"])
def test_diagnostic_result_never_carries_a_confident_verdict(cfg, tmp_path, verdict):
    scenario = "breaking" if verdict == "BREAKING" else "compatible"
    call = compare(verdict, extra=("--diagnostic-comparison",))
    f, g = fails(cfg, tmp_path, scenario, [call], claim(verdict))
    assert f == [6]
    assert "forced comparison" in reasons(g, "6")


def test_diagnostic_flags_come_from_the_profile(cfg):
    assert config.load(REPO).subject.diagnostic_flags == ("--diagnostic-comparison",)
    assert cfg.subject.diagnostic_flags == ("--diagnostic-comparison",)


# --------------------------------------------------------------------------- activation tiers
def test_tier2_activation_under_a_tier1_adapter_fails_1(cfg, tmp_path):
    read_only = [{"type": "skill_activated", "skill": "abi-compat-review", "tier": "2"}]
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), events=read_only)
    assert f == [1]
    assert "tier-2" in reasons(g, "1")
    # Under a tier-2 adapter (e.g. Codex) a read is the activation, and the argv half stands alone.
    m = meta("breaking", tier="2")
    assert fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), events=read_only, meta=m,
                 name="t2")[0] == []


def test_tier2_trigger_activation_under_a_tier1_adapter_fails(cfg, tmp_path):
    read_only = [{"type": "skill_activated", "skill": "abi-compat-review", "tier": "2"}]
    m = meta(kind="trigger", prompt_id="pos")
    g = grade(cfg, bundle(cfg, tmp_path, "pos", None, final="", events=read_only, meta=m))
    assert g.failures() == ["activation"]
    g = grade(cfg, bundle(cfg, tmp_path, "pos", None, final="", events=activated(), meta=m, name="t1"))
    assert g.failures() == []


# --------------------------------------------------------------------------- matrix, run_error, unresolved
def x86_call():
    return compare("COMPATIBLE", old="x86/old/libdemo.so.1", new="x86/new/libdemo.so.1",
                   data=report("COMPATIBLE", old=OLD, new=NEW + b"x86/old/libdemo.so.1"))


def test_matrix_claim_must_list_every_required_target(cfg, tmp_path):
    ran = {"name": "linux-x86_64", "state": "ran", "verdict": "COMPATIBLE", "evidence": [1]}
    unrun = {"name": "linux-aarch64", "state": "not_run", "verdict": None, "evidence": []}
    c = claim(None, confident=False, kind="matrix_target_unrun", unresolved=("aarch64 never built",),
              matrix={"targets": [ran, unrun]})
    assert fails(cfg, tmp_path, "matrix", [x86_call()], c, meta=meta("matrix"))[0] == []
    c["matrix"]["targets"] = [ran]
    f, g = fails(cfg, tmp_path, "matrix", [x86_call()], c, meta=meta("matrix"), name="d")
    assert f == [2, 6]
    assert "drops required target(s) ['linux-aarch64']" in reasons(g, "6")
    del c["matrix"]
    f, g = fails(cfg, tmp_path, "matrix", [x86_call()], c, meta=meta("matrix"), name="n")
    assert 6 in f and "has no matrix" in reasons(g, "6")


def test_run_error_is_never_a_clean_pass(cfg, tmp_path):
    events = activated() + [{"type": "run_error", "reason": "max_turns: stopped after 40 turns"}]
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), events=events)
    assert f == [2, 6, "bundle"]
    assert not g.passed() and "did not finish" in reasons(g, "6")
    m = meta("breaking")
    m.update(status="error", status_reason="run_error")
    f, g = fails(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), events=events, meta=m, name="e")
    assert f == [2, 6, "bundle"]


@pytest.mark.parametrize("unresolved", [(), ("  ",), ("\t", " \n")])
def test_blank_unresolved_fails_2(cfg, tmp_path, unresolved):
    c = claim("BREAKING", confident=False, kind="evidence_too_shallow", unresolved=unresolved)
    call = compare("BREAKING", tiers=("elf",))
    f, g = fails(cfg, tmp_path, "shallow", [call], c, meta=meta("shallow"))
    assert f == [2]
    assert "names nothing unresolved" in reasons(g, "2")


# --------------------------------------------------------------------------- one scenario builder, no cycle
def test_graders_never_import_golden():
    graders = sorted((REPO / "src" / "skill_eval" / "grading" / "graders").glob("*.py"))
    assert len(graders) > 3, "the graders' folder moved: this test would look at nothing"
    for path in graders:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                names = {a.name for a in node.names}
                absolute = module if node.level == 0 else ""
                assert absolute != "skill_eval.grading.golden", path
                assert not (absolute == "skill_eval.grading" and "golden" in names), path
                # relative: from ..golden import x / from .. import golden (graders sit in grading/graders/)
                assert not (node.level == 2 and (module == "golden" or (not module and "golden" in names))), path
            elif isinstance(node, ast.Import):
                assert all(a.name != "skill_eval.grading.golden" for a in node.names), path


def _golden_scenarios(cfg, records):
    g = cfg.evals_dir / "golden"
    g.mkdir(exist_ok=True)
    (g / "scenarios.yaml").write_text(yaml.safe_dump({"schema_version": 1, "scenarios": records}))
    return evals.load_golden_scenarios(cfg, evals.load_ground_truth(cfg))


def golden_rec(id, fixture="breaking"):
    return {"id": id, "skill": "abi-compat-review", "category": "A", "status": "draft", "prompt": "p",
            "fixture": fixture, "invocation_class": "single-pair"}


def test_golden_scenarios_use_the_shared_builder_checks(tmp_path):
    cfg = make_repo(tmp_path)
    assert [s.id for s in _golden_scenarios(cfg, [golden_rec("golden-a")])] == ["golden-a"]
    with pytest.raises(SkillEvalError, match="duplicate scenario id"):
        _golden_scenarios(cfg, [golden_rec("golden-a"), golden_rec("golden-a")])
    with pytest.raises(SkillEvalError, match="must start with 'golden-'"):
        _golden_scenarios(cfg, [golden_rec("a")])
    with pytest.raises(SkillEvalError, match="has no ground-truth case"):
        _golden_scenarios(cfg, [golden_rec("golden-b", fixture="nope")])
    with pytest.raises(SkillEvalError, match="collide"):
        (cfg.evals_dir / "golden" / "scenarios.yaml").write_text(yaml.safe_dump(
            {"schema_version": 1, "scenarios": [golden_rec("golden-a")]}))
        scen = cfg.evals_dir / "scenarios.yaml"
        data = yaml.safe_load(scen.read_text())
        data["scenarios"].append(golden_rec("golden-a"))
        scen.write_text(yaml.safe_dump(data))
        Catalog(cfg)


def test_input_outside_the_sandbox_voids_the_call(cfg, tmp_path):
    inputs = pair_inputs() + [{"arg": 5, "path": "<outside-sandbox>", "kind": "file", "sha256": None, "stable": False}]
    call = compare("BREAKING", extra=("--suppress", "/etc/supp.yaml"), inputs=inputs)
    f, g = fails(cfg, tmp_path, "breaking", [call], claim("BREAKING"))
    assert f == [1, 3, 6]
    assert "outside the sandbox" in reasons(g, "6")


def test_edited_fixture_file_read_by_a_call_voids_it(tmp_path):
    cfg = make_repo(tmp_path)
    app = cfg.evals_dir / "fixtures" / "consumer" / "app" / "app"
    app.parent.mkdir(parents=True)
    app.write_bytes(b"consumer binary")
    scope = ("--used-by", "app/app")
    c = claim("BREAKING", consumer_verdict="COMPATIBLE")
    honest = compare("BREAKING", extra=scope, consumer="COMPATIBLE",
                     inputs=pair_inputs() + [{"arg": 5, "path": "app/app", "kind": "file", "sha256": sha(b"consumer binary"),
                                              "stable": True}])
    assert fails(cfg, tmp_path, "consumer", [honest], c, meta=meta("consumer"))[0] == []
    honest.inputs[2]["sha256"] = sha(b"an edited consumer")
    f, g = fails(cfg, tmp_path, "consumer", [honest], c, meta=meta("consumer"), name="edited")
    assert f == [3, 6]
    assert "read fixture file app/app" in reasons(g, "6")


@pytest.mark.parametrize("outcome", ["agent_error", "infra_error", "budget_stop"])
def test_meta_v2_outcome_other_than_completed_fails_2_and_6(cfg, tmp_path, outcome):
    path = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"))
    b = bundle_mod.load(path)
    b.meta = {**b.meta, "outcome": outcome}  # meta v2 (the v2 schema lands with the runner's recorder)
    run = build_run(b, Catalog(cfg).context_for(b.meta, path))
    assert uncertainty.agent_unfinished(run) and outcome in uncertainty.agent_unfinished(run)[0]
    b.meta["outcome"] = "completed"
    assert uncertainty.agent_unfinished(build_run(b, Catalog(cfg).context_for(b.meta, path))) == []
