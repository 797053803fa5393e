"""The local-model A/A calibration on the scorecard (issue 12 item 5, issue 28 item 5).

The first committed calibration (60 SmolLM2-135M runs, `make calibrate-local`) was hollow: every
run stopped after 1 turn / 64 tokens (`budget_stop`), with no answer, no subject call and no claim,
so the two recordings "agreed" on everything and the scorecard showed a 0 % false-difference rate
and a 0.00 floor as current. It is no longer committed evidence; 12 of its bundles (repeat 0 of each
scenario, both replicates, copied unchanged) are the fixture tests/data/calibration-hollow/, and
over them the calibration must say INCONCLUSIVE in every output. Around it: no committed
calibration means no section; staleness is shown, not failed; wrong labels make it invalid; the
false-call counter does catch a real difference.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skill_eval.content import config
from skill_eval.core import strict
from skill_eval.reporting import lift
from skill_eval.reporting.scorecard import calibration
from skill_eval.reporting.scorecard import html as html_mod
from skill_eval.reporting.scorecard import markdown as md_mod
from skill_eval.reporting.scorecard.markdown import calibration_lines
from skill_eval.reporting.scorecard.runs import AA, MAIN, RunRecord

REPO = Path(__file__).resolve().parents[3]
HOLLOW = REPO / "tests/data/calibration-hollow"


@pytest.fixture(scope="module")
def cfg():
    return config.load(REPO)


@pytest.fixture(scope="module")
def hollow(cfg):
    return calibration.read(cfg, lift.Settings.of(cfg.stats), tree=HOLLOW)


def test_the_hollow_calibration_is_not_committed_evidence(cfg):
    """Issue 28: a calibration whose runs never finished is gone from agent-evals/, so the scorecard of
    this repository shows no calibration section rather than a 0 % floor over nothing."""
    assert not (cfg.evals_dir / calibration.TREE).exists()
    assert calibration.read(cfg, lift.Settings.of(cfg.stats)) is None


def test_fixture_is_the_real_hollow_recording():
    m = strict.load_json(HOLLOW / "manifest.json")
    assert (m["kind"], m["model"], m["scripted"]) == ("local-calibration", "smollm2-135m", False)
    assert m["limits"]["max_turns"] == 1 and m["limits"]["max_tokens"] == 64
    metas = [strict.load_json(p) for p in sorted(HOLLOW.rglob("meta.json"))]
    assert len(metas) == 12 and {x["outcome"] for x in metas} == {"budget_stop"}
    assert sum(1 for x in metas if x["extra"].get("aa") is True) == 6
    assert all(x["scripted"] is False and x["temperature"] > 0 for x in metas)


def test_all_budget_stopped_calibration_is_inconclusive_in_every_output(hollow):
    """Six paired scenarios, both replicates failing everything identically: the old statistics said
    'false-difference rate 0 %, floor 0.00'. Now: INCONCLUSIVE with the reason, no figure anywhere."""
    assert hollow["status"] == calibration.INCONCLUSIVE and hollow["problems"] == []
    (cell,) = hollow["cells"]
    x = cell["calibration"]
    assert x["status"] == lift.INCONCLUSIVE and x["noise_floor"] is None and x["false_difference_rate"] is None
    assert "100% of baseline (A) runs are incomplete (6 budget_stop)" in x["reason"]
    assert cell["checks"] == {}  # per-check agreement over unfinished runs is not shown either
    assert set(cell["lift_on_aa"]["verdicts"]) == {lift.INCONCLUSIVE} and cell["lift_on_aa"]["false_calls"] == 0
    text = "\n".join(calibration_lines(hollow))
    assert "**INCONCLUSIVE**" in text and "budget\\_stop" in text and "false-difference rate 0%" not in text
    assert "current" not in text.split("\n")[1]
    card = {"schema_version": 1, "generated_by": "t", "bundles": 0, "scripted": False, "problems": [], "contaminated": {},
            "cells": [], "activation": [], "agreement": {"cells": [], "compared": 0, "disagree": []}, "audit": {"ngram": 8, "flagged": [], "holdout": []},
            "settings": {"bootstrap_samples": 100, "min_paired_scenarios": 6, "seed": 1, "confidence": 0.95,
                         "max_infra_error_rate": 0.25, "max_incomplete_rate": 0.25, "cost_regression": 0.1, "k": 1},
            "gates": {"cost_regression": {"passed": True, "threshold": 0.1, "problems": []}}, "calibration": hollow}
    from skill_eval.core import schemas

    schemas.validate(card, "scorecard", "scorecard.json")
    assert "INCONCLUSIVE: A/A 100% of baseline (A) runs are incomplete" in html_mod.render(card)
    assert "**INCONCLUSIVE**" in md_mod.render(card)


def test_the_same_pair_with_finished_runs_would_calibrate(cfg, hollow):
    """The guard, not the data, makes the difference: raise the allowed share and the same bundles give
    the old, meaningless 'ok' with a 0 floor."""
    loose = lift.Settings(max_incomplete_rate=1.0)
    card = calibration.read(cfg, loose, tree=HOLLOW)
    x = card["cells"][0]["calibration"]
    assert x["status"] == "ok" and x["noise_floor"] == 0 and x["false_difference_rate"] == 0


def _rec(item: str, replicate: str, passed: bool, check1: str = "pass") -> RunRecord:
    return RunRecord(path=f"{replicate}/{item}", kind="behavioral", skill="s", arm="skill-agent", replicate=replicate,
                     agent="openai-compatible", model="m", scripted=False, item=item, k=0, outcome="completed",
                     passed=passed, checks={"1": check1, "2": "fail"})


def test_false_call_counter_catches_a_real_difference():
    settings = lift.Settings()
    main = [_rec(f"x{i}", MAIN, True) for i in range(8) for _ in range(3)]
    aa = [_rec(f"x{i}", AA, False, "fail") for i in range(8) for _ in range(3)]
    on_aa = calibration.lift_on_aa("skill-agent", main, aa, settings, seeds=3)
    assert on_aa["false_calls"] == 6  # overall and check 1, every seed: UNCALIBRATED (significant, no floor)
    noise = calibration.check_noise(main, aa)
    assert noise["1"]["false_difference_rate"] == 1.0 and noise["2"]["false_difference_rate"] == 0.0


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "calibration"
    shutil.copytree(HOLLOW, dest)
    return dest


def test_a_moved_harness_counts_stale_bundles_but_inconclusive_wins(cfg, tmp_path):
    tree = _copy(tmp_path)
    meta_path = sorted(tree.rglob("meta.json"))[0]
    meta = json.loads(meta_path.read_text())
    meta["digests"]["harness"] = "0" * 64
    meta_path.write_text(json.dumps(meta))
    card = calibration.read(cfg, lift.Settings.of(cfg.stats), tree=tree)
    # stale bundles are counted, never an error; a hollow pair is INCONCLUSIVE whatever its age
    assert card["stale"]["bundles"] >= 1 and card["problems"] == [] and card["status"] == calibration.INCONCLUSIVE
    loose = calibration.read(cfg, lift.Settings(max_incomplete_rate=1.0), tree=tree)
    assert loose["status"] == calibration.STALE
    text = "\n".join(calibration_lines(loose))
    assert "**stale calibration**" in text and "make calibrate-local" in text


def test_a_scripted_or_unlabelled_tree_is_invalid(cfg, tmp_path):
    tree = _copy(tmp_path)
    m = json.loads((tree / "manifest.json").read_text())
    m["scripted"] = True
    (tree / "manifest.json").write_text(json.dumps(m))
    card = calibration.read(cfg, lift.Settings.of(cfg.stats), tree=tree)
    assert card["status"] == "invalid" and "manifest.json" in card["problems"][0]
    (tree / "manifest.json").unlink()
    assert calibration.read(cfg, lift.Settings.of(cfg.stats), tree=tree)["status"] == "invalid"


def test_the_merge_gate_ignores_calibration_trees(cfg):
    from skill_eval.grading import evidence

    r = evidence.check(cfg, "full", None, "merge")
    assert not [e for e in r.errors if "calibration" in e]  # not evidence: never "extra"
    assert calibration.read(cfg, lift.Settings.of(cfg.stats), tree=REPO / "no-such-tree") is None
