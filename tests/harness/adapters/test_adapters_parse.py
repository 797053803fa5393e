"""Every recorded agent stream parses into the normalized vocabulary, and every known
silent failure of the real CLIs becomes an explicit run_error.

The streams in tests/data/streams/ are copies of research/agent-cli/streams/ (recorded
from Claude Code 2.1.197, Codex 0.171.0 and Gemini CLI 0.61.0 against a scripted server).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from skill_eval.core import schemas
from skill_eval.core.errors import ConfigError
from skill_eval.harness.adapters import LaunchContext, _events, adapter_names, base, binary_info, get_adapter

STREAMS = Path(__file__).parents[2] / "data" / "streams"
ADAPTER_FOR_DIR = {"claude": "claude-code", "codex": "codex", "gemini": "gemini-cli"}

# the exact key set of each event type (docs/ARCHITECTURE.md, events.jsonl)
VOCABULARY = {
    "skill_activated": {"type", "skill", "tier"},
    "skill_file_read": {"type", "skill", "path"},
    "tool_call": {"type", "id", "tool", "input"},
    "tool_result": {"type", "id", "is_error", "output"},
    "message": {"type", "role", "text"},
    "run_error": {"type", "reason"},
}
USAGE_KEYS = {"turns", "tool_calls", "tokens_in", "tokens_out", "cost_usd", "wall_clock_s", "retries", "stop_reason"}


def _workspace(stream: str) -> str:
    """The recording's workspace dir (from the first absolute path mentioning /workspace)."""
    text = (STREAMS / stream).read_text()
    marker = text.find("/sandbox/")
    if marker < 0:
        return "/sandbox/unknown/workspace"
    end = text.find("/workspace", marker)
    return text[marker : end + len("/workspace")]


# stream -> (activations [(skill, tier)], tools called in order, final text, (tokens in, out), error kinds)
EXPECTED = {
    "claude/bash_stream.jsonl": ([], ["Bash"], "Done: wrote hello to out.txt.", (200, 40), []),
    "claude/default_permission_denied_stream.jsonl": ([], ["Bash"], "Done: wrote hello to out.txt.", (200, 40), ["permission_denied"]),
    "claude/skill_partial_messages_stream.jsonl": ([("demo-skill", "1")], ["Skill", "Bash"], "Done: skill used and out.txt written.", (300, 60), []),
    "claude/skill_tool_stream.jsonl": ([("demo-skill", "1")], ["Skill", "Bash"], "Done: skill used and out.txt written.", (300, 60), []),
    # a typed /demo-skill never reaches the stream (REPORT §1): nothing to see, nothing invented
    "claude/slash_invocation_stream.jsonl": ([], [], "Acknowledged the slash-invoked skill.", (100, 20), []),
    "claude/unknown_and_personal_skill_stream.jsonl": ([("personal-skill", "1")], ["Skill", "Skill"], "done", (300, 60), ["unknown_skill"]),
    "codex/dollar_mention_stream.jsonl": ([], [], "Acknowledged explicit skill mention.", (100, 20), ["model_config"]),
    "codex/skill_stream.jsonl": ([("demo-skill", "2")], ["command_execution", "command_execution"], "Done: skill read and out.txt written.", (300, 60), []),
    "codex/skill_stream_unknown_model.jsonl": (
        [("demo-skill", "2")],
        ["command_execution", "command_execution"],
        "Done: skill read and out.txt written.",
        (300, 60),
        ["model_config"],
    ),
    "codex/workspace_write_sandbox_stream.jsonl": ([], ["command_execution"], "done", (200, 40), ["sandbox_denied"]),
    "gemini/no_yolo_tools_missing_stream.jsonl": (
        [],
        ["activate_skill", "run_shell_command"],
        "Done: skill activated and out.txt written.",
        (300, 60),
        ["tool_not_registered", "tool_not_registered"],
    ),
    "gemini/skill_stream.jsonl": ([("demo-skill", "1")], ["activate_skill", "run_shell_command"], "Done: skill activated and out.txt written.", (400, 80), []),
    # recorded by tests/harness/test_e2e_clis.py (same pinned versions, skill-eval's own scripted servers)
    "claude/e2e_skill_stream.jsonl": ([("demo-skill", "1")], ["Skill", "Bash"], "Done: out.txt written.", (300, 60), []),
    "claude/e2e_max_turns_stream.jsonl": ([("demo-skill", "1")], ["Skill"], "", (100, 20), ["max_turns"]),
    # --bare: no Skill tool, project skills not loaded; the scripted Skill call is refused
    "claude/e2e_bare_stream.jsonl": ([], ["Skill", "Bash"], "Done: out.txt written.", (300, 60), ["tool_not_registered"]),
    "codex/e2e_skill_stream.jsonl": ([("demo-skill", "2")], ["command_execution", "command_execution"], "Done: out.txt written.", (300, 60), []),
    "gemini/e2e_skill_stream.jsonl": ([("demo-skill", "1")], ["activate_skill", "run_shell_command"], "Done: out.txt written.", (300, 60), []),
    "gemini/e2e_max_turns_stream.jsonl": ([("demo-skill", "1")], ["activate_skill"], "", (100, 20), ["max_turns"]),
    "gemini/e2e_no_yolo_stream.jsonl": (
        [],
        ["activate_skill", "run_shell_command"],
        "Done: out.txt written.",
        (300, 60),
        ["tool_not_registered", "tool_not_registered"],
    ),
}


