"""One agent launch (issue 37 item 2): every path that starts an agent goes through runner/launch.py,
and no private name crosses a package boundary."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "skill_eval"


def _modules() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(SRC).as_posix(), ast.parse(p.read_text(), filename=str(p))) for p in sorted(SRC.rglob("*.py"))]


def _package(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def test_no_private_name_is_imported_across_packages():
    crossing = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("skill_eval"):
                target = node.module.removeprefix("skill_eval").lstrip(".").replace(".", "/")
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and not (target == _package(rel) or target.rsplit("/", 1)[0] == _package(rel)):
                        crossing.append(f"{rel}: from {node.module} import {alias.name}")
    assert crossing == []


def test_only_the_launch_wraps_and_spawns_an_agent():
    """isolation.wrap (the agent's sandbox argv) and the agent's spawn appear in runner/launch.py alone:
    run_item, the release's recording and propose all call AgentLaunch."""
    callers = set()
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                owner = node.func.value.id if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) else None
                if (owner == "isolation" and name == "wrap") or name in ("spawn", "AgentLaunch"):
                    callers.add((rel, name))
    wraps = {rel for rel, name in callers if name in ("wrap", "spawn")}
    assert wraps == {"harness/runner/launch.py"}
    assert {rel for rel, name in callers if name == "AgentLaunch"} == {"harness/runner/execute.py", "improve/sandbox.py"}
    session = (SRC / "harness/runner/session.py").read_text()
    assert "run_item(" in session  # the release's recording runs the ordinary run_item


def test_a_refused_request_the_cli_is_known_to_make_is_an_infra_error_and_any_other_a_violation(tmp_path: Path):
    """Through the one launch (at the strongest level here): an agent that sends its proxy a known request
    without the token makes the run an infra error; one outside the allow-list is a policy_violation."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from skill_eval.content.inputs import InputRecorder
    from skill_eval.harness.adapters.base import AdapterBase, LaunchContext
    from skill_eval.harness.runner import isolation
    from skill_eval.harness.runner.launch import AgentLaunch, RunOptions
    from skill_eval.harness.runner.sandbox import Sandbox

    class _Ok(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    code = ("import os, urllib.request as u\n"
            "base = os.environ['FAKE_BASE_URL']\n"
            "for method, path, key in (('POST', '/v1/messages', 'wrong'), ('DELETE', '/v1/admin', os.environ['FAKE_KEY'])):\n"
            "    try:\n        u.urlopen(u.Request(base + path, data=b'{}', method=method, headers={'x-api-key': key}))\n"
            "    except Exception as e:\n        print(method, getattr(e, 'code', e))\n")

    class _Fake(AdapterBase):
        name, executable, needs_binary = "fake", "python3", False
        model_server_kind, credential_vars = "anthropic", ("FAKE_KEY",)
        api_routes = (("POST", r"/v1/messages"),)

        def build_command(self, ctx: LaunchContext) -> list[str]:
            return ["python3", "-c", code]

        def env(self, ctx: LaunchContext) -> dict[str, str]:
            return self.add_endpoint({"HOME": str(ctx.home), "FAKE_BASE_URL": ctx.base_url or ""}, ctx,
                                     url_var=None, key_var="FAKE_KEY")

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    parent, level = tmp_path / "boxes", isolation.level()
    box = Sandbox.create(parent, InputRecorder(tmp_path), None, client_python=isolation.client_python(level),
                         deny=[tmp_path / "repo"], level=level)
    try:
        opts = RunOptions(adapter="fake", base_url=f"http://127.0.0.1:{upstream.server_address[1]}", no_auth=True)
        with AgentLaunch(box, _Fake(), opts, level=level, hidden_from=(tmp_path / "repo", parent)) as launch:
            launch.prepare("hi", seed=None)
            ran = launch.run(30)
            events = launch.violation_events()
    finally:
        box.cleanup()
        upstream.shutdown()
    assert b"POST 401" in ran.stream and b"DELETE 403" in ran.stream, ran.stream + ran.stderr
    assert len(ran.infra) == 1 and "refused 1 request(s) the agent CLI makes: POST /v1/messages [x-api-key]" in ran.infra[0]
    assert events == [{"type": "policy_violation", "source": "proxy", "request": "DELETE /v1/admin [x-api-key]"}]
