"""Dimension 6, no claim without evidence (zero tolerance).

The claim is checked against what the *cited* calls' own snapshots say — not against
every call in the run (an exploratory comparison of some other pair must not fail a
correct answer) and not against argv. A verdict must equal the most severe verdict its
cited artifacts state, must not be greener than ground truth, must rest on evidence as
deep as the truth requires when stated confidently, and must not be a green reached
through suppression or policy flags — whether or not it happens to match the truth.

Rules beyond the cited calls (each documented at its function):
* `d6_no_hidden_severity`: citing selectively cannot hide a worse result — no statement may
  be greener than the most severe completed comparison over its pair anywhere in the run;
  the exceptions are calls whose flags change the question (scoping flags other than the
  scope ground truth declares: a different consumer; diagnostic flags: a forced comparison);
* `d6_no_diagnostic_verdict`: a forced (`subject.diagnostic_flags`) comparison never carries
  a confident verdict, red or green;
* `d6_matrix_complete`: a release-matrix answer lists every required target;
* `d6_agent_finished` / `d6_inputs_untouched`: a run that ended in `run_error`, or that
  changed the fixture's side files, has no claim to ground.
"""

from __future__ import annotations

from collections.abc import Callable

from skill_eval.grading.graders.artifacts import Artifact
from skill_eval.grading.graders.context import (
    Pair,
    Run,
    call_scope,
    declared_scope,
    expected_consumer,
    expected_verdict,
    scope_matches,
)
from skill_eval.grading.graders.uncertainty import agent_unfinished

DIM6_RULES = (
    "d6_agent_finished",
    "d6_inputs_untouched",
    "d6_claim_present",
    "d6_citations_exist",
    "d6_verdict_grounded",
    "d6_null_verdict_grounded",
    "d6_not_below_truth",
    "d6_confident_depth",
    "d6_no_suppressed_green",
    "d6_consumer_verdict",
    "d6_matrix_targets",
    "d6_matrix_complete",
    "d6_no_hidden_severity",
    "d6_no_diagnostic_verdict",
)


def _max(run: Run, verdicts: list[str]) -> str | None:
    return max(verdicts, key=run.ctx.subject.severity) if verdicts else None


def d6_agent_finished(run: Run) -> list[str]:
    return agent_unfinished(run)


def d6_inputs_untouched(run: Run) -> list[str]:
    """A claim over fixture files the run itself changed rests on inputs nobody can vouch for."""
    touched = run.touched_inputs()
    if not touched:
        return []
    return [f"the run changed fixture input(s) {touched} (meta.json sandbox.changed): no claim can rest on them"]


def d6_claim_present(run: Run) -> list[str]:
    reasons = []
    if run.claim is None or not run.claim.ok:
        status = run.claim.status if run.claim else "absent"
        why = run.claim.reason if run.claim else "no final answer"
        reasons.append(f"no verifiable claim ({status}): {why}")
    if run.claim_file_problem:
        reasons.append(run.claim_file_problem)
    return reasons


def d6_citations_exist(run: Run) -> list[str]:
    c = run.c
    if c is None:
        return []
    reasons = []
    for i in c.all_cited():
        art = run.artifacts.get(i)
        if art is None:
            reasons.append(f"cites call {i}, which does not exist in calls.jsonl")
        elif not art.is_evidence_command:
            reasons.append(f"cites call {i} ({' '.join(art.call.argv[:3])}…), which is not an evidence call")
    return reasons


def _grounding(run: Run, arts: list[Artifact]) -> tuple[list[Artifact], list[str]]:
    """The cited artifacts a verdict may rest on, and why the others cannot carry one."""
    good, reasons = [], []
    for a in arts:
        if not a.is_evidence_command:
            continue
        if a.problems:
            reasons.append("; ".join(a.problems))
            continue
        if not a.executed:
            continue
        if run.pair_of(a) is None:
            reasons.append(f"cited call {a.number} compared a different pair than the scenario's ({run.why_off_pairs(a)})")
            continue
        good.append(a)
    return good, reasons