def _parse(stream: str, **kw):
    adapter = get_adapter(ADAPTER_FOR_DIR[stream.split("/")[0]])
    ws = _workspace(stream)
    home = ws.rsplit("/", 1)[0] + "/home"
    roots = adapter.skill_dirs(Path(home), Path(ws))
    return adapter.parse((STREAMS / stream).read_bytes(), roots, cwd=ws, **kw)


def assert_vocabulary(run) -> None:
    """Exact key sets, schemas/event.schema.json per line, schemas/usage.schema.json once the
    runner has filled wall_clock_s."""
    for event in run.events:
        assert schemas.errors(event, "event") == [], event
        assert event["type"] in VOCABULARY, event
        assert set(event) == VOCABULARY[event["type"]], event
        json.dumps(event)  # serializable as one events.jsonl line
        if event["type"] == "skill_activated":
            assert event["tier"] in ("1", "2", "manual")
    assert set(run.usage) == USAGE_KEYS
    assert run.usage["wall_clock_s"] is None and schemas.errors(dict(run.usage, wall_clock_s=1.5), "usage") == []
    assert [e["reason"] for e in run.events if e["type"] == "run_error"] == run.errors


def test_every_recorded_stream_has_expectations():
    recorded = {str(p.relative_to(STREAMS)) for p in STREAMS.rglob("*.jsonl")}
    assert recorded == set(EXPECTED)


@pytest.mark.parametrize("stream", sorted(EXPECTED))
def test_recorded_stream(stream):
    activations, tools, final, tokens, error_kinds = EXPECTED[stream]
    run = _parse(stream)
    assert_vocabulary(run)
    assert [(e["skill"], e["tier"]) for e in run.events if e["type"] == "skill_activated"] == activations
    assert [e["tool"] for e in run.events if e["type"] == "tool_call"] == tools
    assert run.usage["tool_calls"] == len(tools)
    assert run.final_text == final
    assert (run.usage["tokens_in"], run.usage["tokens_out"]) == tokens
    assert [r.split(":", 1)[0] for r in run.errors] == error_kinds
    assert run.ok is (not error_kinds)
    # every tool call got its result, in order
    calls = [e["id"] for e in run.events if e["type"] == "tool_call"]
    results = [e["id"] for e in run.events if e["type"] == "tool_result"]
    assert calls == results


def test_claude_partial_messages_do_not_duplicate_events():
    plain = _parse("claude/skill_tool_stream.jsonl")
    partial = _parse("claude/skill_partial_messages_stream.jsonl")
    strip = lambda run: [(e["type"], e.get("tool"), e.get("skill"), e.get("text")) for e in run.events]  # noqa: E731
    assert strip(plain) == strip(partial)


