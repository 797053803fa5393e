"""The careful-agent model scripts cover the risk suite and the trigger corpus, and are sound.

agent-evals/skills/model-scripts/careful/ holds the scripted model turns the first committed
evidence is recorded from (a bundle says `model: scripted:<digest>`, never a model's name).
These checks are static: coverage, schema validity, the skill activated first, exactly one
parseable claim envelope whose citations name calls the script actually makes, and the
scoping / no-suppression discipline the skills teach. Recording and grading the bundles is
`skill-eval run --agent scripted` + `skill-eval grade`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from skill_eval.content import claim as claim_mod
from skill_eval.content import config, evals, selection
from skill_eval.harness.modelserver.script import load_script

ROOT = Path(__file__).resolve().parents[2]
CAREFUL = ROOT / "agent-evals" / "skills" / "model-scripts" / "careful"
TRIGGER = CAREFUL / "trigger"


@pytest.fixture(scope="module")
def cfg():
    return config.load(ROOT)


@pytest.fixture(scope="module")
def suite(cfg):
    return selection.select(cfg, "risk")


@pytest.fixture(scope="module")
def truth(cfg):
    return evals.load_ground_truth(cfg)


def _scripts(folder: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.suffix in (".yaml", ".yml"):
            out.setdefault(p.stem, []).append(p)
    return out


def _calls(script) -> list[dict]:
    return [c for turn in script.turns for c in turn.get("tools", ())]


def _skills(script) -> list[str]:
    return [c["skill"] for c in _calls(script) if "skill" in c]


def _abicheck_commands(script, subject: str) -> list[list[str]]:
    """Every shell call whose command runs the subject (each is one shim-recorded call)."""
    out = []
    for c in _calls(script):
        if "shell" in c:
            argv = shlex.split(c["shell"])
            if argv and Path(argv[0]).name == subject:
                out.append(argv)
    return out


def _final(script) -> str:
    return script.turns[-1]["final"]


# ---------------------------------------------------------------------------- coverage
def test_every_risk_scenario_has_exactly_one_script(suite):
    have = _scripts(CAREFUL)
    ids = [s.id for s in suite.scenarios]
    assert ids, "the risk suite is empty"
    assert [i for i in ids if i not in have] == []
    assert [i for i in ids if len(have.get(i, ())) != 1] == []
    assert sorted(set(have) - set(ids)) == [], "scripts for items that are not in the risk suite"


def test_every_corpus_prompt_has_exactly_one_script(cfg):
    prompts = evals.load_trigger_corpus(cfg)
    have = _scripts(TRIGGER)
    ids = [p.id for p in prompts]
    assert ids
    assert [i for i in ids if len(have.get(i, ())) != 1] == []
    assert sorted(set(have) - set(ids)) == [], "scripts for prompts that are not in the corpus"


def test_readme_says_these_are_not_model_results():
    text = (CAREFUL / "README.md").read_text(encoding="utf-8")
    assert "scripted:" in text and "not any model" in text


# ---------------------------------------------------------------------------- behavioural
def _scenario_ids() -> list[str]:
    return [s.id for s in selection.select(config.load(ROOT), "risk").scenarios]


@pytest.mark.parametrize("sid", _scenario_ids())
def test_behavioral_script(sid, cfg, suite, truth):
    sc = next(s for s in suite.scenarios if s.id == sid)
    script = load_script(CAREFUL / f"{sid}.yaml")
    subject = cfg.subject

    # The scenario's skill first, and no other skill at any point.
    first = script.turns[0].get("tools", [])
    assert first and first[0] == {"skill": sc.skill}, f"turn 1 must activate {sc.skill}"
    assert _skills(script) == [sc.skill]

    # The subject really runs, as the skill and the ground truth say.
    cmds = _abicheck_commands(script, subject.name)
    assert cmds, "a behavioural script must run abicheck"
    case = truth[sc.fixture]
    scope_args = list(case.record.get("args", ()))
    for argv in cmds:
        assert argv[1] == "compare"
        flags = [t for t in argv if t.startswith("-")]
        assert not [f for f in subject.suppression_flags if any(t == f or t.startswith(f + "=") for t in flags)], argv
        outs = [argv[i + 1] for i, t in enumerate(argv[:-1]) if t in ("-o", "--output")]
        assert len([o for o in outs if o.startswith("json=")]) == 1, f"exactly one -o json=... per call: {argv}"
        joined = " ".join(argv)
        if scope_args:
            assert " ".join(scope_args) in joined, f"{argv} lacks the ground-truth args {scope_args}"
        if sc.invocation_class != "consumer":
            assert not [f for f in subject.scoping_flags if f in flags], argv
    report_names = [o for argv in cmds for i, o in enumerate(argv[1:], 1) if argv[i - 1] in ("-o", "--output")]
    assert len(report_names) == len(set(report_names)), "each call writes its own report"

    # Exactly one valid claim envelope, in the final turn only.
    for turn in script.turns[:-1]:
        assert "skill-eval-claim" not in turn.get("say", "")
    result = claim_mod.extract(_final(script), subject)
    assert result.ok, result.reason
    c = result.claim
    assert set(c.all_cited()) <= set(range(1, len(cmds) + 1)), "cites a call the script never makes"

    # The claim states what the scenario's correct answer is.
    assert c.verdict == sc.expected_verdict(case)
    want_kind = sc.uncertainty
    assert c.confident is (want_kind is None)
    assert c.kind == want_kind
    if want_kind is not None:
        assert c.unresolved
    if c.verdict is not None:
        assert c.evidence, "a definite verdict needs cited calls"
    want_consumer = (sc.expected or {}).get("consumer_verdict", case.consumer_expected)
    if sc.invocation_class == "consumer":
        assert c.consumer_verdict == want_consumer
    else:
        assert not c.has_consumer_verdict
    if sc.invocation_class == "release-matrix":
        required = (sc.expected or {}).get("matrix", {}).get("required") or sorted(case.targets)
        assert c.targets is not None and sorted(t.name for t in c.targets) == sorted(required)
        unrun = set((sc.expected or {}).get("matrix", {}).get("unrun", ()))
        for t in c.targets:
            if t.name in unrun:
                assert t.state in ("not_run", "failed", "skipped") and t.verdict is None and not t.evidence
            else:
                assert t.state == "ran" and t.verdict == case.targets[t.name]["expected"] and t.evidence
    else:
        assert c.targets is None


# ---------------------------------------------------------------------------- trigger
def _prompt_ids() -> list[str]:
    return [p.id for p in evals.load_trigger_corpus(config.load(ROOT))]


@pytest.mark.parametrize("pid", _prompt_ids())
def test_trigger_script(pid, cfg):
    prompt = next(p for p in evals.load_trigger_corpus(cfg) if p.id == pid)
    script = load_script(TRIGGER / f"{pid}.yaml")
    assert "skill-eval-claim" not in _final(script)
    if prompt.expected_skill is None:
        assert len(script.turns) == 1 and _calls(script) == [], "a negative prompt gets one final turn, no tools"
        return
    first = script.turns[0].get("tools", [])
    assert first and first[0] == {"skill": prompt.expected_skill}
    assert _skills(script) == [prompt.expected_skill]
    assert not [c for c in _calls(script) if "skill" not in c], "a trigger script needs no subject call"
