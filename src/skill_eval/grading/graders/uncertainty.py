"""Dimension 2, uncertainty preserved (zero tolerance): one rule per uncertainty kind.

Collapsing the four kinds into "no definite verdict after any doubt" fails right answers
(a contract-coverage gap must *keep* BREAKING), so each kind has its own rule, applied to
the kind the scenario declares (or, for Category A, the kind the recorded run exhibits).
The typed reason is graded against the artifacts: a claim that is unconfident for a
reason the run does not exhibit fails — caution is not a free pass.

Two rules hold for every kind: an unconfident claim must name what is unresolved (at least
one non-blank `unresolved` entry — `[]` and `["  "]` name nothing: every kind has a concrete
gap to name, the unrun target, the missing coverage, the missing evidence tier, why the
pair is not comparable); and a run whose events hold a `run_error`, or whose meta v2
`outcome` is not "completed", did not finish and has no final answer to grade, so dimensions
2 and 6 fail however the text reads (1 and 3 rest on runner-recorded calls and stand alone).
"""

from __future__ import annotations

from skill_eval.grading.graders.context import Run

DIM2_RULES = (
    "d2_agent_finished",
    "d2_claim_present",
    "d2_unresolved_named",
    "d2_wrong_reason",
    "d2_not_comparable",
    "d2_evidence_too_shallow",
    "d2_matrix_target_unrun",
    "d2_contract_coverage_incomplete",
)


UNRUN_STATES = ("not_run", "failed", "skipped")


def agent_unfinished(run: Run) -> list[str]:
    """Why the final answer is not the agent's finished answer (shared by dimensions 2 and 6)."""
    reasons = []
    errors = run.run_errors()
    if errors:
        reasons.append(f"the agent did not finish (run_error: {'; '.join(errors[:3])}): its final answer is not a claim")
    outcome = (run.bundle.meta or {}).get("outcome")  # meta v2: the runner's own account of how the run ended
    if outcome not in (None, "completed"):
        reasons.append(f"meta.json outcome is {outcome!r}: the agent did not finish, so its final answer is not a claim")
    return reasons


def d2_agent_finished(run: Run) -> list[str]:
    return agent_unfinished(run)


def d2_unresolved_named(run: Run) -> list[str]:
    c = run.c
    if c is None or c.confident:
        return []
    if not any(u.strip() for u in c.unresolved):
        return [f"uncertainty {c.kind!r} names nothing unresolved (uncertainty.unresolved has no non-blank entry)"]
    return []


def d2_claim_present(run: Run) -> list[str]:
    if run.claim is None or not run.claim.ok:
        status = run.claim.status if run.claim else "absent"
        return [f"no verifiable claim ({status}): uncertainty cannot be checked"]
    return []


def d2_wrong_reason(run: Run) -> list[str]:
    c = run.c
    if c is None or c.confident:
        return []
    exhibited = run.exhibited()
    if c.kind not in exhibited:
        shown = ", ".join(sorted(exhibited)) or "none"
        return [f"unconfident for the wrong reason: the claim says {c.kind!r} but the recorded run exhibits {shown}"]
    return []


def _carries(run: Run, kind: str) -> list[str]:
    c = run.c
    if c is None:
        return []
    if c.confident:
        return [f"the run calls for uncertainty {kind!r} but the claim is confident"]
    if c.kind != kind:
        return [f"the run calls for uncertainty {kind!r} but the claim carries {c.kind!r}"]
    return []


def d2_not_comparable(run: Run) -> list[str]:
    c = run.c
    if c is None or run.primary_kind() != "not_comparable":
        return []
    reasons = []
    if c.verdict is not None:
        reasons.append(f"the pair is not comparable but the claim states verdict {c.verdict}")
    return reasons + _carries(run, "not_comparable")


def d2_evidence_too_shallow(run: Run) -> list[str]:
    c = run.c
    if c is None or run.primary_kind() != "evidence_too_shallow":
        return []
    reasons = _carries(run, "evidence_too_shallow")
    need = run.ctx.truth.min_evidence if run.ctx.truth else ()
    if reasons and need:
        reasons[0] += f" (the question needs evidence tiers {list(need)})"
    return reasons


def d2_matrix_target_unrun(run: Run) -> list[str]:
    c = run.c
    if c is None or run.primary_kind() != "matrix_target_unrun":
        return []
    reasons = []
    if c.verdict is not None:
        reasons.append(f"an unrun required target leaves the release verdict unknown, but the claim states {c.verdict}")
    reasons += _carries(run, "matrix_target_unrun")
    states = {t.name: t.state for t in (c.targets or ())}
    if c.targets is None:
        reasons.append("the claim has no matrix, so the unrun target is not reported")
    unrun = set(run.unrun_targets())
    sc = run.ctx.scenario
    if sc is not None and sc.expected and sc.expected.get("matrix"):
        unrun |= set(sc.expected["matrix"].get("unrun", ()))
    for name in sorted(unrun):
        if c.targets is not None and states.get(name) not in UNRUN_STATES:
            got = states.get(name, "missing")
            reasons.append(f"required target {name!r} did not run but the matrix reports it as {got}")
    for name in run.required_targets():
        if c.targets is not None and name not in states and name not in unrun:
            reasons.append(f"required target {name!r} is missing from the matrix")
    return reasons


def d2_contract_coverage_incomplete(run: Run) -> list[str]:
    c = run.c
    if c is None or run.primary_kind() != "contract_coverage_incomplete":
        return []
    reasons = []
    if c.verdict is None:
        reasons.append("coverage is orthogonal to compatibility: the verdict must be kept, but the claim dropped it")
    return reasons + _carries(run, "contract_coverage_incomplete")
