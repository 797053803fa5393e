"""The claim envelope: exactly one top-level `skill-eval-claim` block of strict JSON."""

from __future__ import annotations

import json

import pytest

from skill_eval.content import config
from skill_eval.content.claim import check_claim_file, extract, find_envelopes

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]
SUBJECT = config.load(REPO).subject
GOOD = {"verdict": "BREAKING", "confident": True, "evidence": [1]}


def block(obj, tag="skill-eval-claim", fence="```"):
    body = obj if isinstance(obj, str) else json.dumps(obj)
    return f"{fence}{tag}\n{body}\n{fence}\n"


def test_one_envelope_ok():
    r = extract("Answer.\n\n" + block(GOOD), SUBJECT)
    assert r.ok and r.claim.verdict == "BREAKING" and r.claim.evidence == (1,)


def test_quoted_report_is_not_an_envelope():
    text = "Report:\n" + block({"verdict": "COMPATIBLE"}, tag="json") + block(GOOD)
    r = extract(text, SUBJECT)
    assert r.ok and r.claim.verdict == "BREAKING"


def test_envelope_inside_another_fence_or_quote_is_not_counted():
    inner = block(GOOD)
    quoted = "````markdown\n" + inner + "````\n" + "> " + inner.replace("\n", "\n> ")
    assert extract(quoted, SUBJECT).status == "absent"
    assert extract(quoted + "\n" + block(GOOD), SUBJECT).ok


@pytest.mark.parametrize("text,status", [
    ("no block", "absent"),
    (block(GOOD) + block(GOOD), "ambiguous"),
    (block("{not json"), "invalid"),
    (block('{"verdict": "BREAKING", "verdict": "COMPATIBLE", "confident": true, "evidence": [1]}'), "invalid"),
    (block(dict(GOOD, verdict="BROKEN")), "invalid"),
    (block(dict(GOOD, consumer_verdict="fine")), "invalid"),
    (block(dict(GOOD, extra=1)), "invalid"),
    (block({"verdict": None, "confident": True, "evidence": []}), "invalid"),
    (block({"verdict": "BREAKING", "confident": False, "evidence": [1]}), "invalid"),
    (block(dict(GOOD, evidence=[True])), "invalid"),
    (block(dict(GOOD, evidence=[0])), "invalid"),
    (block(dict(GOOD, confident=1)), "invalid"),
    ("```skill-eval-claim\n" + json.dumps(GOOD) + "\n", "invalid"),
    (block(json.dumps(GOOD) + " trailing"), "invalid"),
    (block('{"verdict": NaN, "confident": true, "evidence": [1]}'), "invalid"),
])
def test_non_claims(text, status):
    assert extract(text, SUBJECT).status == status


def test_matrix_targets_checked_against_vocabulary():
    m = {"targets": [{"name": "a", "state": "ran", "verdict": "GREEN", "evidence": [1]}]}
    assert extract(block(dict(GOOD, matrix=m)), SUBJECT).status == "invalid"
    m["targets"][0]["verdict"] = "COMPATIBLE"
    m["targets"].append(dict(m["targets"][0]))
    assert extract(block(dict(GOOD, matrix=m)), SUBJECT).reason == "matrix names a target twice"


def test_tilde_fence_and_info_words():
    assert extract("~~~skill-eval-claim\n" + json.dumps(GOOD) + "\n~~~\n", SUBJECT).ok
    assert extract("``` skill-eval-claim extra\n" + json.dumps(GOOD) + "\n```\n", SUBJECT).ok
    assert extract("```skill-eval-claims\n" + json.dumps(GOOD) + "\n```\n", SUBJECT).status == "absent"


def test_claim_file_cross_check():
    r = extract(block(GOOD), SUBJECT)
    assert check_claim_file(r.as_file(), r) is None
    assert "differs" in check_claim_file({"status": "ok", "claim": dict(GOOD, verdict="COMPATIBLE")}, r)
    assert "status" in check_claim_file({"status": "absent", "reason": "x"}, r)


def test_find_envelopes_unterminated():
    bodies, problems = find_envelopes("```skill-eval-claim\n{}\n")
    assert bodies == [] and problems
