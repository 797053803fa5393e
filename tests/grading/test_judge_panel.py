"""A judge panel (issue 28 item 4): agreement measured, disagreement left to a person, failure writes nothing.

Judges are loopback stubs (tests/openai_stub.py), one per judge; each answers its requests in order:
bundles in the order given, dimension 4 then 5 of each.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from openai_stub import Stub, replay
from release_helpers import record_run, rubric_version, setup_host, signing_key

from skill_eval import cli
from skill_eval.core import formats, schemas, seal, strict
from skill_eval.grading import agreement
from skill_eval.grading import judge as judge_mod
from skill_eval.grading.graders import judged

DATA = Path(__file__).parents[1] / "data" / "judge"


def verdicts(*scores: float) -> list[dict[str, Any]]:
    return [{"body": {"choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(
        {"score": s, "passed": s == 1, "rationale": f"score {s}"})}, "finish_reason": "stop"}]}} for s in scores]


@pytest.fixture
def host(mini_repo, monkeypatch):
    monkeypatch.setenv(seal.KEY_ENV, str(signing_key()[0]))  # the judge signs what it appends (grading/judgments.py)
    cfg = setup_host(mini_repo)
    return cfg, [record_run(cfg, "alpha-break", "skill-agent", 0, judged=False),
                 record_run(cfg, "beta-same", "skill-agent", 0, judged=False)]


def judge(cfg, bundles, *stubs: Stub, extra: tuple[str, ...] = ()) -> int:
    models = [a for i, s in enumerate(stubs) for a in ("--model", f"judge-{i}", "--base-url", s.url)]
    return cli.main(["judge", *map(str, bundles), "--root", str(cfg.root), *models, *extra])


# -- the statistics, against hand computations ---------------------------------------------------

def test_cohen_kappa_matches_a_hand_computation():
    # 10 items: 4 x (1,1), 3 x (0,0), 2 x (1,0), 1 x (0,1). p_o = 7/10; judge A says 1 six times, B five times:
    # p_e = (6*5 + 4*5)/100 = 0.5, so kappa = (0.7 - 0.5)/(1 - 0.5) = 0.4.
    table = [[1, 1]] * 4 + [[0, 0]] * 3 + [[1, 0]] * 2 + [[0, 1]]
    assert agreement.cohen(table) == pytest.approx(0.4)
    assert agreement.kappa(table) == ("cohen", pytest.approx(0.4))
    assert agreement.cohen([[1, 1], [0.5, 0.5]]) == pytest.approx(1.0)
    assert agreement.cohen([[1, 0], [0, 1]]) == pytest.approx(-1.0)


def test_fleiss_kappa_matches_a_hand_computation():
    # 3 judges, 4 items. P_i = 1, 1, (2*2 + 1*1 - 3)/6 = 1/3, 1 -> P-bar = 5/6. Category totals over 12
    # ratings: 1 -> 5, 0 -> 4, 0.5 -> 3, so P_e = (25 + 16 + 9)/144 = 25/72; kappa = (5/6 - 25/72)/(1 - 25/72) = 35/47.
    table = [[1, 1, 1], [0, 0, 0], [1, 1, 0], [0.5, 0.5, 0.5]]
    assert agreement.fleiss(table) == pytest.approx(35 / 47)
    assert agreement.kappa(table) == ("fleiss", pytest.approx(35 / 47))
    # with two judges Fleiss pools the marginals (Scott's pi), unlike Cohen: on Cohen's table above P-bar = 0.7,
    # totals 1 -> 11, 0 -> 9 of 20, P_e = (121 + 81)/400 = 0.505, kappa = 0.195/0.495 = 13/33
    assert agreement.fleiss([[1, 1]] * 4 + [[0, 0]] * 3 + [[1, 0]] * 2 + [[0, 1]]) == pytest.approx(13 / 33)


def test_kappa_is_undefined_without_variation_or_items():
    assert agreement.cohen([[1, 1], [1, 1]]) is None and agreement.fleiss([[1, 1, 1]]) is None
    assert agreement.kappa([]) == ("fleiss", None)


# -- the panel ----------------------------------------------------------------------------------

def test_an_agreeing_panel_writes_one_entry_per_item_with_its_agreement(host, capsys):
    cfg, bundles = host
    with Stub(replay(verdicts(1, 1, 1, 0))) as a, Stub(replay(verdicts(1, 1, 1, 0))) as b:
        rc = judge(cfg, bundles, a, b, extra=("--json",))
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["judges"] == ["judge-0", "judge-1"] and out["needs_human_review"] == []
    assert out["agreement"]["4"] == {"statistic": "cohen", "kappa": None, "items": 2, "floor": 0.6}  # both 1: no variation
    assert out["agreement"]["5"]["kappa"] == pytest.approx(1.0)
    doc = json.loads((bundles[1] / "judgments.json").read_text())
    assert doc["schema_version"] == formats.FORMATS["judgments"] == 3
    d5 = [e for e in doc["judgments"] if e["dimension"] == 5][0]
    assert d5["judge_model"] == "judge-0 + judge-1" and [p["judge_model"] for p in d5["panel"]] == ["judge-0", "judge-1"]
    assert d5["passed"] is False and d5["score"] == 0 and "needs_human_review" not in d5
    assert judged.replay(doc, rubric_version(cfg), 5)[0] == "fail"
    assert judged.replay(json.loads((bundles[0] / "judgments.json").read_text()), rubric_version(cfg), 4)[0] == "pass"


def test_disagreement_needs_human_review_and_is_never_a_pass(host, capsys):
    cfg, bundles = host
    with Stub(replay(verdicts(1, 1))) as a, Stub(replay(verdicts(0, 1))) as b:
        rc = judge(cfg, bundles[:1], a, b)
    out = capsys.readouterr().out
    assert rc == 1 and f"needs human review {bundles[0]} dimension 4 (score 0, the panel disagrees (scores [1, 0]))" in out
    doc = json.loads((bundles[0] / "judgments.json").read_text())
    d4, d5 = sorted(doc["judgments"], key=lambda e: e["dimension"])
    assert d4["needs_human_review"] and d4["passed"] is False and "needs_human_review" not in d5 and d5["passed"]
    status, reasons = judged.replay(doc, rubric_version(cfg), 4)
    assert status == "not_judged" and "needs human review" in reasons[0]
    capsys.readouterr()
    assert cli.main(["grade", str(bundles[0]), "--root", str(cfg.root), "--stage", "release", "--json"]) != 0  # not a pass


def test_a_kappa_below_the_floor_sends_even_agreeing_items_to_a_person(host, capsys):
    cfg, bundles = host
    # dimension 4: judge A (1, 0), judge B (1, 1) -> p_o = 1/2, p_e = 1/2, kappa 0 < 0.6: the agreed first item too
    with Stub(replay(verdicts(1, 1, 0, 1))) as a, Stub(replay(verdicts(1, 1, 1, 1))) as b:
        rc = judge(cfg, bundles, a, b)
    out = capsys.readouterr().out
    assert rc == 1 and "agreement dimension 4: cohen kappa 0.000 over 2 item(s), floor 0.6 -- BELOW THE FLOOR" in out
    d4 = [e for e in json.loads((bundles[0] / "judgments.json").read_text())["judgments"] if e["dimension"] == 4][0]
    assert [p["score"] for p in d4["panel"]] == [1, 1] and "below the floor" in d4["needs_human_review"]
    assert judged.replay({"judgments": [d4]}, rubric_version(cfg), 4)[0] == "not_judged"


def test_one_judge_failing_writes_nothing_for_that_item(host, capsys):
    cfg, bundles = host
    with Stub(replay(verdicts(1, 1))) as a, Stub(replay([{"status": 500, "body": {"error": "down"}}] * 2)) as b:
        rc = judge(cfg, bundles[:1], a, b)
    assert rc == 1 and not (bundles[0] / "judgments.json").exists()
    assert capsys.readouterr().out.count("HTTP 500; no score written") == 2


def test_the_prompt_carries_the_recorded_report_and_stays_blinded(host):
    cfg, bundles = host
    report = json.loads(next((bundles[0] / "captured").rglob("r.json")).read_text())
    with Stub(replay(verdicts(1, 1))) as a, Stub(replay(verdicts(1, 1))) as b:
        assert judge(cfg, bundles[:1], a, b) == 0
    sent = [r["body"]["messages"][0]["content"] for r in a.requests + b.requests]
    assert len(set(sent)) == 2  # one prompt per dimension, the same for every judge
    for prompt in sent:
        assert "## The JSON reports the agent's recorded calls produced" in prompt and json.dumps(report) in " ".join(prompt.split())
        assert "skill-agent" not in prompt and "real-model-1" not in prompt


def test_a_changed_recorded_report_is_a_failure_not_a_grade(host, capsys):
    cfg, bundles = host
    next((bundles[0] / "captured").rglob("r.json")).write_text('{"verdict": "OK"}')
    with Stub(replay(verdicts(1, 1))) as a, Stub(replay(verdicts(1, 1))) as b:
        assert judge(cfg, bundles[:1], a, b) == 1
    assert not (bundles[0] / "judgments.json").exists() and "sha256 does not match" in capsys.readouterr().out


@pytest.mark.parametrize("flags", [["--model", "x", "--model", "x", "--base-url", "http://127.0.0.1:9/v1"],
                                   ["--model", "x", "--model", "y", "--base-url", "http://a/v1", "--base-url", "http://b/v1",
                                    "--base-url", "http://c/v1"]])
def test_a_malformed_panel_is_a_usage_error(host, flags, capsys):
    cfg, bundles = host
    assert cli.main(["judge", str(bundles[0]), "--root", str(cfg.root), *flags]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1 and not (bundles[0] / "judgments.json").exists()


def test_a_version_1_file_is_read_and_extended(host, tmp_path):
    cfg, bundles = host
    old = strict.load_json(DATA / "judgments-v1.json")
    up = formats.upgrade(json.loads(json.dumps(old)), "judgments", "judgments-v1.json")  # upgraded in place: a copy
    schemas.validate(up, "judgments", "judgments-v1.json")
    assert up["schema_version"] == 3 and [{k: v for k, v in e.items() if k != "judge_source"} for e in up["judgments"]] == old["judgments"]
    assert {e["judge_source"] for e in up["judgments"]} == {"unrecorded"}  # v3: where the judge ran, unknown for older entries
    shutil.copy(DATA / "judgments-v1.json", bundles[0] / "judgments.json")
    with Stub(replay(verdicts(1, 1))) as a, Stub(replay(verdicts(1, 1))) as b:
        assert judge(cfg, bundles[:1], a, b) == 0
    doc = json.loads((bundles[0] / "judgments.json").read_text())
    assert doc["schema_version"] == 3 and doc["judgments"][0] == dict(old["judgments"][0], judge_source="unrecorded")
    assert len(doc["judgments"]) == 3
    assert judge_mod.panel_name([judge_mod.Endpoint("u", "scripted:a"), judge_mod.Endpoint("u", "b")]).startswith("scripted:")
