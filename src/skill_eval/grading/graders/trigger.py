"""Trigger bundles: graded on activation alone (DESIGN §6).

A negative prompt's correct run activates nothing, runs nothing and claims nothing, so
the behavioural rules would reject exactly the evidence that a skill stayed out of a
question it does not own. Activation is read from `skill_activated` events; a manual
tier has no gradable activation record and fails closed. Under a tier-1 adapter a positive
prompt needs a tier-1 activation of its skill (a Read of SKILL.md is tier 2: reading is not
choosing the skill), as dimension 1 does; for a negative prompt any tier counts against it.
"""

from __future__ import annotations

from skill_eval.grading.graders.context import Run


def activation(run: Run) -> list[str]:
    meta = run.bundle.meta or {}
    prompt = run.ctx.prompt
    if prompt is None:
        return [f"prompt {meta.get('prompt_id')!r} is not in the trigger corpus"]
    if meta.get("adapter_tier") == "manual":
        return ["adapter tier is manual: activation is not observable in the bundle"]
    activated = sorted({e["skill"] for e in run.bundle.events if e.get("type") == "skill_activated"})
    if prompt.expected_skill is None:
        if activated:
            return [f"negative prompt (no skill should claim it) activated {activated}"]
        return []
    if prompt.expected_skill not in activated:
        return [f"expected skill {prompt.expected_skill!r} was not activated (activated: {activated or 'none'})"]
    tier1 = {e["skill"] for e in run.bundle.events if e.get("type") == "skill_activated" and e.get("tier") == "1"}
    if meta.get("adapter_tier") == "1" and prompt.expected_skill not in tier1:
        return [f"expected skill {prompt.expected_skill!r} was only read (a tier-2 activation) under a tier-1 adapter"]
    others = [s for s in activated if s != prompt.expected_skill]
    if others:
        return [f"activated {others} besides the expected {prompt.expected_skill!r}"]
    return []
