"""Scripted turns take a model's think time: script `latency:`, a turn's `delay:`, a server's --latency."""

from __future__ import annotations

import http.client
import json
import time

import pytest

from skill_eval.core.errors import InputError
from skill_eval.harness.adapters.agent_loop import ScriptModel
from skill_eval.harness.modelserver import parse_script, start_server

SCRIPT = b"""
schema_version: 1
latency: 0.3
turns:
  - delay: 0.0
    tools:
      - shell: echo hi
  - tools:
      - shell: echo again
  - final: done
"""
TOOLS = [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


def _post(server, path, body):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    t = time.monotonic()
    conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    conn.getresponse().read()
    conn.close()
    return time.monotonic() - t


def _claude(messages, tools=TOOLS):
    return {"model": "m", "max_tokens": 10, "tools": tools, "messages": messages}


def _after(turn):
    """A history whose highest scripted call id is turn-1, so the server answers `turn`."""
    if turn == 0:
        return [{"role": "user", "content": "go"}]
    return [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_skev_t{turn - 1}_c0", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_skev_t{turn - 1}_c0", "content": "ok"}]}]


def test_script_latency_and_turn_delay():
    script = parse_script(SCRIPT, "s.yaml", yaml=True)
    assert script.latency == 0.3
    assert [script.delay(i) for i in range(4)] == [0.0, 0.3, 0.3, 0.3]
    with start_server("anthropic", script) as server:
        assert _post(server, "/v1/messages", _claude(_after(0))) < 0.25  # delay: 0 wins over latency
        assert _post(server, "/v1/messages", _claude(_after(1))) >= 0.3
        assert _post(server, "/v1/messages", _claude(_after(0), tools=[])) < 0.25  # auxiliary: no think time


@pytest.mark.parametrize("kind,path,body", [
    ("openai-responses", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "go"}],
                                                  "tools": [{"type": "function", "function": {"name": "shell", "parameters": {}}}]}),
    ("gemini", "/v1beta/models/g:generateContent", {"contents": [{"role": "user", "parts": [{"text": "go"}]}],
                                                    "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}]}),
])
def test_server_latency_override(kind, path, body):
    script = parse_script(SCRIPT.replace(b"  - delay: 0.0\n    tools:", b"  - tools:").replace(b"latency: 0.3\n", b""),
                          "s.yaml", yaml=True)
    assert script.latency == 0.0
    with start_server(kind, script, latency=0.4) as server:
        assert _post(server, path, body) >= 0.4


def test_scripted_loop_waits_per_turn():
    model = ScriptModel(parse_script(SCRIPT, "s.yaml", yaml=True))
    t = time.monotonic()
    model.complete([{"role": "user", "text": "go"}], [{"name": "shell", "parameters": {}}])
    assert time.monotonic() - t < 0.25
    t = time.monotonic()
    model.complete([{"role": "user", "text": "go"}, {"role": "assistant", "text": ""}], [{"name": "shell", "parameters": {}}])
    assert time.monotonic() - t >= 0.3


def test_negative_or_huge_delay_is_refused():
    with pytest.raises(InputError, match="delay"):
        parse_script(b"schema_version: 1\nturns:\n  - final: x\n    delay: -1\n", "s.yaml", yaml=True)
    with pytest.raises(InputError, match="latency"):
        parse_script(b"schema_version: 1\nlatency: 9999\nturns:\n  - final: x\n", "s.yaml", yaml=True)
