"""Issue 28 item 5: `make calibrate-local` refuses to install a calibration whose runs never finished.

The first committed calibration (60 SmolLM2-135M runs at 1 turn / 64 tokens) ended every run
`budget_stop`; the scorecard then showed "false-difference rate 0 %, floor 0.00" as current. Here the
recording is faked with 12 of those real bundles (tests/data/calibration-hollow/): the session must
stop with a LocalModelError naming the count and the limits, and write nothing into the tree.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from skill_eval.content import config
from skill_eval.local import localmodel, localrun

REPO = Path(__file__).resolve().parents[2]
HOLLOW = REPO / "tests/data/calibration-hollow"


def hollow_bundles() -> list[Path]:
    return sorted(p.parent for p in HOLLOW.rglob("meta.json"))


def test_incomplete_runs_reads_the_recorded_outcome_and_answer(tmp_path):
    counts, scored = localrun.incomplete_runs(hollow_bundles())
    assert (dict(counts), scored) == ({"budget_stop": 12}, 12)
    # a completed run with an empty answer is unfinished too; an infra error is not scored at all
    done = tmp_path / "done"
    shutil.copytree(hollow_bundles()[0], done)
    meta = (done / "meta.json").read_text().replace('"outcome": "budget_stop"', '"outcome": "completed"')
    (done / "meta.json").write_text(meta)
    assert localrun.incomplete_runs([done])[0] == {"no final answer": 1}
    (done / "final.md").write_text("The ABI is compatible.\n")
    assert localrun.incomplete_runs([done]) == ({}, 1)
    (done / "meta.json").write_text(meta.replace('"outcome": "completed"', '"outcome": "infra_error"'))
    assert localrun.incomplete_runs([done]) == ({}, 0)


def test_calibrate_refuses_a_hollow_recording_and_installs_nothing(tmp_path, monkeypatch):
    work = tmp_path / "work"
    repo = work / "repo"
    (repo / "skill-eval.toml").parent.mkdir(parents=True)
    (repo / "skill-eval.toml").write_text("# scratch copy already made (calibrate resumes it)\n")

    def fake_record(repo_: Path, url: str, *, run_id: str, aa: bool = False, **_kw: object) -> localmodel.Recording:
        for b in hollow_bundles():
            rel = b.relative_to(HOLLOW)
            if rel.parts[2].endswith("-aa") == aa:
                dest = repo_ / "agent-evals/skills/evidence" / rel.parts[0] / rel.parts[1] / run_id / rel.parts[3] / rel.parts[4]
                shutil.copytree(b, dest)
        return localmodel.Recording(run_id, "baseline", 1, [{"status": "incomplete"}] * 6, 1.0)

    class FakeServer:
        url = "http://127.0.0.1:9/v1"

        def __init__(self, *a: object, **kw: object) -> None:
            pass

        def start(self) -> float:
            return 0.1

        def stop(self) -> None:
            pass

        def leftovers(self) -> list[int]:
            return []

    installed: list[object] = []
    monkeypatch.setattr(localrun, "find_gguf", lambda: Path("model.gguf"))
    monkeypatch.setattr(localrun, "LocalServer", FakeServer)
    monkeypatch.setattr(localrun, "record", fake_record)
    monkeypatch.setattr(localrun.config, "load", lambda root: argparse.Namespace(stats=config.Stats()))
    monkeypatch.setattr(localrun.fsio, "replace_dir", lambda *a, **kw: installed.append(a))
    with pytest.raises(localmodel.LocalModelError) as exc:
        localrun.calibrate(tmp_path / "root", work, k=1)
    msg = str(exc.value)
    assert "12 of 12 scored calibration runs did not finish (12 budget_stop) > max_incomplete_rate 25%" in msg
    assert "'max_turns': 1" in msg and "left as it was" in msg
    assert installed == []