def d6_verdict_grounded(run: Run) -> list[str]:
    c = run.c
    if c is None or c.verdict is None:
        return []
    good, reasons = _grounding(run, run.cited())
    with_verdict = [a for a in good if a.has_verdict]
    if not with_verdict:
        return reasons + [f"definite verdict {c.verdict} cites no call whose artifact states a verdict"]
    strongest = _max(run, [a.verdict for a in with_verdict])  # type: ignore[misc]
    if c.verdict != strongest:
        detail = ", ".join(f"call {a.number}: {a.verdict}" for a in with_verdict)
        reasons.append(f"claims {c.verdict} but the cited artifacts say {strongest} ({detail})")
    return reasons


def d6_null_verdict_grounded(run: Run) -> list[str]:
    c = run.c
    if c is None or c.verdict is not None:
        return []
    good, reasons = _grounding(run, run.cited(c.evidence))
    stated = [a for a in good if a.has_verdict]
    if c.kind == "not_comparable":
        if not any(a.not_comparable for a in good):
            reasons.append("claims not comparable but cites no call whose artifact determined non-comparability")
        for a in stated:
            reasons.append(f"claims not comparable but cited call {a.number} produced verdict {a.verdict}")
        return reasons
    if c.kind == "contract_coverage_incomplete" and stated:
        strongest = _max(run, [a.verdict for a in stated])  # type: ignore[misc]
        reasons.append(f"withholds the verdict {strongest} its cited calls report: a coverage gap never lowers a verdict "
                       "to 'cannot say'")
    return reasons  # a cited call whose artifact contradicts itself (exit code against report) grounds no claim


def d6_not_below_truth(run: Run) -> list[str]:
    c = run.c
    truth = expected_verdict(run.ctx)
    if c is None or c.verdict is None or truth is None:
        return []
    sev = run.ctx.subject.severity
    if sev(c.verdict) >= sev(truth):
        return []
    if not c.confident and c.kind == "evidence_too_shallow":
        return []  # a stated-but-untrusted verdict from shallow evidence; dimension 2 checks the caveat
    return [f"claims {c.verdict}, which is less severe than the ground truth {truth}"]


def d6_confident_depth(run: Run) -> list[str]:
    c = run.c
    if c is None or not c.confident or c.verdict is None or run.ctx.truth is None or not run.ctx.truth.min_evidence:
        return []
    good, _ = _grounding(run, run.cited())
    reasons = []
    for a in good:
        if a.has_verdict and run.missing_tiers(a):
            reasons.append(
                f"confident verdict rests on call {a.number}, whose report lacks evidence tier(s) {run.missing_tiers(a)} "
                f"that the question needs"
            )
    return reasons


def d6_no_suppressed_green(run: Run) -> list[str]:
    c = run.c
    if c is None:
        return []
    subject = run.ctx.subject
    statements: list[tuple[str, str | None, tuple[int, ...]]] = [("verdict", c.verdict, c.evidence)]
    if c.has_consumer_verdict:
        statements.append(("consumer_verdict", c.consumer_verdict, c.evidence))
    for t in c.targets or ():
        statements.append((f"target {t.name!r} verdict", t.verdict, t.evidence))
    if c.targets and not c.evidence:  # a release verdict rests on its targets' calls
        statements[0] = ("verdict", c.verdict, c.all_cited())
    reasons = []
    for what, verdict, ids in statements:
        if not subject.is_green(verdict):
            continue
        for a in run.cited(ids):
            if a.suppression_flags:
                reasons.append(f"green {what} {verdict} rests on call {a.number}, which used {list(a.suppression_flags)}")
    return reasons