def test_claude_usage_and_identity():
    run = _parse("claude/skill_tool_stream.jsonl")
    assert run.usage["turns"] == 4 and run.usage["cost_usd"] == 0.003
    assert run.agent_version == "2.1.197" and run.model == "claude-opus-4-8[1m]"
    assert run.stop_reason == "completed"


def test_claude_permission_denial_names_the_call():
    run = _parse("claude/default_permission_denied_stream.jsonl")
    assert run.errors == ["permission_denied: Bash call toolu_8ad9a442c8814bbfa7e1"]
    result = next(e for e in run.events if e["type"] == "tool_result")
    assert result["is_error"] is True and "was blocked" in result["output"]


def test_claude_installed_skill_missing_from_init_is_an_error():
    run = _parse("claude/bash_stream.jsonl", installed_skills=["demo-skill"])  # bundled-only skill list
    assert run.errors == ["skill_not_loaded: demo-skill is installed but not in the agent's skill list"]
    assert _parse("claude/skill_tool_stream.jsonl", installed_skills=["demo-skill"]).errors == []


def test_codex_tier2_activation_comes_with_a_file_read():
    run = _parse("codex/skill_stream.jsonl")
    kinds = [e["type"] for e in run.events]
    read = kinds.index("skill_file_read")
    assert run.events[read] == {"type": "skill_file_read", "skill": "demo-skill", "path": "SKILL.md"}
    assert run.events[read + 1] == {"type": "skill_activated", "skill": "demo-skill", "tier": "2"}


def test_codex_dollar_mention_is_invisible_not_invented():
    run = _parse("codex/dollar_mention_stream.jsonl")
    assert not [e for e in run.events if e["type"].startswith("skill_")]


def test_gemini_deltas_join_into_messages():
    run = _parse("gemini/skill_stream.jsonl")
    assert [e["text"] for e in run.events if e["type"] == "message"] == ["Activating skill.", "Done: skill activated and out.txt written."]
    assert run.model == "auto"


def test_claude_bare_with_installed_skill():
    run = _parse("claude/e2e_bare_stream.jsonl", installed_skills=["demo-skill"])
    assert [r.split(":")[0] for r in run.errors] == ["tool_not_registered", "skill_not_loaded", "tool_not_registered"]


@pytest.mark.parametrize(("stream", "code"), [("claude/e2e_max_turns_stream.jsonl", 1), ("gemini/e2e_max_turns_stream.jsonl", 53), ("codex/skill_stream.jsonl", 137)])
def test_nonzero_exit_is_a_run_error(stream, code):
    run = _parse(stream, exit_code=code)
    assert run.errors[-1].endswith(f"exited with status {code}")
    assert run.events[-1] == {"type": "run_error", "reason": run.errors[-1]}
    assert run.stop_reason != "completed" and run.usage["stop_reason"] == run.stop_reason
    assert _parse(stream, exit_code=0).errors == _parse(stream).errors


# -- synthetic failure streams (modes the recordings do not cover) ------------------------


def _lines(*objs) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


CLAUDE_INIT = {"type": "system", "subtype": "init", "tools": ["Bash", "Skill"], "skills": ["demo"], "claude_code_version": "2.1.197", "model": "m"}


def _claude_result(**kw):
    base_result = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 1, "result": "x", "usage": {"input_tokens": 1, "output_tokens": 1}, "permission_denials": []}
    base_result.update(kw)
    return base_result


@pytest.mark.parametrize(
    ("result", "stop", "kind"),
    [
        (_claude_result(subtype="error_max_turns", num_turns=5, result=None), "max_turns", "max_turns"),
        (_claude_result(subtype="error_max_budget_usd"), "budget", "budget_exceeded"),
        (_claude_result(subtype="error_during_execution"), "error", "agent_error"),
        (_claude_result(is_error=True, result="API Error: 500"), "error", "agent_error"),
        (_claude_result(subtype="something_new"), "error", "agent_error"),
    ],
)
def test_claude_result_failures(result, stop, kind):
    run = get_adapter("claude-code").parse(_lines(CLAUDE_INIT, result))
    assert run.stop_reason == stop and run.usage["stop_reason"] == stop
    assert run.errors and run.errors[0].startswith(kind + ":")
    assert not run.ok


