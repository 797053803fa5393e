"""One `skill-eval run` per repository at a time (issue 24 item 6): a second run fails at once naming
the holder (pid and command), `--wait` queues behind it, a dead holder's lock is gone with it, and the
lock file lives outside the repository."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.harness.runner import lock

SRC = str(Path(__file__).resolve().parents[3] / "src")
HOLDER = """
import sys, time
from pathlib import Path
from skill_eval.harness.runner import lock
with lock.hold(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def _holding(root: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(seconds), "--marker-arg"], text=True,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": SRC})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_second_holder_is_refused_naming_the_first(tmp_path: Path):
    root = tmp_path / "repo"
    root.mkdir()
    proc = _holding(root, 30)
    try:
        with pytest.raises(lock.RunLocked) as err, lock.hold(root):
            pass
        assert f"pid {proc.pid}" in err.value.message and "--marker-arg" in err.value.message
        assert err.value.fix and "--wait" in err.value.fix
        other = tmp_path / "other-repo"
        other.mkdir()
        with lock.hold(other):  # another repository is not blocked
            pass
    finally:
        proc.kill()
        proc.wait()
    with lock.hold(root):  # the kernel dropped the dead holder's lock
        assert lock.lock_path(root).read_text().startswith(f"pid {os.getpid()}: ")
    assert lock.lock_path(root).read_text() == ""  # released: nobody named
    assert not str(lock.lock_path(root)).startswith(str(root))  # nothing inside the repository


def test_wait_queues_behind_the_holder(tmp_path: Path):
    root = tmp_path / "repo"
    root.mkdir()
    proc = _holding(root, 1.5)
    said: list[str] = []
    t = time.monotonic()
    with lock.hold(root, wait=True, say=said.append):
        waited = time.monotonic() - t
    proc.wait()
    assert waited > 0.5 and said and f"pid {proc.pid}" in said[0]


def test_run_fails_at_once_naming_the_holder(mini_repo: Path, capsys, monkeypatch):
    monkeypatch.setenv("SKILL_EVAL_REAL", "/bin/true")  # the mini host's subject
    proc = _holding(mini_repo, 60)
    try:
        t = time.monotonic()
        rc = main(["run", "--root", str(mini_repo), "--agent", "scripted", "--json"])
        assert time.monotonic() - t < 10
        assert rc == 2
        err = json.loads(capsys.readouterr().out)["error"]
        assert f"pid {proc.pid}" in err["message"] and "another `skill-eval run`" in err["message"]
        assert "--wait" in err["fix"]
        assert main(["run", "--root", str(mini_repo), "--agent", "scripted", "--dry-run"]) == 0  # a plan takes no lock
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
