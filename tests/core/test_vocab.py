"""Each status vocabulary is defined once (skill_eval.core.vocab, a Literal type) and every schema enum
or code tuple that repeats one must equal it: a word added in one place only fails here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest

from skill_eval.core import outcomes, vocab
from skill_eval.grading.graders import context, uncertainty
from skill_eval.harness.adapters import ADAPTERS
from skill_eval.harness.runner import isolation
from skill_eval.reporting import lift

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"

# (schema file, JSON pointer to an `enum` list, the Literal it repeats)
SCHEMA_ENUMS = [
    ("meta", "/properties/kind/enum", vocab.BundleKind),
    ("meta", "/properties/status/enum", vocab.BundleStatus),
    ("meta", "/properties/outcome/enum", vocab.Outcome),
    ("meta", "/properties/isolation/enum", vocab.IsolationLevel),
    ("meta", "/properties/adapter_tier/enum", vocab.AdapterTier),
    ("evidence_pending", "/properties/pending/items/properties/kind/enum", vocab.BundleKind),
    ("call", "/properties/status/enum", vocab.CallStatus),
    ("call", "/$defs/input/properties/kind/enum", vocab.InputKind),
    ("call", "/$defs/output/properties/kind/enum", vocab.OutputKind),
    ("claim", "/properties/matrix/properties/targets/items/properties/state/enum", vocab.TargetState),
    ("claim", "/properties/uncertainty/properties/kind/enum", vocab.UncertaintyKind),
    ("scenarios", "/$defs/uncertainty/enum", vocab.UncertaintyKind),
    ("release_stage", "/properties/checks/items/properties/status/enum", vocab.GateStatus),
    ("release_stage", "/properties/snapshot/properties/cases/additionalProperties/properties/state/enum",
     vocab.CaseState),
    ("release_stage", "/properties/snapshot/properties/cases/additionalProperties/properties/arms/properties/"
     "candidate/properties/state/enum", vocab.CaseState),
    ("release_stage", "/properties/snapshot/properties/cases/additionalProperties/properties/arms/properties/"
     "candidate/properties/runs/items/properties/state/enum", vocab.RunState),
    ("release_report", "/properties/outcome/enum", vocab.ReleaseOutcome),
    ("release_report", "/properties/checks/items/properties/status/enum", vocab.GateStatus),
    ("release_report", "/properties/cases/items/properties/evidence/enum", vocab.CaseState),
    ("release_report", "/properties/cases/items/properties/candidate/enum", vocab.CaseState),
    ("release_report", "/properties/cases/items/properties/comparison/enum", vocab.Comparison),
    ("release_worksheet", "/properties/cases/items/properties/evidence/enum", vocab.CaseState),
    ("scorecard", "/$defs/lift/properties/verdict/enum", vocab.LiftVerdict),
    ("scorecard", "/$defs/aa/properties/status/enum", vocab.CalibrationStatus),
    ("scorecard", "/$defs/arm/properties/outcomes/propertyNames/enum", vocab.Outcome),
    ("proposal", "/properties/cases/items/properties/kind/enum", vocab.BundleKind),
    ("proposal", "/properties/agent/properties/isolation/enum", vocab.IsolationLevel),
]

# enums that also allow null (the field may be absent in meaning): the Literal plus None
NULLABLE_ENUMS = [
    ("release_report", "/properties/cases/items/properties/released/enum", vocab.CaseState),
    ("release_worksheet", "/properties/cases/items/properties/comparison/enum", vocab.Comparison),
]


def _at(doc: Any, pointer: str) -> Any:
    for part in pointer.strip("/").split("/"):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def _schema(name: str) -> Any:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))


def _same(listed: list[Any], literal: Any) -> None:
    assert len(listed) == len(set(listed)), f"repeated words in {listed}"
    assert set(listed) == set(get_args(literal)), f"schema {sorted(map(str, listed))} != Literal {get_args(literal)}"


@pytest.mark.parametrize(("schema", "pointer", "literal"), SCHEMA_ENUMS, ids=lambda v: v if isinstance(v, str) else "")
def test_schema_enum_equals_literal(schema: str, pointer: str, literal: Any) -> None:
    _same(_at(_schema(schema), pointer), literal)


@pytest.mark.parametrize(("schema", "pointer", "literal"), NULLABLE_ENUMS, ids=lambda v: v if isinstance(v, str) else "")
def test_nullable_schema_enum_equals_literal_or_null(schema: str, pointer: str, literal: Any) -> None:
    listed = _at(_schema(schema), pointer)
    assert None in listed
    _same([v for v in listed if v is not None], literal)


def test_claim_file_status_is_ok_or_a_failure_word() -> None:
    one_of = _schema("claim_file")["oneOf"]
    _same([one_of[0]["properties"]["status"]["const"], *one_of[1]["properties"]["status"]["enum"]], vocab.ClaimStatus)


def test_code_tuples_equal_their_literal() -> None:
    """Tuples the code iterates (order matters there) hold exactly the vocabulary's words."""
    assert outcomes.OUTCOMES == get_args(vocab.Outcome)
    assert lift.VERDICTS == get_args(vocab.LiftVerdict)
    assert isolation.LEVELS == get_args(vocab.IsolationLevel)  # strongest first: level() compares positions
    assert set(uncertainty.UNRUN_STATES) < set(get_args(vocab.TargetState))
    assert sorted(context.KIND_PRIORITY) == sorted(get_args(vocab.UncertaintyKind))


def test_config_adapter_enum_is_the_adapter_table() -> None:
    assert set(_at(_schema("config"), "/properties/agent/properties/adapter/enum")) == set(ADAPTERS)


def test_the_check_detects_a_drift() -> None:
    """The comparison itself fails when a schema gains a word its Literal lacks."""
    with pytest.raises(AssertionError):
        _same(["complete", "incomplete", "error", "paused"], vocab.BundleStatus)
    with pytest.raises(AssertionError):
        _same(["complete", "incomplete"], vocab.BundleStatus)
