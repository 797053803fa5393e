"""Whole-run facts the runner recorded, held together before a bundle can pass its `bundle` check (issue 34 item 7).

The graders read what the recorder records. Two facts about the whole run are read here, for every kind
of bundle (behavioural, trigger and control arms alike):

- **A `run_error` event**: the agent did not finish. The runner seals such a run `error` or `incomplete`,
  so a bundle whose meta says `complete` while its events hold one is inconsistent — incomplete, never a
  pass. The one case the runner itself records so is its own stop: a trigger run stopped once an activation
  was observed (meta `extra.stopped_on_activation` true and usage `stop_reason` `activation_observed`, both
  sealed) ends with the cut-off stream's `incomplete_stream` / `agent_error` run_error, after that activation.
  Anything else — another kind, a run_error before any activation, a run the runner did not stop — fails.
- **An activation or read of a skill the run did not install** (`extra.installed_skills`, which the runner
  writes for every run): the agent reached a skill from somewhere the runner did not put it, or the event is
  a fact that cannot be true. Either way the run is not the run its arm describes. (Control arms also fail
  isolation for it: `grading.isolation`.)

- **Every call's stdout/stderr digest** is the digest of the stream the bundle holds, whether or not a grader
  reads that stream (a compacted stream's digest is its object's name, verified when read): a record that
  says other bytes were printed than the ones captured contradicts itself.

Functions of the loaded bundle; `graders.grade_bundle` adds their reasons to the `bundle` check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from skill_eval.core import stored
from skill_eval.core.errors import SkillEvalError, message_of
from skill_eval.grading.bundle import Bundle

ACTIVATION_STOP = "activation_observed"  # usage.stop_reason of a trigger run the runner stopped on activation
STOP_ERRORS = ("incomplete_stream", "agent_error")  # what cutting off the agent's stream leaves (runner.execute)
SKILL_EVENTS = ("skill_activated", "skill_file_read")


def run_error_problems(meta: Mapping[str, Any], usage: Mapping[str, Any] | None,
                       events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Why a `complete` bundle's run_error events make it incomplete ([] when it has none, or only the
    runner's own stop of a trigger run after an observed activation). A bundle whose meta is not `complete`
    already fails on its status."""
    if meta.get("status") != "complete":
        return []
    stopped = _stopped_on_activation(meta, usage)
    activated = False
    excused: set[str] = set()
    problems: list[str] = []
    for line, ev in enumerate(events, start=1):
        kind = ev.get("type")
        if kind == "skill_activated":
            activated = True
        if kind != "run_error":
            continue
        reason = str(ev.get("reason", ""))
        stop = reason.split(":", 1)[0]
        if stopped and activated and stop in STOP_ERRORS and stop not in excused:
            excused.add(stop)  # the runner cut the stream off itself, once the activation it waited for was recorded:
            continue           # the parser reports that once per kind (EventBuilder.error), never twice
        problems.append(f"events.jsonl line {line} records run_error ({reason[:200]}) but meta.json status is "
                        f"'complete': a run that ended in an error is incomplete evidence, never a pass")
    return problems


def _stopped_on_activation(meta: Mapping[str, Any], usage: Mapping[str, Any] | None) -> bool:
    extra = meta.get("extra")
    return (meta.get("kind") == "trigger" and isinstance(extra, Mapping) and extra.get("stopped_on_activation") is True
            and isinstance(usage, Mapping) and usage.get("stop_reason") == ACTIVATION_STOP)


def outcome_problems(meta: Mapping[str, Any]) -> list[str]:
    """meta v2's `outcome` is derived from `status` by one rule (core.outcomes.derive): a run is `completed`
    exactly when it is sealed `complete`. Anything else is a contradiction between two recorded facts."""
    outcome, status = meta.get("outcome"), meta.get("status")
    if outcome is not None and (status == "complete") != (outcome == "completed"):
        return [f"meta.json: outcome {outcome!r} contradicts status {status!r} (a run is 'completed' exactly when it "
                "is sealed 'complete')"]
    return []


def origin_problems(meta: Mapping[str, Any]) -> list[str]:
    """An imported trial (`extra.origin`, graded by its verifier: graders.imported) is always a behavioural
    bundle: `import harbor` writes no trigger bundle, so a trigger bundle claiming an origin is inconsistent."""
    extra = meta.get("extra")
    if meta.get("kind") == "trigger" and isinstance(extra, Mapping) and "origin" in extra:
        return [f"meta.json: a trigger bundle names an import origin {extra['origin']!r}; imports are behavioural "
                "bundles only (re-record it)"]
    return []


def uninstalled_skill_problems(meta: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Activations and reads of a skill `extra.installed_skills` does not list. A bundle that does not attest
    its installed skills (golden bundles, imports) is not judged here: control arms fail isolation for it."""
    extra = meta.get("extra")
    installed = extra.get("installed_skills") if isinstance(extra, Mapping) else None
    if not isinstance(installed, list):
        return []
    problems: list[str] = []
    for line, ev in enumerate(events, start=1):
        if ev.get("type") in SKILL_EVENTS and ev.get("skill") not in installed:
            what = "an activation of" if ev.get("type") == "skill_activated" else "a read of"
            problems.append(f"events.jsonl line {line} records {what} skill {ev.get('skill')!r}, which this run did "
                            f"not install (extra.installed_skills: {sorted(map(str, installed)) or 'none'})")
            if len(problems) >= 3:
                break
    return problems


def stream_problems(b: Bundle) -> list[str]:
    """Calls whose recorded stdout/stderr digest is not the digest of the captured stream (read and hashed when it
    is plain; a compacted one is the object its objects.json names, which is read through that very digest)."""
    problems: list[str] = []
    try:
        index = stored.index_of(b.root)
    except SkillEvalError:
        return []  # objects.json itself is a problem of its own (the seal names it)
    for call in b.calls:
        for ref in (call.stdout, call.stderr):
            if ref is None:
                continue
            listed = index.get(ref.path)
            if listed is not None:
                if listed != ref.sha256:
                    problems.append(f"call {call.call}: {ref.path}: sha256 does not match the call record (the stream "
                                    "captured is not the one recorded)")
                continue
            try:
                b.read_captured(ref.path, ref.sha256)
            except SkillEvalError as exc:
                problems.append(f"call {call.call}: {message_of(exc)}")
    return problems
