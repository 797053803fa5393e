"""Comparison arms as evidence: per-arm expected sets, contamination, A/A runs, the siblings arm.

The evidence-gate tests stub selection like test_evidence (the gate is coded against its API)
but honour the `arms` the gate asks for, so they pin how the gate builds and judges arms.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_evidence import baseline_for, select_fn
from test_graders_helpers import SKILL, activated, bundle, claim, compare, make_repo, meta

from skill_eval.cli import main
from skill_eval.content import config, freshness, selection
from skill_eval.core.errors import ConfigError, InputError
from skill_eval.grading import evidence
from skill_eval.grading.graders import Catalog
from skill_eval.harness.runner import execute, plan

CLEAN = {"discoverable": [], "read": []}


def arms_expected(cfg, suite_obj, arms=("skill-agent",)):
    return [SimpleNamespace(kind="behavioral", skill=SKILL, arm=a, item_id=i, k=k)
            for a in arms for i in suite_obj.items for k in range(cfg.k)]


@pytest.fixture
def cfg(tmp_path):
    c = make_repo(tmp_path)
    return dataclasses.replace(c, arms={"pr": ("skill-agent", "baseline"), "release": ("skill-agent", "baseline")})


def record(cfg, *, arm="skill-agent", k=0, run="run1", verdict="BREAKING", item="breaking", events=None, **over):
    m = meta(item, k=k, arm=arm)
    m["run_id"] = run
    if arm == "baseline":
        m["extra"] = {"installed_skills": []}
        m["arm_isolation"] = dict(CLEAN)
    m.update(over)
    dest = cfg.evals_dir / "evidence" / SKILL / plan.arm_dir(arm) / run / item / str(k)
    tmp = dest.parent / f".tmp{k}"
    path = bundle(cfg, tmp.parent, item, [compare("BREAKING")], claim(verdict), meta=m, name=tmp.name,
                  events=([] if arm == "baseline" else activated()) if events is None else events)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), dest)
    return dest


def check(cfg, stage="merge"):
    return evidence.check(cfg, "risk", None, stage, select_fn=select_fn(["breaking"], ["breaking"]),
                          expected_fn=arms_expected, freshness_fn=lambda m: [], catalog=Catalog(cfg))


def shipped(cfg):
    for k in range(3):
        record(cfg, k=k)
    baseline_for(cfg, check(dataclasses.replace(cfg, arms={"pr": ("skill-agent",), "release": ("skill-agent",)})))


def test_missing_baseline_bundle_fails_when_the_arm_is_required(cfg):
    shipped(cfg)
    errors = check(cfg).errors
    assert [e for e in errors if e.startswith("missing:")] == [
        f"missing: behavioral breaking [baseline] k={k} (expected at evidence/{SKILL}/baseline/<run-id>/breaking/{k}/)"
        for k in range(3)], errors


def test_clean_baseline_passes_and_its_failures_do_not_gate(cfg):
    shipped(cfg)
    for k in range(3):  # the skill-less agent gets the verdict wrong every time: lift evidence, not a regression
        record(cfg, arm="baseline", k=k, verdict="COMPATIBLE")
    r = check(cfg)
    assert r.passed, r.errors
    assert r.expected == 6 and {g.meta["arm"] for g in r.grades} == {"skill-agent", "baseline"}


def test_an_unrequired_arm_is_extra(cfg):
    only = dataclasses.replace(cfg, arms={"pr": ("skill-agent",), "release": ("skill-agent",)})
    shipped(only)
    record(only, arm="baseline", k=0)
    errors = check(only).errors
    assert errors == [f"extra: evidence/{SKILL}/baseline/run1/breaking/0 is not expected by any suite (unknown item, arm or k)"]


@pytest.mark.parametrize("how, needle", [
    ("activated", "agent activated the skill under test"),
    ("activated-other", "agent activated the skill 'some-other-skill', which the baseline run did not install"),
    ("read-other", "agent read 'SKILL.md' of the skill 'some-other-skill', which the baseline run did not install"),
    ("discoverable", "arm_isolation.discoverable names the skill under test"),
    ("read", "arm_isolation.read names the skill under test"),
    ("installed", "installed the skill under test"),
    ("unattested", "no arm_isolation attestation"),
])
def test_contaminated_baseline_bundle_fails(cfg, how, needle):
    shipped(cfg)
    for k in (1, 2):
        record(cfg, arm="baseline", k=k)
    over: dict = {}
    events = None
    if how == "activated":
        events = activated()
    elif how == "activated-other":  # issue 34: no skill is installed in a control arm, so no activation is clean
        events = [{"type": "skill_activated", "skill": "some-other-skill", "tier": "1"}]
    elif how == "read-other":
        events = [{"type": "skill_file_read", "skill": "some-other-skill", "path": "SKILL.md"}]
    elif how in ("discoverable", "read"):
        over["arm_isolation"] = {**CLEAN, how: [f"{SKILL}/SKILL.md"]}
    elif how == "installed":
        over["extra"] = {"installed_skills": [SKILL]}
    record(cfg, arm="baseline", k=0, events=events, **over)
    if how == "unattested":
        p = cfg.evals_dir / "evidence" / SKILL / "baseline/run1/breaking/0/meta.json"
        m = json.loads(p.read_text())
        del m["arm_isolation"]
        p.write_text(json.dumps(m))
    errors = check(cfg).errors
    bad = [e for e in errors if e.startswith("contaminated:")]
    assert bad and all(f"evidence/{SKILL}/baseline/run1/breaking/0:" in e for e in bad), errors
    assert any(needle in e for e in bad), bad


def test_aa_bundles_are_allowed_and_never_counted_toward_pass_k(cfg):
    shipped(cfg)
    for k in range(3):
        record(cfg, arm="baseline", k=k)
        # the A/A replicate of the shipped arm fails dimension 6 at k=1: calibration, not a pass^k failure
        record(cfg, k=k, run="run1-aa", verdict="COMPATIBLE" if k == 1 else "BREAKING", extra={"aa": True})
    r = check(cfg)
    assert r.passed, r.errors
    assert not any(g.meta["run_id"].endswith("-aa") for g in r.grades)
    record(cfg, k=0, run="run1-aa", item="compatible")  # an A/A run of a slot no suite expects
    assert any(e.startswith("extra:") and "A/A run" in e for e in check(cfg).errors)


def test_aa_flag_without_the_suffix_is_a_duplicate(cfg):
    """Fail closed: the gate knows A/A runs by the (path-checked) run id suffix that `run --aa` always writes."""
    shipped(cfg)
    for k in range(3):
        record(cfg, arm="baseline", k=k)
    record(cfg, k=0, run="other", extra={"aa": True})
    assert any(e.startswith("duplicated: behavioral breaking [skill-agent] k=0") for e in check(cfg).errors)


# -- config -------------------------------------------------------------------------------------

def _with_arms(tmp_path, line):
    root = tmp_path / "repo"
    root.mkdir()
    text = (Path(__file__).resolve().parents[2] / "skill-eval.toml").read_text()
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("arms = "))
    (root / "skill-eval.toml").write_text(text.replace("tool_harness = true", f"tool_harness = true\n{line}"))
    return root


def test_arms_default_and_profiles(tmp_path):
    cfg = config.load(_with_arms(tmp_path, ""))
    assert cfg.required_arms("merge") == ("skill-agent",) == cfg.required_arms("release")
    shutil.rmtree(tmp_path / "repo")
    cfg = config.load(_with_arms(tmp_path, 'arms = { pr = ["skill-agent", "baseline"] }'))
    assert cfg.required_arms("merge") == ("skill-agent", "baseline") == cfg.required_arms("release")


@pytest.mark.parametrize("line, exc, needle", [
    ('arms = { pr = ["baseline"] }', ConfigError, "does not include skill-agent"),
    ('arms = { pr = ["skill-agent", "nonsense"] }', InputError, "evals.arms.pr"),
    ('arms = { pr = ["skill-agent", "skill-agent"] }', InputError, "evals.arms.pr"),
    ('arms = { nightly = ["skill-agent"] }', InputError, "evals.arms"),
])
def test_arms_config_is_bounded(tmp_path, line, exc, needle):
    with pytest.raises(exc) as err:
        config.load(_with_arms(tmp_path, line))
    assert needle in (err.value.render() if hasattr(err.value, "render") else str(err.value))


# -- selection, freshness -----------------------------------------------------------------------

def test_trigger_prompts_are_expected_for_skill_agent_only(mini_repo):
    cfg = dataclasses.replace(config.load(mini_repo), arms={"pr": ("skill-agent", "baseline", "siblings"), "release": ("skill-agent",)})
    suite = selection.select(cfg, "risk")
    got = selection.expected_bundles(cfg, suite)
    by_arm = {a: [e for e in got if e.arm == a] for a in ("skill-agent", "baseline", "siblings")}
    assert {e.kind for e in by_arm["skill-agent"]} == {"behavioral", "trigger"}
    assert {e.kind for e in by_arm["baseline"]} == {"behavioral"} == {e.kind for e in by_arm["siblings"]}
    assert len(by_arm["baseline"]) == len(suite.scenarios) * cfg.k
    assert selection.expected_bundles(cfg, suite, "baseline") == by_arm["baseline"]


def test_required_keys_follow_what_the_arm_installed(mini_repo):
    cur = freshness.current(config.load(mini_repo))
    base = {"kind": "behavioral", "skill": "alpha", "scenario": "alpha-break"}
    assert "skill:alpha" not in freshness.required_keys({**base, "arm": "baseline"}, cur)
    assert "skill:alpha" in freshness.required_keys({**base, "arm": "skill-agent"}, cur)
    assert {"skill:alpha", "skill:beta"} <= set(freshness.required_keys({**base, "arm": "siblings"}, cur))


# -- runner: siblings arm, attestation, --aa ----------------------------------------------------

def test_siblings_arm_installs_every_skill(mini_repo):
    cur = freshness.current(config.load(mini_repo))
    item = plan.RunItem("behavioral", "alpha", "siblings", "r", "alpha-break", 0)
    assert execute.installed_skills(item, cur) == ["alpha", "beta"]
    assert execute.installed_skills(dataclasses.replace(item, arm="skill-agent"), cur) == ["alpha"]
    assert execute.installed_skills(dataclasses.replace(item, arm="baseline"), cur) == []
    assert plan.ARM_RE.match("siblings")


def test_arm_isolation_attests_discoverable_and_read(tmp_path):
    d = tmp_path / "skills"
    (d / "alpha" / "references").mkdir(parents=True)
    (d / "alpha" / "SKILL.md").write_text("x")
    (d / "alpha" / "references" / "r.md").write_text("y")
    events = [{"type": "skill_activated", "skill": "alpha", "tier": "1"},
              {"type": "skill_file_read", "skill": "alpha", "path": f"{d}/alpha/references/r.md"},
              {"type": "tool_call", "id": "1", "name": "Bash", "input": {}}]
    assert execute.arm_isolation([d, tmp_path / "absent"], events) == {
        "discoverable": ["alpha/SKILL.md", "alpha/references/r.md"], "read": ["alpha/SKILL.md", "alpha/references/r.md"]}


BASELINE_SCRIPTS = "agent-evals/skills/model-scripts/baseline"


def test_baseline_aa_run_is_attested_clean_and_labelled(repo_copy, capsys):
    assert main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--arm", "baseline",
                 "--model-server", f"scripted:{BASELINE_SCRIPTS}", "--no-trigger", "-k", "1", "--run-id", "cal", "--aa"]) == 0
    b = repo_copy / "agent-evals/skills/evidence/abi-compat-review/baseline/cal-aa/review-removed-export/0"
    m = json.loads((b / "meta.json").read_text())
    assert m["run_id"] == "cal-aa" and m["extra"]["aa"] is True and m["extra"]["installed_skills"] == []
    assert m["arm_isolation"] == {"discoverable": [], "read": []}
    assert "skill:abi-compat-review" not in m["digests"]
    assert evidence.contamination_of(config.load(repo_copy), b) == []


def test_siblings_run_offers_every_skill(repo_copy, capsys):
    assert main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--arm", "siblings",
                 "--model-server", "scripted:agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml",
                 "--no-trigger", "-k", "1", "--run-id", "sib"]) == 0
    b = repo_copy / "agent-evals/skills/evidence/abi-compat-review/siblings/sib/review-removed-export/0"
    m = json.loads((b / "meta.json").read_text())
    skills = sorted(freshness.current(config.load(repo_copy)).skills)
    assert len(skills) > 1 and m["extra"]["installed_skills"] == skills
    assert {p.split("/", 1)[0] for p in m["arm_isolation"]["discoverable"]} == set(skills)
    assert "abi-compat-review/SKILL.md" in m["arm_isolation"]["read"]
    assert {f"skill:{s}" for s in skills} <= set(m["digests"])