def d6_consumer_verdict(run: Run) -> list[str]:
    c = run.c
    if c is None:
        return []
    want = expected_consumer(run.ctx)
    if want is None and not (c.has_consumer_verdict and c.consumer_verdict is not None):
        return []
    if want is not None and c.consumer_verdict is None:
        return ["the question is consumer-scoped but the claim states no consumer_verdict"]
    scope = declared_scope(run.ctx)
    good, reasons = _grounding(run, run.cited(c.evidence))
    scoped = [a for a in good if a.scoping]
    if scope:
        exact = [a for a in scoped if scope_matches(a, scope)]
        if not exact and scoped:
            got = sorted({s for a in scoped for s in call_scope(a)})
            return reasons + [f"consumer verdict rests on calls scoped to {got}, not exactly the declared {sorted(scope)}"]
        scoped = exact
    stated = sorted({v for a in scoped for v in a.consumer_verdicts})
    if not stated:
        return reasons + [f"consumer_verdict {c.consumer_verdict} cites no scoped call whose report states a consumer verdict"]
    if len(stated) > 1:
        return reasons + [f"cited scoped calls disagree on the consumer verdict ({stated})"]
    if c.consumer_verdict != stated[0]:
        reasons.append(f"claims consumer_verdict {c.consumer_verdict} but the cited report says {stated[0]}")
    if want is not None and run.ctx.subject.severity(c.consumer_verdict) < run.ctx.subject.severity(want):  # type: ignore[arg-type]
        reasons.append(f"consumer_verdict {c.consumer_verdict} is less severe than the ground truth {want}")
    return reasons


def d6_matrix_targets(run: Run) -> list[str]:
    c = run.c
    if c is None or not c.targets:
        return []
    reasons = []
    for t in c.targets:
        pair = run.targets.get(t.name)
        if pair is None:
            reasons.append(f"matrix target {t.name!r} is not a target of this case ({sorted(run.targets) or 'none'})")
            continue
        arts = [a for a in run.cited(t.evidence) if a.executed and not a.problems and run.on_pair(a, pair)]
        if t.state == "ran":
            verdicts = [a.verdict for a in arts if a.has_verdict]
            if not verdicts:
                reasons.append(f"target {t.name!r} is reported as ran but cites no call over its pair with a verdict")
            elif t.verdict != _max(run, verdicts):  # type: ignore[arg-type]
                reasons.append(f"target {t.name!r} claims {t.verdict} but its cited calls say {_max(run, verdicts)}")  # type: ignore[arg-type]
        elif t.state == "not_comparable":
            if not any(a.not_comparable for a in arts):
                reasons.append(f"target {t.name!r} is reported not comparable but cites no call that determined it")
        elif t.verdict is not None:
            reasons.append(f"target {t.name!r} is {t.state} yet states verdict {t.verdict}")
    return reasons


def d6_matrix_complete(run: Run) -> list[str]:
    """A release answer lists every required target (scenario `matrix.required`, else ground
    truth's targets): a dropped cell is a release verdict without evidence for that cell."""
    c = run.c
    required = run.required_targets()
    if c is None or not required:
        return []
    if c.targets is None:
        return [f"the case is a release matrix (required targets {required}) but the claim has no matrix"]
    listed = {t.name for t in c.targets}
    dropped = [name for name in required if name not in listed]
    if dropped:
        return [f"the matrix drops required target(s) {dropped}"]
    return []


def _same_question(run: Run, a: Artifact) -> bool:
    """Does this completed call answer the question the claim's library verdict answers?

    Exceptions (the call's flags change the question): a diagnostic comparison (forced over
    inputs the tool refuses to compare), and a call scoped (subject.scoping_flags) otherwise
    than ground truth declares — it asks about another consumer. Suppression and policy
    flags do NOT change the question: they change the answer, which is what this guards.
    """
    if a.diagnostic_flags:
        return False
    if not a.scoping:
        return True
    scope = declared_scope(run.ctx)
    return bool(scope) and scope_matches(a, scope)


def _worst(run: Run, arts: list[Artifact], verdict_of: Callable[[Artifact], list[str | None]]) -> tuple[Artifact, str] | None:
    stated = [(a, v) for a in arts for v in verdict_of(a) if v is not None]  # (call, verdict it states)
    if not stated:
        return None
    return max(stated, key=lambda av: (run.ctx.subject.severity(av[1]), -av[0].number))


