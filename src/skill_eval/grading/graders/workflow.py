"""Dimensions 1 (workflow chosen) and 3 (evidence obtained): the baseline-gated ones.

Dimension 1 reads the activation record (events.jsonl, tier 1 only — under tier 2 or a
manual tier the argv half stands alone, as DESIGN §9.2 says; under a tier-1 adapter only a
tier-1 `skill_activated` counts: a plain Read of SKILL.md is tier 2 and is not the agent
choosing the skill through the activation tool) and the recorded argv
against the scenario's invocation class, including the exact scope ground truth was
measured with (`--used-by app/app` is not satisfied by `--used-by app`, nor by a name
that merely contains it). Dimension 3 requires at least one comparison that really ran
over the fixture's own two files, proven by the report's side digests and the runner's
input digests, and that the run left those files untouched (meta.json `sandbox.changed`).
Only calls that can carry evidence at all (artifacts.call_problems) show a workflow: a
killed, unfinished or unrecorded-input call proves nothing about what was run.
"""

from __future__ import annotations

from skill_eval.grading.graders.artifacts import FlagSet, call_problems, non_executing, subcommand
from skill_eval.grading.graders.context import Run, call_scope, declared_scope, scope_matches

# Arms whose agent is offered the skill through progressive disclosure, so tier-1
# activation is observable and required.
ACTIVATING_ARMS = ("skill-agent",)

DIM1_RULES = ("d1_activation", "d1_invocation_class")
DIM3_RULES = ("d3_calls_recorded", "d3_evidence_over_pair", "d3_inputs_untouched")


def _arm_activates(arm: str) -> bool:
    return arm in ACTIVATING_ARMS or arm.startswith("released:")


def d1_activation(run: Run) -> list[str]:
    meta = run.bundle.meta or {}
    sc = run.ctx.scenario
    if sc is None or meta.get("adapter_tier") != "1" or not _arm_activates(meta.get("arm", "")):
        return []
    events = [e for e in run.bundle.events if e.get("type") == "skill_activated"]
    activated = {e["skill"] for e in events}
    tier1 = {e["skill"] for e in events if e.get("tier") == "1"}
    reasons = []
    if sc.skill not in activated:
        reasons.append(f"skill {sc.skill!r} was never activated (activated: {sorted(activated) or 'none'})")
    elif sc.skill not in tier1:
        reasons.append(f"skill {sc.skill!r} was only read (a tier-2 activation) under a tier-1 adapter: "
                       f"the activation tool was never used")
    others = sorted(activated - {sc.skill})
    if others:
        reasons.append(f"activated other skill(s) {others} instead of / besides {sc.skill!r}")
    return reasons


def d1_invocation_class(run: Run) -> list[str]:
    sc = run.ctx.scenario
    if sc is None or (not sc.verdict and not sc.invocation_class):
        return []  # an oracle scenario without a class: dimension 1 is the activation half alone
    cls = run.ctx.subject.invocation_classes.get(sc.invocation_class)
    if cls is None:
        return [f"invocation class {sc.invocation_class!r} is not in the subject profile"]
    scope = declared_scope(run.ctx)
    if sc.verdict:
        evidence_calls = [a for a in run.artifacts.values() if a.is_evidence_command]
    else:  # a verdict-free subject has no evidence commands: any completed call of the subject shows the workflow
        evidence_calls = [a for a in run.artifacts.values() if a.is_subject_call and not _non_executing(a.call.argv)]
    candidates = [a for a in evidence_calls if not call_problems(a.call)]
    if not candidates:
        first = "; ".join(p for a in evidence_calls for p in call_problems(a.call)[:1])
        return [f"no completed {run.ctx.subject.name} {cls.command} call that carries evidence was recorded "
                f"(class {cls.name!r})" + (f": {first}" if first else "")]
    misses = []
    for art in candidates:
        argv = art.call.argv
        why: list[str] = []
        if subcommand(argv) != cls.command:
            why.append(f"command is {subcommand(argv)!r}, not {cls.command!r}")
        flags = FlagSet(argv)
        missing = [f for f in cls.require_all if not flags.has(f)]
        if missing:
            why.append(f"lacks {missing}")
        if cls.require_any and not any(flags.has(f) for f in cls.require_any):
            why.append(f"uses none of {list(cls.require_any)}")
        forbidden = [f for f in cls.forbid if flags.has(f)]
        if forbidden:
            why.append(f"uses forbidden {forbidden}")
        if scope and not scope_matches(art, scope):
            why.append(f"scope {sorted(call_scope(art))} is not exactly the declared {sorted(scope)}")
        if not why:
            return []
        misses.append(f"call {art.number}: " + "; ".join(why))
    return [f"no call matches invocation class {cls.name!r}: " + " | ".join(misses)]


def _non_executing(argv: tuple[str, ...]) -> bool:
    return non_executing(FlagSet(argv))


def d3_calls_recorded(run: Run) -> list[str]:
    if not run.bundle.calls:
        return ["calls.jsonl is empty: no evidence was obtained"]
    if not any(a.is_evidence_command for a in run.artifacts.values()):
        cmds = sorted(run.ctx.subject.evidence_commands)
        return [f"no call ran an evidence command {cmds} (help, dry-run and other commands do not count)"]
    return []


def d3_evidence_over_pair(run: Run) -> list[str]:
    if not run.bundle.calls or not any(a.is_evidence_command for a in run.artifacts.values()):
        return []  # reported by d3_calls_recorded
    if not run.pairs():
        return ["ground truth names no old/new pair to check the calls against"]
    executed = run.executed()
    if not executed:
        problems = [p for a in run.artifacts.values() for p in a.problems]
        return ["no evidence call ran to a result" + (f" ({'; '.join(problems[:3])})" if problems else "")]
    good = [a for a in executed if run.pair_of(a) is not None and not a.problems]
    if good and run.targets:
        # A release matrix needs one readable comparison per runnable required target.
        missing = [
            name for name in run.required_targets()
            if name in run.targets and run.targets[name].runnable
            and not any(run.on_pair(a, run.targets[name]) for a in good)
        ]
        if missing:
            return [f"no readable evidence call over runnable required target(s) {missing}"]
        return []
    if good:
        return []
    details = ["; ".join(a.problems) if a.problems else run.why_off_pairs(a) for a in executed]
    return ["no readable evidence call over the fixture's old/new pair: " + " | ".join(details)]


def d3_inputs_untouched(run: Run) -> list[str]:
    touched = run.touched_inputs()
    if not touched:
        return []
    return [f"the run changed fixture input(s) {touched} (meta.json sandbox.changed): evidence over them cannot be trusted"]
