"""grading/graders/imported.py: an imported bundle's verdict (harbor.json) is read strictly, against
schemas/import_verdict.schema.json, and anything it does not prove is a failed oracle, never a pass."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from skill_eval.grading.graders import Check, imported

GOOD: dict[str, Any] = {
    "schema_version": 1, "origin": "harbor", "signed": False, "scenario": "alpha-fix", "trial": "alpha-fix__t0",
    "reward": 1.0, "rewards": {"reward": 1.0}, "reward_valid": True,
    "checks": {"has-new": {"passed": True, "reason": ""}},
    "dimensions": {"oracle": "pass (the Harbor verifier's command oracle; reward 1.0)",
                   "activation": "not graded: Harbor records no skill activation"},
    "verifier_error": None, "note": "imported: not signed runner evidence"}


@dataclass
class FakeBundle:
    data: bytes
    meta: dict[str, Any]

    def read_bytes(self, name: str) -> bytes:
        assert name == "harbor.json"
        return self.data


def _grade(verdict: dict[str, Any] | bytes, scenario: str = "alpha-fix") -> dict[str, Check]:
    data = verdict if isinstance(verdict, bytes) else json.dumps(verdict).encode()
    return imported.grade(FakeBundle(data, {"scenario": scenario, "extra": {"origin": "harbor"}}), "harbor", Check)  # type: ignore[arg-type]


def test_a_well_formed_passing_verdict_passes_and_marks_the_rest_not_graded():
    checks = _grade(GOOD)
    assert checks["oracle"].status == "pass"
    assert checks["activation"].status == "not_applicable" and checks["activation"].note.startswith("not graded")


@pytest.mark.parametrize(("change", "said"), [
    ({"extra_field": 1}, "Additional properties"),  # an unknown field
    ({"signed": True}, "False was expected"),  # an import is never signed evidence
    ({"reward": "1.0"}, "is not of type"),  # a reward as text
    ({"checks": {"has-new": {"passed": "yes", "reason": ""}}}, "is not of type 'boolean'"),
    ({"dimensions": {}}, "should be non-empty"),
    ({"origin": "other"}, "is not one of"),
    ({"verifier_error": {"kind": "x"}}, "is not of type"),
])
def test_a_malformed_verdict_is_a_failed_oracle_naming_the_schema(change, said):
    checks = _grade({**GOOD, **change})
    assert list(checks) == ["oracle"] and checks["oracle"].status == "fail"
    reason = checks["oracle"].reasons[0]
    assert said in reason and "harbor.json" in reason, reason


def test_a_verdict_for_another_scenario_or_unreadable_bytes_fails():
    other = _grade(GOOD, scenario="alpha-break")
    assert other["oracle"].status == "fail" and "grades scenario 'alpha-fix'" in other["oracle"].reasons[0]
    for data in (b'{"schema_version": 1, "schema_version": 1}', b"\xff\xfe", b"[]"):
        assert _grade(data)["oracle"].status == "fail"


def test_a_failed_check_or_reward_below_one_is_a_failure_with_its_reason():
    failed = _grade({**GOOD, "reward": 0.0, "checks": {"has-new": {"passed": False, "reason": "no NEWS entry"}}})
    assert failed["oracle"].status == "fail" and "has-new" in failed["oracle"].reasons[0]
    assert _grade({**GOOD, "reward": 0.5})["oracle"].status == "fail"
    assert _grade({**GOOD, "verifier_error": "timed out"})["oracle"].status == "fail"