def test_claude_missing_skill_tool_and_no_such_tool():
    init = dict(CLAUDE_INIT, tools=["Bash"])
    use = {"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "demo"}}]}}
    res = {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "<tool_use_error>No such tool available: Skill. Skill exists but is not enabled in this context.</tool_use_error>"}]},
    }
    run = get_adapter("claude-code").parse(_lines(init, use, res, _claude_result()), installed_skills=["demo"])
    kinds = [r.split(":")[0] for r in run.errors]
    assert kinds == ["tool_not_registered", "tool_not_registered"]
    assert not [e for e in run.events if e["type"] == "skill_activated"]


@pytest.mark.parametrize("name", ["claude-code", "codex", "gemini-cli", "openai-compatible", "scripted"])
def test_truncated_and_malformed_streams_fail_explicitly(name):
    adapter = get_adapter(name)
    empty = adapter.parse(b"")
    assert empty.stop_reason == "incomplete" and empty.errors[0].startswith("incomplete_stream:")
    garbage = adapter.parse(b'{"type": "x"}\nnot json\n{"a": 1, "a": 2}\n[1]\n\xff\xfe\n')
    kinds = [r.split(":")[0] for r in garbage.errors]
    assert kinds.count("malformed_stream") == 5  # bad UTF-8, not JSON, dup key, not an object, the bad line and kinds[-1] == "incomplete_stream"
    assert_vocabulary(garbage)


def test_line_separators_inside_json_strings_do_not_split_lines():
    text = "out\u2028put\x85 \u2029end"
    raw = _lines({"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": text}}, {"type": "turn.completed", "usage": {}}).replace(b"\\u2028", "\u2028".encode()).replace(b"\\u0085", "\x85".encode()).replace(b"\\u2029", "\u2029".encode())
    assert "\u2028".encode() in raw
    run = get_adapter("codex").parse(raw.replace(b"\n", b"\r\n"))
    assert run.ok and run.final_text == text


def test_codex_failures():
    codex = get_adapter("codex")
    failed = codex.parse(_lines({"type": "turn.started"}, {"type": "error", "message": "stream disconnected before completion"}, {"type": "turn.failed", "error": {"message": "boom"}}))
    assert failed.stop_reason == "error" and [r.split(":")[0] for r in failed.errors] == ["agent_error", "agent_error"]
    declined = codex.parse(
        _lines(
            {"type": "item.completed", "item": {"id": "i0", "type": "command_execution", "command": "rm -rf x", "aggregated_output": "", "exit_code": None, "status": "declined"}},
            {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
        )
    )
    assert declined.errors == ["permission_denied: command_execution item i0 declined"]
    assert [e["type"] for e in declined.events] == ["tool_call", "tool_result", "run_error"]


def test_codex_failed_read_is_not_an_activation():
    run = get_adapter("codex").parse(
        _lines(
            {"type": "item.completed", "item": {"id": "i0", "type": "command_execution", "command": "cat .agents/skills/demo/SKILL.md", "aggregated_output": "No such file", "exit_code": 1, "status": "failed"}},
            {"type": "turn.completed", "usage": {}},
        ),
        ["/w/.agents/skills"],
        cwd="/w",
    )
    assert not [e for e in run.events if e["type"].startswith("skill_")]


def test_gemini_failures():
    gemini = get_adapter("gemini-cli")
    turns = gemini.parse(_lines({"type": "init", "model": "m"}, {"type": "result", "status": "error", "error": {"type": "FatalTurnLimitedError", "message": "Reached max session turns for this session."}}))
    assert turns.stop_reason == "max_turns" and turns.errors[0].startswith("max_turns:")
    failed = gemini.parse(_lines({"type": "error", "severity": "error", "message": "quota"}, {"type": "result", "status": "error", "error": {"type": "API", "message": "500"}}))
    assert failed.stop_reason == "error" and [r.split(":")[0] for r in failed.errors] == ["agent_error", "agent_error"]
    warning = gemini.parse(_lines({"type": "error", "severity": "warning", "message": "loop?"}, {"type": "result", "status": "success", "stats": {}}))
    assert warning.ok
    unknown = gemini.parse(
        _lines(
            {"type": "tool_use", "tool_name": "activate_skill", "tool_id": "a1", "parameters": {"name": "nope"}},
            {"type": "tool_result", "tool_id": "a1", "status": "error", "output": "invalid", "error": {"type": "invalid_tool_params", "message": "invalid"}},
            {"type": "result", "status": "success", "stats": {"input_tokens": 1, "output_tokens": 2}},
        )
    )
    assert unknown.errors == ["unknown_skill: nope: invalid"]


def test_skill_file_reads_from_read_tools_and_shell():
    roots = ["/w/.claude/skills", "/h/.claude/skills"]
    use = {
        "type": "assistant",
        "message": {
            "id": "m1",
            "content": [
                {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/w/.claude/skills/demo/references/a.md"}},
                {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "bash /h/.claude/skills/demo/scripts/x.sh && cat README"}},
            ],
        },
    }
    res = {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "r1", "content": "a"}, {"type": "tool_result", "tool_use_id": "b1", "content": "b"}]}}
    run = get_adapter("claude-code").parse(_lines(use, res, _claude_result()), roots, cwd="/w")
    reads = [(e["skill"], e["path"]) for e in run.events if e["type"] == "skill_file_read"]
    assert reads == [("demo", "references/a.md"), ("demo", "scripts/x.sh")]
    assert not [e for e in run.events if e["type"] == "skill_activated"]  # a read is not a tier-1 activation


