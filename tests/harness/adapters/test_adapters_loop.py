"""The built-in loop end to end in a tmp sandbox: against the scripted OpenAI-style server
(Chat Completions and Responses), and as the model-free `scripted` adapter.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from skill_eval.core import schemas
from skill_eval.harness.adapters import LaunchContext, get_adapter
from skill_eval.harness.adapters.agent_loop import DEFAULT_KEY_VAR
from skill_eval.harness.adapters.base import SCRIPTED_DUMMY_KEY
from skill_eval.harness.modelserver import load_script, start_server

SKILL_MD = """---
name: demo-skill
description: Write greeting files. Use when the user asks for a greeting.
---

# Demo skill

DEMO-SKILL-BODY-MARKER-7731
"""

SCRIPT = """
schema_version: 1
turns:
  - say: Loading the skill.
    tools:
      - skill: demo-skill
  - tools:
      - shell: echo hello > out.txt && env
      - read_file: .agents/skills/demo-skill/SKILL.md
  - final: "Done: out.txt written."
"""


UNREACHABLE = "http://127.0.0.1:9"
RC = {UNREACHABLE: 1}  # the loop exits 1 when the model endpoint fails


@pytest.fixture
def sandbox(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    skill = ws / ".agents" / "skills" / "demo-skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    home.mkdir()
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    return ws, home, script


def launch(adapter, ws, home, base_url=None, **kw):
    ctx = LaunchContext("write a greeting", home=home, workdir=ws, model=kw.pop("model", "scripted"), max_turns=kw.pop("max_turns", 10),
                        base_url=base_url, **kw)
    argv = adapter.build_command(ctx)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **adapter.env(ctx)}
    proc = subprocess.run(argv, cwd=ws, env=env, capture_output=True, timeout=60, check=False)
    assert proc.returncode == RC.get(base_url, 0), proc.stderr.decode()
    roots = adapter.skill_dirs(home, ws)
    return proc.stdout, adapter.parse(proc.stdout, roots, cwd=ws, installed_skills=["demo-skill"]), argv


def check_run(run, ws):
    assert run.ok, run.errors
    assert all(schemas.errors(e, "event") == [] for e in run.events)
    assert schemas.errors(dict(run.usage, wall_clock_s=0.1), "usage") == []
    kinds = [e["type"] for e in run.events]
    first = kinds.index("skill_activated")
    assert run.events[first] == {"type": "skill_activated", "skill": "demo-skill", "tier": "1"}
    assert kinds[first - 2 : first] == ["tool_call", "tool_result"]  # reported after the result, like the CLIs
    assert [e["tool"] for e in run.events if e["type"] == "tool_call"] == ["activate_skill", "shell", "read_file"]
    assert {"type": "skill_file_read", "skill": "demo-skill", "path": "SKILL.md"} in run.events
    # activate_skill served the body; reading SKILL.md again is a second (tier-1) activation
    assert [e["skill"] for e in run.events if e["type"] == "skill_activated"] == ["demo-skill", "demo-skill"]
    results = [e for e in run.events if e["type"] == "tool_result"]
    assert "DEMO-SKILL-BODY-MARKER-7731" in results[0]["output"] and not any(r["is_error"] for r in results)
    assert run.final_text == "Done: out.txt written."
    assert run.usage["turns"] == 3 and run.usage["tool_calls"] == 3 and run.stop_reason == "completed"
    assert (ws / "out.txt").read_text() == "hello\n"
    # the shell tool's children never see the endpoint key
    assert DEFAULT_KEY_VAR not in results[1]["output"] and SCRIPTED_DUMMY_KEY not in results[1]["output"]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_loop_against_scripted_server(sandbox, api):
    ws, home, script = sandbox
    adapter = get_adapter("openai-compatible", api=api)
    with start_server("openai-responses", script) as server:
        raw, run, argv = launch(adapter, ws, home, base_url=server.url)
        requests = server.requests
    check_run(run, ws)
    assert SCRIPTED_DUMMY_KEY not in " ".join(argv)
    route = "/v1/chat/completions" if api == "chat" else "/v1/responses"
    assert [r.path for r in requests] == [route] * 3 and [r.turn for r in requests] == [0, 1, 2]
    first = requests[0].body
    # progressive disclosure: name + description in the system prompt, body only on activation
    system = first["messages"][0]["content"] if api == "chat" else first["instructions"]
    assert "- demo-skill: Write greeting files." in system and "DEMO-SKILL-BODY-MARKER" not in json.dumps(first)
    assert "DEMO-SKILL-BODY-MARKER" in json.dumps(requests[1].body)
    assert all("authorization" not in r.headers for r in requests)
    # the raw stream is the loop's own JSONL
    lines = [json.loads(line) for line in raw.decode().splitlines()]
    assert lines[0]["type"] == "start" and lines[-1] == {"type": "result", "status": "completed", "final": "Done: out.txt written.", "turns": 3}


def test_scripted_adapter_without_a_model(sandbox):
    ws, home, script = sandbox
    adapter = get_adapter("scripted")
    raw, run, _ = launch(adapter, ws, home, script=script)
    check_run(run, ws)
    assert run.model == load_script(script).model_id == adapter.model_id(script)


def test_max_turns_unknown_skill_and_missing_tool(sandbox, tmp_path):
    ws, home, _ = sandbox
    script = tmp_path / "bad.yaml"
    script.write_text(
        "schema_version: 1\nturns:\n"
        "  - tools: [{skill: no-such-skill}]\n"
        "  - tools: [{tool: write_file, input: {path: x}}]\n"
        "  - tools: [{shell: 'false'}]\n"
        "  - final: never reached\n"
    )
    _, run, _ = launch(get_adapter("scripted"), ws, home, script=script, max_turns=3)
    assert [r.split(":")[0] for r in run.errors] == ["unknown_skill", "tool_not_registered", "max_turns"]
    assert run.stop_reason == "max_turns" and not run.ok
    failing = [e for e in run.events if e["type"] == "tool_result"][2]
    assert failing["is_error"] is True and failing["output"].startswith("exit code: 1")  # a failing command is not a run error


def test_unreachable_endpoint_and_uninstalled_skill(sandbox):
    ws, home, _ = sandbox
    adapter = get_adapter("openai-compatible")
    _, run, _ = launch(adapter, ws, home, base_url=UNREACHABLE)
    assert run.stop_reason == "error"
    assert [r.split(":")[0] for r in run.errors] == ["agent_error", "agent_error"]
    empty = adapter.parse(b'{"type": "start", "skills": [], "skill_roots": []}\n{"type": "result", "status": "completed", "final": "x", "turns": 1}\n', installed_skills=["demo-skill"])
    assert empty.errors == ["skill_not_loaded: demo-skill is installed but the loop did not discover it"]


def test_malformed_skill_is_reported(sandbox, tmp_path):
    ws, home, script = sandbox
    broken = ws / ".agents" / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: broken\nname: twice\n---\n")
    _, run, _ = launch(get_adapter("scripted"), ws, home, script=script)
    assert [r.split(":")[0] for r in run.errors] == ["skill_not_loaded"]
    assert "duplicate key" in run.errors[0]


def test_base_url_is_required():
    with pytest.raises(ValueError):
        get_adapter("openai-compatible").build_command(LaunchContext("p", model="m", max_turns=1, workdir=Path("/w"), home=Path("/h")))