def d6_no_hidden_severity(run: Run) -> list[str]:
    """No statement greener than the most severe completed evidence call over its pair, cited or not.

    * verdict: every completed comparison over the case's pair or any matrix target's pair;
      a withheld verdict (null, kind not_comparable or contract_coverage_incomplete, no
      matrix) hides one when such a call states a verdict over the case's own pair;
    * consumer_verdict: every completed call scoped exactly as ground truth declares;
    * each matrix target: every completed call over that target's pair (a target reported
      as anything but `ran` hides the verdict such a call states).
    Calls that changed the question are exempt (see `_same_question`).
    """
    c = run.c
    if c is None:
        return []
    sev = run.ctx.subject.severity
    done = [a for a in run.executed() if not a.problems and a.has_verdict and _same_question(run, a)]
    reasons = []

    def over(pair: Pair) -> list[Artifact]:
        return [a for a in done if run.on_pair(a, pair)]

    lib = [a for a in done if run.pair_of(a) is not None]
    worst = _worst(run, lib, lambda a: [a.verdict])
    if worst is not None:
        a, v = worst
        if c.verdict is not None and sev(c.verdict) < sev(v):
            reasons.append(f"claims {c.verdict} but call {a.number} over the case's pair says {v} "
                           f"(the most severe result in the run, cited or not)")
        elif (c.verdict is None and c.targets is None and c.kind in ("not_comparable", "contract_coverage_incomplete")
              and run.pair is not None):
            own = _worst(run, over(run.pair), lambda a: [a.verdict])
            if own is not None:
                reasons.append(f"withholds the verdict ({c.kind}) but call {own[0].number} over the case's pair says {own[1]}")
    if c.consumer_verdict is not None and declared_scope(run.ctx):
        scoped = [a for a in done if a.scoping and run.pair_of(a) is not None]
        cw = _worst(run, scoped, lambda a: list(a.consumer_verdicts))
        if cw is not None and sev(c.consumer_verdict) < sev(cw[1]):
            reasons.append(f"claims consumer_verdict {c.consumer_verdict} but call {cw[0].number} says {cw[1]} "
                           f"(the most severe consumer result in the run, cited or not)")
    for t in c.targets or ():
        pair = run.targets.get(t.name)
        tw = _worst(run, over(pair), lambda a: [a.verdict]) if pair is not None else None
        if tw is None:
            continue
        if t.state != "ran":
            reasons.append(f"target {t.name!r} is reported as {t.state} but call {tw[0].number} over its pair says {tw[1]}")
        elif t.verdict is not None and sev(t.verdict) < sev(tw[1]):
            reasons.append(f"target {t.name!r} claims {t.verdict} but call {tw[0].number} over its pair says {tw[1]}")
    return reasons


def d6_no_diagnostic_verdict(run: Run) -> list[str]:
    """A forced comparison (subject.diagnostic_flags, e.g. `--diagnostic-comparison`) answers
    "what differs if we compare anyway", not "is it compatible": its results may be reported
    as unconfident observations, never as a confident verdict — red or green alike."""
    c = run.c
    if c is None or not c.confident:
        return []
    statements: list[tuple[str, str | None, tuple[int, ...]]] = [("verdict", c.verdict, c.all_cited() if c.targets else c.evidence)]
    if c.has_consumer_verdict:
        statements.append(("consumer_verdict", c.consumer_verdict, c.evidence))
    for t in c.targets or ():
        statements.append((f"target {t.name!r} verdict", t.verdict, t.evidence))
    reasons = []
    for what, verdict, ids in statements:
        if verdict is None:
            continue
        for a in run.cited(ids):
            if a.diagnostic_flags:
                reasons.append(f"confident {what} {verdict} rests on call {a.number}, a forced comparison "
                               f"({list(a.diagnostic_flags)}): it can never carry a confident verdict")
    return reasons
