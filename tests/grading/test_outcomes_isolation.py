"""Run outcome classes and the control-arm contamination check (pure functions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skill_eval.core import outcomes
from skill_eval.grading import isolation

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "agent-evals/skills/evidence/abi-compat-review/skill-agent/claude-code-scripted/review-removed-export/0"
SKILL = "abi-compat-review"
PUBLISHED = (".agents/skills", ".claude/skills")


@pytest.mark.parametrize(("meta", "usage", "want"), [
    ({"status": "complete"}, None, "completed"),
    ({"status": "error", "status_reason": "agent_error: the agent gave up"}, None, "agent_error"),
    ({"status": "error", "status_reason": "permission_denied: Bash not allowed"}, None, "agent_error"),
    ({"status": "error", "status_reason": "something nobody classified"}, None, "agent_error"),
    ({"status": "error", "status_reason": "model_config: model not found"}, None, "infra_error"),
    ({"status": "error", "status_reason": "agent_error: API Error: 429 rate limit exceeded"}, None, "infra_error"),
    ({"status": "error", "status_reason": "agent_error: 503 Service Unavailable"}, None, "infra_error"),
    ({"status": "error", "status_reason": "malformed_stream: line 3 is not JSON"}, None, "infra_error"),
    ({"status": "error", "status_reason": "budget_exceeded: 2.1 USD"}, None, "budget_stop"),
    ({"status": "incomplete", "status_reason": "timeout: wall-clock budget exhausted"}, {"turns": 0}, "infra_error"),
    ({"status": "incomplete", "status_reason": "timeout: wall-clock budget exhausted"}, {"turns": 7}, "budget_stop"),
    ({"status": "incomplete", "status_reason": "max_turns: 40 turns"}, None, "budget_stop"),
    ({"status": "incomplete", "status_reason": "budget: cost 3.0 USD > max 2"}, None, "budget_stop"),
    ({"status": "incomplete", "status_reason": "incomplete: stream ended without a result"}, None, "infra_error"),
    ({}, None, "infra_error"),
    # meta v2: the runner's own outcome wins over any derivation; an unknown value fails closed
    ({"status": "error", "status_reason": "agent_error: x", "outcome": "infra_error"}, None, "infra_error"),
    ({"status": "complete", "outcome": "budget_stop"}, None, "budget_stop"),
    ({"status": "complete", "outcome": "great_success"}, None, "infra_error"),
])
def test_outcome_of(meta, usage, want):
    assert outcomes.outcome_of(meta, usage) == want


def test_only_infra_errors_are_unscored():
    assert [o for o in outcomes.OUTCOMES if not outcomes.scored(o)] == ["infra_error"]


def committed():
    meta = json.loads((COMMITTED / "meta.json").read_text())
    events = [json.loads(line) for line in (COMMITTED / "events.jsonl").read_text().splitlines()]
    return meta, events


def clean_baseline():
    meta, events = committed()
    meta["arm"] = "baseline"
    meta["extra"]["installed_skills"] = []
    meta["arm_isolation"] = {"discoverable": [], "read": []}  # runner attestation (absent in older bundles)
    meta["digests"] = {k: v for k, v in meta["digests"].items() if not k.startswith("skill:")}
    meta["observed_inputs"] = [o for o in meta["observed_inputs"] if f"/{SKILL}/" not in o["path"]]
    events = [e for e in events if e.get("type") not in ("skill_activated", "skill_file_read")
              and e.get("tool") != "Skill" and not str(e.get("id", "")).endswith("t0_c0")]
    return meta, events


def test_clean_baseline_passes():
    meta, events = clean_baseline()
    assert isolation.contamination(meta, events, published=PUBLISHED) == []


def test_skill_agent_arm_is_never_contaminated_by_its_own_skill():
    meta, events = committed()
    assert meta["arm"] == "skill-agent"
    assert isolation.contamination(meta, events, published=PUBLISHED) == []


def test_the_committed_skill_agent_bundle_relabelled_baseline_fails_on_every_signal():
    """The committed bundle really installed, activated and read the skill: as a baseline it is contaminated."""
    meta, events = committed()
    meta["arm"] = "baseline"
    found = isolation.contamination(meta, events, published=PUBLISHED)
    reasons = " | ".join(found)
    assert "installed the skill under test" in reasons
    assert "digests include skill:abi-compat-review" in reasons
    assert "runner read .agents/skills/abi-compat-review/SKILL.md" in reasons
    assert "activated the skill under test" in reasons
    observed = [o for o in meta["observed_inputs"] if o["path"].startswith(f".agents/skills/{SKILL}/")]
    attested = sum(1 for f in ("discoverable", "read") if (meta.get("arm_isolation") or {}).get(f))
    if "arm_isolation" in meta:  # the runner's attestation (recorded since the arms work) names it too
        assert "arm_isolation.discoverable names the skill under test" in reasons and attested == 2
    assert len(found) == 3 + len(observed) + attested  # installed, digest, activated, one per file read, attestation


@pytest.mark.parametrize("arm", ["baseline", "docs"])
@pytest.mark.parametrize("poison", ["installed", "unattested", "activated", "file_read", "tool_call", "observed", "digest"])
def test_each_contamination_signal_alone_fails_a_control_bundle(arm, poison):
    meta, events = clean_baseline()
    meta["arm"] = arm
    if poison == "installed":
        meta["extra"]["installed_skills"] = ["abi-release-matrix", SKILL]
    elif poison == "unattested":
        del meta["extra"]["installed_skills"]
    elif poison == "activated":
        events.append({"type": "skill_activated", "skill": SKILL, "tier": "1"})
    elif poison == "file_read":
        events.append({"type": "skill_file_read", "skill": SKILL, "path": "SKILL.md"})
    elif poison == "tool_call":
        events.append({"type": "tool_call", "id": "x", "tool": "Bash",
                       "input": {"command": f"cat /repo/.claude/skills/{SKILL}/SKILL.md"}})
    elif poison == "observed":
        meta["observed_inputs"].append({"path": f".claude/skills/{SKILL}/references/x.md", "sha256": "0" * 64})
    elif poison == "digest":
        meta["digests"][f"skill:{SKILL}"] = "0" * 64
    reasons = isolation.contamination(meta, events, published=PUBLISHED)
    assert len(reasons) == 1, reasons
    assert arm in reasons[0]


def test_a_sibling_skill_in_a_baseline_is_not_contamination_by_the_skill_under_test():
    meta, events = clean_baseline()
    meta["extra"]["installed_skills"] = ["abi-release-matrix"]
    events.append({"type": "skill_activated", "skill": "abi-release-matrix", "tier": "1"})
    assert isolation.contamination(meta, events, published=PUBLISHED) == []


def test_an_activation_of_a_skill_the_control_did_not_install_is_contamination():
    """Issue 34: a baseline/docs run installs no skill, so any activation it records is either a skill found
    outside what the runner installed or a fact that cannot be true; neither run is a clean control."""
    meta, events = clean_baseline()
    assert meta["extra"]["installed_skills"] == [] and isolation.contamination(meta, events, published=PUBLISHED) == []
    for event in ({"type": "skill_activated", "skill": "abi-release-matrix", "tier": "2"},
                  {"type": "skill_file_read", "skill": "some-stray-skill", "path": "references/x.md"}):
        reasons = isolation.contamination(meta, [*events, event], published=PUBLISHED)
        assert len(reasons) == 1 and f"{event['skill']!r}, which the baseline run did not install" in reasons[0], reasons
