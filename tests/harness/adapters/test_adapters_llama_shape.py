"""The built-in loop's requests are what llama-cpp-python 0.3.36's server accepts (issue 12, found
against the real server): `tool_choice: "auto"` is sent (without it the chatml-function-calling
handler drops the tools from the prompt) and an assistant turn that only called tools carries
content "" (null is an HTTP 500 there). A loopback stub enforces both; no live model."""

from __future__ import annotations

import io

from openai_stub import Stub

from skill_eval.harness.adapters import LaunchContext, agent_loop, get_adapter


def _canned_shell(self, command):
    return False, "exit code: 0\n", {"exit_code": 0}


def _llama_cpp_like(n, body):
    """What llama-cpp-python 0.3.36's server enforces, seen against the real one: an assistant message
    with content null is a 500 (pydantic), and without tool_choice the chatml-function-calling
    handler leaves the tools out of the prompt (the model can only answer in prose)."""
    for m in body["messages"]:
        if m["role"] == "assistant" and not isinstance(m.get("content"), str):
            return 500, {"error": {"message": "validation error: messages.content Input should be a valid string"}}, 0.0
    if n == 0:
        if body.get("tool_choice") != "auto":
            message = {"role": "assistant", "content": "I cannot run commands."}
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call__0_shell_cmpl-x", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}]}
    else:
        message = {"role": "assistant", "content": "Listed."}
    return 200, {"id": f"chatcmpl-{n}", "object": "chat.completion", "choices": [{"index": 0, "message": message,
                 "finish_reason": "stop"}], "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}}, 0.0


def test_requests_are_what_the_llama_cpp_server_accepts(tmp_path, monkeypatch):
    case = {"max_tokens": 64, "seed": 1, "replies": []}
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    adapter = get_adapter("openai-compatible")
    monkeypatch.setattr(agent_loop.Agent, "_shell", _canned_shell)
    monkeypatch.chdir(ws)
    with Stub(_llama_cpp_like) as stub:
        ctx = LaunchContext("list", home=home, workdir=ws, model="m", max_turns=3, base_url=stub.url,
                            max_tokens=case["max_tokens"], temperature=0.8, seed=case["seed"])
        out = io.StringIO()
        code = agent_loop.main(adapter.build_command(ctx)[5:], out=out)
    run = adapter.parse(out.getvalue().encode(), [], cwd=ws, installed_skills=[])
    assert code == 0 and run.ok and run.final_text == "Listed.", run.errors
    assert [r["body"]["tool_choice"] for r in stub.requests] == ["auto", "auto"]
    assert stub.requests[1]["body"]["messages"][2] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call__0_shell_cmpl-x", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}]}
    assert all(r["body"]["temperature"] == 0.8 and r["body"]["seed"] == 1 for r in stub.requests)
