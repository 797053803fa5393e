"""Scripted model servers over loopback, driven like the real CLIs drive them (REPORT.md):
replayed turns, SSE framing, statelessness (retries, parallel conversations), request log.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skill_eval.core.errors import InputError, SkillEvalError
from skill_eval.harness.modelserver import load_script, parse_script, start_server
from skill_eval.harness.modelserver.script import json_for_schema, skill_md_path

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "agent-evals" / "skills" / "model-scripts" / "smoke-echo.yaml"

SKILL_SCRIPT = b"""
schema_version: 1
usage: {input_tokens: 7, output_tokens: 3}
turns:
  - say: Activating.
    tools:
      - skill: demo-skill
  - tools:
      - shell: echo hi > out.txt
      - read_file: notes.txt
  - final: All done.
"""


@pytest.fixture
def skill_script(tmp_path):
    path = tmp_path / "skill.yaml"
    path.write_bytes(SKILL_SCRIPT)
    return path


def post(server, path, body, headers=None, method="POST"):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, resp.getheader("Content-Type"), payload


def sse(payload: bytes) -> list[tuple[str | None, object]]:
    """Parse an SSE body strictly: every event is `event:`? + `data:` + blank line."""
    text = payload.decode()
    assert text.endswith("\n\n"), "SSE body must end with a blank line"
    events = []
    for block in text.split("\n\n")[:-1]:
        name, data = None, None
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data = value
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        events.append((name, data if data == "[DONE]" else json.loads(data)))
    return events


# -- Anthropic (Claude Code) ---------------------------------------------------------------

CLAUDE_TOOLS = [
    {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
    {"name": "Skill", "input_schema": {"type": "object", "properties": {"skill": {"type": "string"}}}},
    {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
]


def claude_request(messages):
    return {"model": "claude-opus-4-8", "max_tokens": 64000, "stream": True, "system": [{"type": "text", "text": "sys"}], "tools": CLAUDE_TOOLS, "messages": messages}


def anthropic_blocks(events):
    """Rebuild content blocks from the SSE deltas, checking the event order as the SDK would."""
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    blocks = {}
    for name, data in events:
        assert data["type"] == name
        if name == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"], _json="")
        elif name == "content_block_delta":
            b = blocks[data["index"]]
            if data["delta"]["type"] == "text_delta":
                b["text"] += data["delta"]["text"]
            else:
                b["_json"] += data["delta"]["partial_json"]
    out = []
    for i in sorted(blocks):
        b = blocks.pop(i)
        raw = b.pop("_json")
        if b["type"] == "tool_use":
            b["input"] = json.loads(raw)
        out.append(b)
    stop = events[-2][1]["delta"]["stop_reason"]
    return out, stop


def test_anthropic_conversation(skill_script):
    with start_server("anthropic", skill_script) as server:
        assert post(server, "/", None, method="HEAD")[0] == 200  # Claude's preflight
        user = {"role": "user", "content": [{"type": "text", "text": "write a greeting"}]}
        status, ctype, payload = post(server, "/v1/messages?beta=true", claude_request([user]), {"x-api-key": "dummy"})
        assert status == 200 and ctype == "text/event-stream"
        blocks, stop = anthropic_blocks(sse(payload))
        assert stop == "tool_use"
        assert blocks[0] == {"type": "text", "text": "Activating."}
        assert blocks[1]["name"] == "Skill" and blocks[1]["input"] == {"skill": "demo-skill"}
        tool_id = blocks[1]["id"]
        # the next request carries the assistant turn and the tool result, as Claude Code sends it
        history = [
            user,
            {"role": "assistant", "content": [{"type": "text", "text": "Activating."}, {"type": "tool_use", "id": tool_id, "name": "Skill", "input": {"skill": "demo-skill"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "Launching skill: demo-skill"}]},
            {"role": "user", "content": [{"type": "text", "text": "Base directory for this skill: ..."}]},
        ]
        blocks, stop = anthropic_blocks(sse(post(server, "/v1/messages?beta=true", claude_request(history))[2]))
        assert [b["name"] for b in blocks] == ["Bash", "Bash"]  # read_file of a relative path falls back to cat
        assert blocks[0]["input"]["command"] == "echo hi > out.txt" and blocks[1]["input"]["command"] == "cat notes.txt"
        history += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": b["id"], "name": "Bash", "input": b["input"]} for b in blocks]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": ""} for b in blocks]},
        ]
        blocks, stop = anthropic_blocks(sse(post(server, "/v1/messages?beta=true", claude_request(history))[2]))
        assert blocks == [{"type": "text", "text": "All done."}] and stop == "end_turn"
        # non-streaming and count_tokens also answer
        _, ctype, payload = post(server, "/v1/messages", dict(claude_request([user]), stream=False))
        message = json.loads(payload)
        assert ctype == "application/json" and message["content"][1]["name"] == "Skill" and message["usage"]["input_tokens"] == 7
        assert json.loads(post(server, "/v1/messages/count_tokens", {"messages": []})[2]) == {"input_tokens": 7}
        log = server.requests
        assert [r.turn for r in log if r.path.startswith("/v1/messages?")] == [0, 1, 2]
        assert all("x-api-key" not in r.headers for r in log)  # credentials are never logged
        assert log[1].body["messages"] == [user] and log[1].method == "POST"


def test_anthropic_fallback_without_our_ids_and_auxiliary(skill_script):
    with start_server("anthropic", skill_script) as server:
        # a client that rewrote tool ids: the turn is the count of assistant tool_use messages
        history = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "other_1", "name": "Skill", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "other_1", "content": "ok"}]},
        ]
        blocks, _ = anthropic_blocks(sse(post(server, "/v1/messages", claude_request(history))[2]))
        assert blocks[0]["name"] == "Bash"
        # tool-less title request (output_config json_schema) does not consume a turn
        title = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "t"}], "output_config": {"format": {"type": "json_schema", "schema": {"type": "object", "properties": {"title": {"type": "string"}}}}}}
        blocks, _ = anthropic_blocks(sse(post(server, "/v1/messages", title)[2]))
        assert json.loads(blocks[0]["text"]) == {"title": "scripted"}
        assert server.requests[-1].turn is None and server.requests[-1].note == "auxiliary"


def test_statelessness_retries_and_parallel_conversations(skill_script):
    """The same request always gets the same turn; interleaved conversations do not interfere."""
    with start_server("anthropic", skill_script) as server:
        first = claude_request([{"role": "user", "content": "go"}])
        answers = [anthropic_blocks(sse(post(server, "/v1/messages", first)[2]))[0] for _ in range(3)]
        assert answers[0] == answers[1] == answers[2]
        tid = answers[0][1]["id"]
        second = claude_request(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Skill", "input": {"skill": "demo-skill"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": "ok"}]},
            ]
        )
        results: dict[int, list] = {}

        def worker(i):
            body = first if i % 2 == 0 else second
            results[i] = anthropic_blocks(sse(post(server, "/v1/messages", body)[2]))[0]

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, blocks in results.items():
            assert blocks[-1]["name"] == ("Skill" if i % 2 == 0 else "Bash")
        assert len(results) == 64 and len(server.requests) == 67


# -- OpenAI Responses (Codex) ----------------------------------------------------------------

CODEX_DEVELOPER = (
    "<skills_instructions>## Skills\n### Skill roots\n- `r0` = `/h/.codex/skills`\n- `r1` = `/ws/.agents/skills`\n"
    "### Available skills\n- demo-skill: Demo (write greetings). (file: r1/demo-skill/SKILL.md)\n</skills_instructions>"
)
CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
    {"type": "function", "name": "write_stdin", "parameters": {"type": "object", "properties": {}}},
]


def codex_request(items):
    base_items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": CODEX_DEVELOPER}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "write a greeting"}]},
    ]
    return {"model": "gpt-5.5", "instructions": "", "stream": True, "input": base_items + items, "tools": CODEX_TOOLS, "tool_choice": "auto", "parallel_tool_calls": False, "store": False}


def responses_output(events):
    names = [n for n, _ in events]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    seqs = [d["sequence_number"] for _, d in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    done = [d["item"] for n, d in events if n == "response.output_item.done"]
    completed = events[-1][1]["response"]
    assert completed["output"] == done and completed["status"] == "completed"
    return done, completed["usage"]


def test_openai_responses_codex_shape(skill_script):
    with start_server("openai-responses", skill_script) as server:
        status, ctype, payload = post(server, "/v1/responses", codex_request([]), {"Authorization": "Bearer dummy", "originator": "codex_exec"})
        assert status == 200 and ctype == "text/event-stream"
        items, usage = responses_output(sse(payload))
        assert usage["input_tokens"] == 7 and usage["output_tokens"] == 3
        assert items[0]["type"] == "message" and items[0]["content"][0]["text"] == "Activating."
        call = items[1]
        # no activation tool in Codex: the model reads SKILL.md where the developer message says it is
        assert call["type"] == "function_call" and call["name"] == "exec_command"
        assert json.loads(call["arguments"]) == {"cmd": "cat /ws/.agents/skills/demo-skill/SKILL.md"}
        history = [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Activating."}]},
            {"type": "function_call", "call_id": call["call_id"], "name": "exec_command", "arguments": call["arguments"]},
            {"type": "function_call_output", "call_id": call["call_id"], "output": "Chunk ID: 1\nProcess exited with code 0\nOutput:\n---\nname: demo-skill"},
        ]
        items, _ = responses_output(sse(post(server, "/v1/responses", codex_request(history))[2]))
        assert [json.loads(i["arguments"])["cmd"] for i in items] == ["echo hi > out.txt", "cat notes.txt"]
        history += [{"type": "function_call", "call_id": i["call_id"], "name": i["name"], "arguments": i["arguments"]} for i in items]
        history += [{"type": "function_call_output", "call_id": i["call_id"], "output": "ok"} for i in items]
        items, _ = responses_output(sse(post(server, "/v1/responses", codex_request(history))[2]))
        assert items == [{"id": "msg_skev_t2", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "All done.", "annotations": []}]}]
        # deltas agree with the done items
        events = sse(post(server, "/v1/responses", codex_request(history[:3]))[2])
        args_delta = "".join(d["delta"] for n, d in events if n == "response.function_call_arguments.delta")
        assert args_delta == "".join(i["arguments"] for i in responses_output(events)[0])
        assert all("authorization" not in r.headers for r in server.requests)
        assert server.requests[0].headers.get("originator") == "codex_exec"


def test_openai_chat_completions(skill_script):
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("shell", "read_file", "activate_skill")]
    with start_server("openai-responses", skill_script) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": tools}
        reply = json.loads(post(server, "/v1/chat/completions", body)[2])
        msg = reply["choices"][0]["message"]
        assert reply["choices"][0]["finish_reason"] == "tool_calls" and msg["content"] == "Activating."
        assert msg["tool_calls"][0]["function"]["name"] == "activate_skill"
        assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"name": "demo-skill"}
        # streaming chat: chunks then [DONE]
        events = sse(post(server, "/v1/chat/completions", dict(body, stream=True))[2])
        assert events[-1] == (None, "[DONE]")
        assert events[-2][1]["choices"][0]["finish_reason"] == "tool_calls"
        models = json.loads(post(server, "/v1/models", None, method="GET")[2])
        assert models["data"][0]["id"] == "scripted"


# -- Gemini ------------------------------------------------------------------------------------

GEMINI_TOOLS = [
    {
        "functionDeclarations": [
            {"name": "run_shell_command", "parametersJsonSchema": {"type": "object", "properties": {"command": {"type": "string"}}}},
            {"name": "activate_skill", "parametersJsonSchema": {"type": "object", "properties": {"name": {"type": "string", "enum": ["demo-skill"]}}}},
            {"name": "read_file", "parametersJsonSchema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}},
        ]
    }
]


def gemini_request(contents):
    return {"contents": [{"role": "user", "parts": [{"text": "write a greeting"}]}, *contents], "systemInstruction": {"parts": [{"text": "sys"}]}, "tools": GEMINI_TOOLS}


def gemini_parts(payload):
    events = sse(payload)
    assert len(events) == 1 and events[0][0] is None
    chunk = events[0][1]
    assert chunk["candidates"][0]["finishReason"] == "STOP"
    assert chunk["usageMetadata"]["promptTokenCount"] == 7
    return chunk["candidates"][0]["content"]["parts"]


def test_gemini_conversation_and_router(skill_script):
    path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    with start_server("gemini", skill_script) as server:
        status, ctype, payload = post(server, path, gemini_request([]), {"x-goog-api-key": "dummy"})
        assert status == 200 and ctype == "text/event-stream"
        parts = gemini_parts(payload)
        assert parts[0] == {"text": "Activating."}
        assert parts[1]["functionCall"]["name"] == "activate_skill" and parts[1]["functionCall"]["args"] == {"name": "demo-skill"}
        # Gemini CLI may drop our ids: the fallback counts model contents holding function calls
        history = [
            {"role": "model", "parts": [{"text": "Activating."}, {"functionCall": {"name": "activate_skill", "args": {"name": "demo-skill"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "activate_skill", "response": {"output": "<activated_skill/>"}}}]},
        ]
        parts = gemini_parts(post(server, path, gemini_request(history))[2])
        assert [p["functionCall"]["name"] for p in parts] == ["run_shell_command", "read_file"]
        assert parts[1]["functionCall"]["args"] == {"file_path": "notes.txt"}
        history += [{"role": "model", "parts": parts}, {"role": "user", "parts": [{"functionResponse": {"name": "x", "response": {}}}]}]
        assert gemini_parts(post(server, path, gemini_request(history))[2]) == [{"text": "All done."}]
        # the auto-model router: tool-less generateContent with a JSON schema, score >= 1
        router = {
            "contents": [{"role": "user", "parts": [{"text": "route"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {"type": "object", "properties": {"complexity_reasoning": {"type": "string"}, "complexity_score": {"type": "integer", "minimum": 1, "maximum": 100}}}},
        }
        _, ctype, payload = post(server, "/v1beta/models/gemini-3.5-flash-lite:generateContent", router)
        answer = json.loads(json.loads(payload)["candidates"][0]["content"]["parts"][0]["text"])
        assert ctype == "application/json" and answer["complexity_score"] >= 1
        assert [r.turn for r in server.requests] == [0, 1, 2, None]
        assert all("x-goog-api-key" not in r.headers for r in server.requests)


# -- scripts, errors, command ----------------------------------------------------------------


def test_script_validation_and_digest(tmp_path):
    script = load_script(SMOKE)
    import hashlib

    assert script.model_id == "scripted:" + hashlib.sha256(SMOKE.read_bytes()).hexdigest()
    with pytest.raises(InputError, match="last turn must be a final"):
        parse_script(b"schema_version: 1\nturns:\n  - tools: [{shell: ls}]\n", "x", yaml=True)
    with pytest.raises(InputError, match="only the last turn"):
        parse_script(b'{"schema_version": 1, "turns": [{"final": "a"}, {"final": "b"}]}', "x", yaml=False)
    with pytest.raises(InputError, match="model_script"):
        parse_script(b"schema_version: 1\nturns:\n  - tools: [{bogus: 1}]\n  - final: x\n", "x", yaml=True)
    with pytest.raises(InputError, match="duplicate"):
        parse_script(b"schema_version: 1\nschema_version: 1\nturns: [{final: x}]\n", "x", yaml=True)
    with pytest.raises(SkillEvalError, match="unknown model server kind"):
        start_server("nope", SMOKE)


def test_exhausted_script_and_errors(tmp_path):
    with start_server("anthropic", SMOKE) as server:
        history = [{"role": "user", "content": "go"}]
        for turn in range(3):  # the smoke script has 2 turns; a third request exhausts it
            history.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_skev_t{turn}_c0", "name": "Bash", "input": {}}]})
            history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_skev_t{turn}_c0", "content": ""}]})
        blocks, _ = anthropic_blocks(sse(post(server, "/v1/messages", claude_request(history))[2]))
        assert "script has no turn 4" in blocks[0]["text"] and server.requests[-1].note == "exhausted"
        conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
        conn.request("POST", "/v1/messages", body=b"{not json", headers={"Content-Type": "application/json"})
        assert conn.getresponse().status == 400
        assert post(server, "/v1/other", {"a": 1})[0] == 404


def test_helpers():
    assert json_for_schema({"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}, "b": {"type": "boolean"}, "e": {"enum": ["x", "y"]}}}) == {"n": 3, "b": False, "e": "x"}
    assert skill_md_path("demo-skill", CODEX_DEVELOPER) == "/ws/.agents/skills/demo-skill/SKILL.md"
    assert skill_md_path("other", CODEX_DEVELOPER) == ".agents/skills/other/SKILL.md"
    plain = "- r3 = /x/skills\n- demo-skill: d (file: r3/demo-skill/SKILL.md)"  # the form REPORT.md shows
    assert skill_md_path("demo-skill", plain) == "/x/skills/demo-skill/SKILL.md"


def test_model_server_command(tmp_path):
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "skill_eval", "model-server", "--json", "--kind", "anthropic", "--script", str(SMOKE), "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
    )
    try:
        info = json.loads(proc.stdout.readline())
        assert info["model"] == load_script(SMOKE).model_id and info["kind"] == "anthropic"
        conn = http.client.HTTPConnection("127.0.0.1", info["port"], timeout=5)
        conn.request("POST", "/v1/messages", body=json.dumps(claude_request([{"role": "user", "content": "hi"}])), headers={"x-api-key": "secret-value"})
        assert conn.getresponse().status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == 1 and records[0]["turn"] == 0 and "secret-value" not in log.read_text()


def test_committed_model_scripts_are_valid():
    scripts = sorted((ROOT / "agent-evals" / "skills" / "model-scripts").glob("*.y*ml")) + sorted(
        (ROOT / "agent-evals" / "skills" / "model-scripts").glob("*.json")
    )
    assert scripts
    for path in scripts:
        script = load_script(path)
        assert script.model_id.startswith("scripted:") and "final" in script.turns[-1]
