"""`scripts/e2e_local.py` (skill_eval.local.localrun.main) stopped by SIGTERM or SIGHUP leaves no orphan:
the local model server's process group is stopped and the scratch tree removed (found when a
`calibrate` session was killed: the default SIGTERM action left the server and its run behind)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import sys, time
from pathlib import Path
from skill_eval.local import localmodel, localrun
localmodel.LocalServer.ready = lambda self: True          # no llama.cpp here: a stand-in process
localmodel.LocalServer.argv = lambda self: ["sleep", "300"]
def fake(root, work, **kw):
    with localmodel.LocalServer(Path("none.gguf"), work / "server.log") as srv:
        Path(sys.argv[1]).write_text(f"{srv.proc.pid} {work}")
        time.sleep(300)
localrun.calibrate = fake
sys.exit(localrun.main(["calibrate", "--root", sys.argv[2]]))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_session_stops_its_server_and_removes_its_scratch_tree(tmp_path, sig):
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(marker), str(tmp_path)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the fake session never started its server"
        time.sleep(0.05)
    pid_s, work = marker.read_text().split(" ", 1)
    server = int(pid_s)
    assert _alive(server)
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == 128 + sig
    assert not _alive(server), "the server outlived the session"
    assert not Path(work).exists(), "the scratch tree was left behind"
