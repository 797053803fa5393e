"""`skill-eval clean` (issue 24 item 5): what killed runs left behind is removed on demand, a live
run's sandboxes and partial bundles are kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from skill_eval.cli import main
from skill_eval.harness.runner.bundle_writer import TMP_PREFIX


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_clean_removes_a_dead_runs_leftovers_and_keeps_a_live_ones(mini_repo: Path, tmp_path: Path, capsys):
    boxes = tmp_path / "sandboxes"
    dead, live = _dead_pid(), os.getpid()
    for pid in (dead, live):
        raw = boxes / f"sandbox-{pid}-abc" / "raw"
        raw.mkdir(parents=True)
        (raw / "stream.jsonl").write_text('{"secret": "unredacted"}\n')
    bundle_parent = mini_repo / "evals" / "evidence" / "alpha" / "skill-agent" / "run" / "s1"
    for pid in (dead, live):
        (bundle_parent / f"{TMP_PREFIX}0.{pid}.x1").mkdir(parents=True)
    assert main(["clean", "--root", str(mini_repo), "--sandbox-dir", str(boxes), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sandboxes"] == [str(boxes / f"sandbox-{dead}-abc")]
    assert [Path(p).name for p in out["partial_bundles"]] == [f"{TMP_PREFIX}0.{dead}.x1"]
    assert sorted(p.name for p in boxes.iterdir()) == [f"sandbox-{live}-abc"]
    assert sorted(p.name for p in bundle_parent.iterdir()) == [f"{TMP_PREFIX}0.{live}.x1"]
    assert main(["clean", "--root", str(mini_repo), "--sandbox-dir", str(boxes)]) == 0  # nothing left: says so
    assert "removed 0 sandbox directories of dead runs and 0 partial bundles" in capsys.readouterr().out
