"""Arm isolation, checked from the bundle: a control arm must not have seen the skill under test.

A `baseline` or `docs` run exists to answer "what does the agent do *without* this skill?". If
the skill was installed where the agent could discover it, activated, or read off disk, the
comparison measures the skill against itself and the lift collapses towards zero (peers found
baselines that loaded 77 skills, or read SKILL.md straight from the repository). So a control
bundle fails as contaminated on any of:

- meta `extra.installed_skills` names the skill (the runner offered it), or is absent (the
  bundle does not attest what was installed: unprovable isolation fails closed);
- meta `digests` holds `skill:<skill>` (the runner hashed that skill's tree into this run);
- an `observed_inputs` path lies inside `<published root>/<skill>/` (the runner read its bytes);
- a `skill_activated` or `skill_file_read` event names the skill (the agent reached it), or any other
  skill `extra.installed_skills` does not list: a control arm installs no skill, so such an activation is
  either a skill the agent found outside what the runner installed or a recorded fact that cannot be
  true — neither is a control (issue 34);
- a `tool_call` input mentions `<skill>/SKILL.md` (the agent went looking for it by path);
- meta `arm_isolation` (the runner's attestation) lists a discoverable or read file of the skill.

Pure functions over already-parsed data, so the evidence gate and the scorecard share one rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

CONTROL_ARMS = ("baseline", "docs")


def is_control(arm: str | None) -> bool:
    return arm in CONTROL_ARMS


def contamination(meta: Mapping[str, Any], events: Iterable[Mapping[str, Any]], *,
                  published: Sequence[str] = (), skill: str | None = None) -> list[str]:
    """Reasons this bundle's control arm saw the skill under test; [] when clean or not a control arm.

    `skill` defaults to meta's own skill (behavioural bundles); `published` are the configured
    published skill roots (e.g. `.agents/skills`), used to recognise reads of the skill's files.
    """
    arm = meta.get("arm")
    skill = skill or meta.get("skill")
    if not is_control(arm) or not skill:
        return []
    reasons: list[str] = []
    extra = raw_extra if isinstance(raw_extra := meta.get("extra"), Mapping) else {}
    installed = extra.get("installed_skills")
    if not isinstance(installed, list):
        reasons.append(f"{arm} bundle does not attest its installed skills (meta extra.installed_skills missing): "
                       "isolation from the skill under test cannot be shown")
    elif skill in installed:
        reasons.append(f"{arm} run installed the skill under test {skill!r} (extra.installed_skills)")
    if f"skill:{skill}" in (meta.get("digests") or {}):
        reasons.append(f"{arm} run's digests include skill:{skill}: the runner hashed the skill into this run")
    for entry in meta.get("observed_inputs") or ():
        path = str(entry.get("path", "")) if isinstance(entry, Mapping) else ""
        if any(path.startswith(f"{root.rstrip('/')}/{skill}/") for root in published):
            reasons.append(f"{arm} run's runner read {path} (a file of the skill under test)")
    attested = raw_attested if isinstance(raw_attested := meta.get("arm_isolation"), Mapping) else {}
    for field in ("discoverable", "read"):
        hits = [str(p) for p in attested.get(field) or () if str(p).split("/", 1)[0] == skill]
        if hits:
            reasons.append(f"{arm} run's arm_isolation.{field} names the skill under test: {', '.join(hits[:3])}")
    needle = f"{skill}/SKILL.md"
    for i, ev in enumerate(events, start=1):
        kind = ev.get("type")
        named = ev.get("skill")
        if kind in ("skill_activated", "skill_file_read") and (named == skill or not isinstance(installed, list)
                                                                or named not in installed):
            what = "activated" if kind == "skill_activated" else f"read {ev.get('path')!r} of"
            whose = "the skill under test" if named == skill else "the skill"
            reasons.append(f"{arm} agent {what} {whose} {named!r}, which the {arm} run did not install "
                           f"(events.jsonl line {i})")
        elif kind == "tool_call" and needle in repr(ev.get("input")):
            reasons.append(f"{arm} agent's tool call {ev.get('id')!r} names {needle} (events.jsonl line {i})")
    return reasons
