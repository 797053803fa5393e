"""The closed vocabularies of skill-eval's records, each defined once as a `Literal` type.

Why: a status word is a contract between a writer (the runner, a grader, the release flow), a
schema that validates the record, and every reader that branches on it. Written as bare strings
in three places, a new word (or a typo) reaches one of them only; as a Literal, mypy (`nox -s
typecheck`) checks every writer and comparison against the one list, and
tests/core/test_vocab.py checks each schema enum that repeats a vocabulary against `get_args` here.
A leaf module: it imports only `typing`.
"""

from __future__ import annotations

from typing import Literal

# -- bundles (meta.json, calls.jsonl) ---------------------------------------------------------
BundleKind = Literal["behavioral", "trigger"]  # meta.kind, evidence_pending kind
BundleStatus = Literal["complete", "incomplete", "error"]  # meta.status: how the runner sealed the run
Outcome = Literal["completed", "agent_error", "infra_error", "budget_stop"]  # meta.outcome (v2): who ended the run
IsolationLevel = Literal["bwrap", "uid", "none"]  # meta.isolation (v2): the agent's OS sandbox, strongest first
CallStatus = Literal["provisional", "complete", "spawn_failed", "record_failed"]  # call record status
InputKind = Literal["file", "dir", "missing"]  # call record inputs[].kind
OutputKind = Literal["file", "dir", "stdout"]  # call record outputs[].kind
AdapterTier = Literal["1", "2", "manual"]  # meta.adapter_tier

# -- claims (final.md's envelope, claim.json) -------------------------------------------------
ClaimStatus = Literal["ok", "absent", "ambiguous", "invalid"]  # claim.json status
TargetState = Literal["ran", "not_run", "failed", "skipped", "not_comparable"]  # claim matrix target state
UncertaintyKind = Literal["not_comparable", "evidence_too_shallow", "matrix_target_unrun", "contract_coverage_incomplete"]

# -- grading ----------------------------------------------------------------------------------
CheckStatus = Literal["pass", "fail", "not_judged", "not_applicable"]  # a grade's check (dimension, oracle, ...)

# -- release flow (stage.json, worksheet, report.json) ----------------------------------------
GateStatus = Literal["pass", "fail", "skipped"]  # a credential-free gate recorded in the stage
RunState = Literal["pass", "fail", "incomplete"]  # one run of a release case
CaseState = Literal["complete", "fail", "incomplete"]  # a release case, or one of its arms
Comparison = Literal["better", "same", "worse", "candidate-only", "inconclusive"]  # the reviewer's answer
ReleaseOutcome = Literal["pass", "fail", "incomplete", "waived"]  # report.json outcome

# -- statistics (scorecard.json) --------------------------------------------------------------
LiftVerdict = Literal["LIFT", "REGRESSION", "NO_LIFT", "UNCALIBRATED", "INDETERMINATE", "INCONCLUSIVE", "ERROR"]
CalibrationStatus = Literal["ok", "INDETERMINATE", "INCONCLUSIVE", "ERROR"]  # an A/A calibration of one arm
