"""Robustness on real model output (issue 12 item 6): every malformed reply in the corpus
ends as a clear run_error with a documented kind — never a crash, never a hang, and a
malformed call is never executed.

The corpus (tests/data/malformed/llama_cpp_chat.json) is hand-written in the shape the
llama-cpp-python server produces for chatml-function-calling; it is served by a loopback
stub (openai_stub.py), not the scripted model server, because it must be able to answer
anything. The loop runs in-process from the adapter's own argv (minus the interpreter boot).
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from openai_stub import Stub, replay

from skill_eval.core import schemas
from skill_eval.harness.adapters import LaunchContext, agent_loop, get_adapter

CORPUS = json.loads((Path(__file__).parents[2] / "data" / "malformed" / "llama_cpp_chat.json").read_text())
CASES = {c["name"]: c for c in CORPUS["cases"]}
DOCUMENTED = {"permission_denied", "tool_not_registered", "invalid_tool_call", "max_turns", "budget_exceeded", "unknown_skill",
              "skill_activation_failed", "skill_not_loaded", "model_config", "sandbox_denied", "agent_error",
              "malformed_stream", "incomplete_stream"}


def run_loop(tmp_path, monkeypatch, url, *, max_tokens=64, max_total_tokens=6000, request_timeout=1.0):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    adapter = get_adapter("openai-compatible")
    ctx = LaunchContext("list the files", home=home, workdir=ws, model="smollm2-135m", max_turns=5, base_url=url,
                        max_tokens=max_tokens, max_total_tokens=max_total_tokens)
    argv = adapter.build_command(ctx)[5:]  # [python, -I, -c, boot, package dir, *loop args]
    argv = [*argv[:-2], "--request-timeout", str(request_timeout), *argv[-2:]]
    monkeypatch.chdir(ws)
    monkeypatch.delenv("SKILL_EVAL_OPENAI_API_KEY", raising=False)
    out = io.StringIO()
    code = agent_loop.main(argv, out=out)
    raw = out.getvalue().encode()
    return code, raw, adapter.parse(raw, adapter.skill_dirs(home, ws), cwd=ws, installed_skills=[])


def test_corpus_covers_the_issue_list():
    names = set(CASES)
    assert {"bad_json_arguments", "unknown_tool_name", "tool_call_as_text_tags", "runaway_generation", "empty_choices",
            "non_json_body", "http_500", "hang"} <= names
    assert "hand-written" in CORPUS["description"].lower()


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_reply_is_a_clear_agent_error(name, tmp_path, monkeypatch):
    case = CASES[name]
    started = time.monotonic()
    with Stub(replay(case["replies"])) as stub:
        code, raw, run = run_loop(tmp_path, monkeypatch, stub.url)
    assert time.monotonic() - started < 10  # never a hang (the hang case waits its 1 s request timeout)
    expect = case["expect"]
    assert code in (0, 1)
    assert run.stop_reason == expect["stop_reason"], run.errors
    assert [e.split(":", 1)[0] for e in run.errors] == expect["errors"]
    assert all(e.split(":", 1)[0] in DOCUMENTED for e in run.errors)
    assert not run.ok
    assert all(schemas.errors(e, "event") == [] for e in run.events)
    lines = [json.loads(line) for line in raw.decode().splitlines()]
    assert lines[-1]["type"] == "result"  # the loop always ends its stream cleanly
    executed = [r for r in lines if r["type"] == "tool_result" and not r.get("error")]
    assert len(executed) == expect["executed"]
    # every request carried the per-reply cap, and no key: the stub is a loopback server
    assert all(r["body"]["max_tokens"] == 64 and r["authorization"] is None for r in stub.requests)


def test_runaway_reply_is_a_budget_stop_with_its_reason(tmp_path, monkeypatch):
    with Stub(replay(CASES["runaway_generation"]["replies"])) as stub:
        _, raw, run = run_loop(tmp_path, monkeypatch, stub.url)
    assert run.usage["stop_reason"] == "budget" and run.final_text == ""
    assert run.errors == ["budget_exceeded: turn 1 reply reached max_tokens 64"]


def test_total_budget_counts_estimated_tokens_when_the_server_reports_none(tmp_path, monkeypatch):
    """A server without `usage` cannot slip past the budget: replies are charged an estimate."""
    reply = {"body": {"choices": [{"message": {"role": "assistant", "content": "x" * 400, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "true"}'}}]}, "finish_reason": "tool_calls"}]}}
    with Stub(replay([reply] * 5)) as stub:
        _, _, run = run_loop(tmp_path, monkeypatch, stub.url, max_tokens=None, max_total_tokens=300)
    assert run.stop_reason == "budget" and len(stub.requests) == 3  # ~130 tokens charged per reply
    assert (run.usage["tokens_in"], run.usage["tokens_out"]) == (0, 0)  # usage.json keeps only what was reported
    assert "max_tokens" not in stub.requests[0]["body"]


def test_bodies_that_could_crash_a_naive_client(tmp_path, monkeypatch):
    """Half an emoji (a lone surrogate escape) is written, replaced, not a crash; absurdly nested
    JSON and an oversized body are endpoint errors."""
    half = '{"choices": [{"index": 0, "message": {"role": "assistant", "content": "done \\ud83d"}, "finish_reason": "stop"}]}'
    with Stub(replay([{"raw": half}])) as stub:
        code, raw, run = run_loop(tmp_path, monkeypatch, stub.url)
    assert code == 0 and run.ok and run.final_text == "done ?"
    for body in ("[" * 100_000, b"{" + b" " * (agent_loop.MAX_REPLY_BYTES + 1) + b"}"):
        with Stub(replay([{"raw": body}])) as stub:
            code, raw, run = run_loop(tmp_path, monkeypatch, stub.url)
        assert code == 1 and run.stop_reason == "error" and run.errors[0].startswith("agent_error: /chat/completions answered")


def test_responses_api_replies_are_checked_the_same_way():
    cut = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
           "output": [{"type": "message", "content": [{"type": "output_text", "text": "partial"}]}],
           "usage": {"input_tokens": 10, "output_tokens": 64}}
    reply = agent_loop._parse_responses(cut)
    assert reply.truncated and reply.text == "partial" and reply.usage == (10, 64) and reply.estimate is None
    for bad in ({"output": None}, {"output": [None]}, {"output": [{"type": "message", "content": [{"type": "output_text", "text": 3}]}]}, []):
        with pytest.raises(agent_loop.ModelError):
            agent_loop._parse_responses(bad)
    ok = agent_loop._parse_responses({"output": [{"type": "function_call", "call_id": "c", "name": "shell", "arguments": "{oops"}]})
    assert ok.calls[0].input == {"_invalid_json": "{oops"} and ok.estimate is not None