def test_skill_md_read_by_a_tier1_agent_is_tier2_evidence():
    roots = ["/w/.claude/skills"]
    use = {
        "type": "assistant",
        "message": {
            "id": "m1",
            "content": [
                {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "ls -l .claude/skills/demo/SKILL.md"}},
                {"type": "tool_use", "id": "b2", "name": "Bash", "input": {"command": "sed -n 1,80p .claude/skills/demo/SKILL.md"}},
                {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/w/.claude/skills/other/SKILL.md"}},
            ],
        },
    }
    res = {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": i, "content": "x"} for i in ("b1", "b2", "r1")]}}
    run = get_adapter("claude-code").parse(_lines(use, res, _claude_result()), roots, cwd="/w")
    assert [(e["type"], e["skill"]) for e in run.events if e["type"].startswith("skill_")] == [
        ("skill_file_read", "demo"),  # ls: touched, not read
        ("skill_file_read", "demo"),
        ("skill_activated", "demo"),
        ("skill_file_read", "other"),
        ("skill_activated", "other"),
    ]
    assert {e["tier"] for e in run.events if e["type"] == "skill_activated"} == {"2"}


def test_skill_paths_and_command_words():
    paths = _events.SkillPaths(["/w/.agents/skills"], None)
    assert paths.classify(".agents/skills/demo/SKILL.md") == ("demo", "SKILL.md")
    assert paths.classify("/w/.agents/skills/demo/../other/SKILL.md") == ("other", "SKILL.md")
    assert paths.classify("/w/.agents/skillsX/demo/SKILL.md") is None
    assert paths.classify("/w/.agents/skills/../secret") is None
    nested = _events.SkillPaths(["/h/.codex/skills", "/h/.codex/skills/.system"], "/w")
    assert nested.classify("/h/.codex/skills/.system/imagegen/SKILL.md") == ("imagegen", "SKILL.md")
    assert nested.classify("/h/.codex/skills/.hidden/SKILL.md") is None
    assert _events.command_words("/bin/bash -lc 'cat a/SKILL.md | head -5'")[:2] == ["cat", "a/SKILL.md"]
    assert "x/y.md" in _events.command_words("tool --file=x/y.md")
    assert _events.command_words("echo 'unbalanced") == ["echo", "'unbalanced"]


# -- interface ---------------------------------------------------------------------------


def test_registry():
    assert adapter_names() == ["claude-code", "codex", "gemini-cli", "openai-compatible", "scripted"]
    tiers = {n: get_adapter(n).tier for n in adapter_names()}
    assert tiers == {"claude-code": "1", "codex": "2", "gemini-cli": "1", "openai-compatible": "1", "scripted": "1"}
    with pytest.raises(ConfigError):
        get_adapter("nope")
    ctx = LaunchContext("p", home=Path("/h"), workdir=Path("/w"), max_turns=1)
    assert get_adapter("codex", sandbox="workspace-write").build_command(ctx)[-3:-1] == ["--sandbox", "workspace-write"]
    for name, options in [("codex", {"sandbox": "off"}), ("openai-compatible", {"api": "grpc"}), ("claude-code", {"x": "1"})]:
        with pytest.raises(ConfigError):
            get_adapter(name, **options)


def test_every_adapter_is_the_protocol_with_capabilities():
    """The runner asks capabilities, never names: each adapter states them."""
    caps = {
        n: (a.needs_binary, a.model_server_kind, a.needs_endpoint, bool(a.credential_vars))
        for n in adapter_names()
        for a in [get_adapter(n)]
    }
    assert caps == {
        "claude-code": (True, "anthropic", False, True),
        "codex": (True, "openai-responses", False, True),
        "gemini-cli": (True, "gemini", False, True),
        "openai-compatible": (False, "openai-responses", True, True),
        "scripted": (False, None, False, False),
    }
    assert all(isinstance(get_adapter(n), base.Adapter) for n in adapter_names())


def test_launch_specs(tmp_path):
    home, ws, url = tmp_path / "home", tmp_path / "ws", "http://127.0.0.1:4242"

    def ctx(**kw):
        return LaunchContext(kw.pop("prompt", "p"), home=home, workdir=ws, base_url=url, **kw)

    claude = get_adapter("claude-code")
    argv = claude.build_command(ctx(prompt="do it", max_turns=7, binary="/bin/claude"))
    assert argv[:2] == ["/bin/claude", "-p"] and argv[-1] == "do it"
    assert {"--verbose", "--dangerously-skip-permissions"} <= set(argv) and argv[argv.index("--max-turns") + 1] == "7"
    env = claude.env(ctx())
    assert env["ANTHROPIC_BASE_URL"] == url and env["IS_SANDBOX"] == "1" and env["CLAUDE_CODE_DISABLE_BUNDLED_SKILLS"] == "1"
    assert env["ANTHROPIC_API_KEY"] == base.SCRIPTED_DUMMY_KEY and "ANTHROPIC_API_KEY" in claude.credential_vars
    real = LaunchContext("p", home=home, workdir=ws, credentials={"ANTHROPIC_API_KEY": "real"})
    assert claude.env(real)["ANTHROPIC_API_KEY"] == "real"
    # a real credential wins over the dummy even with an endpoint (a real proxy needs the key)
    assert claude.env(ctx(credentials={"ANTHROPIC_API_KEY": "real"}))["ANTHROPIC_API_KEY"] == "real"
    assert claude.skill_dirs(home, ws)[0] == ws / ".claude" / "skills"

    codex = get_adapter("codex")
    argv = codex.build_command(ctx(model="gpt-5.5", max_turns=3))
    assert argv[:3] == ["codex", "exec", "--json"] and "--dangerously-bypass-approvals-and-sandbox" in argv
    config = codex.home_files(ctx(max_turns=3))[".codex/config.toml"].decode()
    import tomllib

    parsed = tomllib.loads(config)
    assert parsed["model_provider"] == "skill_eval" and parsed["model_providers"]["skill_eval"]["base_url"] == url + "/v1"
    assert parsed["model_providers"]["skill_eval"]["wire_api"] == "responses"
    assert parsed["allow_login_shell"] is False  # a login shell resets PATH and loses the shim
    assert codex.env(ctx())["CODEX_HOME"] == str(home / ".codex")
    assert codex.skill_dirs(home, ws)[0] == ws / ".agents" / "skills"

    gemini = get_adapter("gemini-cli")
    argv = gemini.build_command(ctx(max_turns=9))
    assert {"--yolo", "--skip-trust"} <= set(argv) and argv[argv.index("-m") + 1] == "gemini-2.5-pro"
    settings = json.loads(gemini.home_files(ctx(max_turns=9))[".gemini/settings.json"])
    assert settings["security"]["folderTrust"]["enabled"] is False and settings["model"]["maxSessionTurns"] == 9
    assert gemini.env(ctx())["GOOGLE_GEMINI_BASE_URL"] == url
    # credentials never travel on argv
    for name in ("claude-code", "codex", "gemini-cli", "openai-compatible"):
        argv = get_adapter(name).build_command(ctx(model="m", max_turns=2))
        assert base.SCRIPTED_DUMMY_KEY not in " ".join(argv)


def test_launch_spec_bundles_everything(tmp_path):
    home, ws, url = tmp_path / "home", tmp_path / "ws", "http://127.0.0.1:4242"
    spec = get_adapter("gemini-cli").launch(LaunchContext("p", home=home, workdir=ws, max_turns=4, binary="/g", base_url=url))
    assert spec.argv[0] == "/g" and spec.env["GEMINI_API_KEY"] == base.SCRIPTED_DUMMY_KEY and spec.stdin == b""
    assert ".gemini/settings.json" in spec.home_files and "GEMINI_API_KEY" in spec.credential_vars
    assert spec.skill_dirs[0] == ws / ".agents" / "skills"
    scripted = get_adapter("scripted").launch(LaunchContext("p", home=home, workdir=ws, max_turns=4, script=tmp_path / "s.yaml"))
    assert "--script" in scripted.argv and scripted.home_files == {} and scripted.credential_vars == ()


def test_loop_budgets_travel_on_argv(tmp_path):
    ctx = LaunchContext("p", home=tmp_path, workdir=tmp_path, base_url="http://127.0.0.1:1", max_tokens=256, max_total_tokens=4000)
    for name in ("openai-compatible", "scripted"):
        argv = get_adapter(name).build_command(ctx if name != "scripted" else LaunchContext(**{**ctx.__dict__, "script": tmp_path / "s"}))
        assert argv[argv.index("--max-tokens") + 1] == "256" and argv[argv.index("--max-total-tokens") + 1] == "4000"
        assert argv[-2:] == ["--", "p"]


def test_binary_info(tmp_path):
    (tmp_path / "package.json").write_text('{"name": "fake-agent", "version": "1.2.3"}')
    real = tmp_path / "agent-1.2.3"
    real.write_text("#!/bin/sh\necho '1.2.3 (Fake Agent)'\n")
    real.chmod(real.stat().st_mode | stat.S_IXUSR)
    link = tmp_path / "agent"
    os.symlink(real, link)
    info = binary_info(link)
    assert info.version == "1.2.3 (Fake Agent)" and info.resolved == str(real) and info.package == "fake-agent@1.2.3"
    import hashlib

    assert info.sha256 == hashlib.sha256(real.read_bytes()).hexdigest()
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexit 3\n")
    silent.chmod(0o755)
    assert binary_info(silent).version is None


def test_event_builder_owns_pending_calls_and_reports_bad_lines():
    b = _events.EventBuilder(_events.SkillPaths([], None))
    objs = list(b.json_lines(b'{"a": 1}\nnot json\n[1]\n\n{"b": 2}\n', "s"))
    assert objs == [{"a": 1}, {"b": 2}]
    assert [r.split(":", 1)[0] for r in b.errors] == ["malformed_stream", "malformed_stream"]
    b.tool_call("c1", "Bash", {"command": "ls"})
    b.tool_call("c2", "Odd", "not a dict")
    assert b.tool_result("c1", False, "ok") == _events.PendingCall("Bash", {"command": "ls"})
    assert b.tool_result("c1", False, "again") is _events.NO_CALL  # a result is matched once
    assert b.tool_result("c2", False, "x").input == {}  # a non-dict input is recorded as {"value": ...}, kept as {}
    assert b.events[3]["input"] == {"value": "not a dict"}
