"""openai-compatible: the built-in loop (agent_loop.py) against any OpenAI-style endpoint.

For models with no agent CLI of their own (Ollama, vLLM, llama.cpp, ...). The loop runs as
a child process so the runner launches it like any CLI; this module builds its argv and
parses the JSONL stream it writes (same format for the `scripted` adapter).

Stream -> vocabulary: `message` -> message; `tool_call` / `tool_result` as-is;
`skill_activated` (written when the loop served a SKILL.md through activate_skill or
read_file) -> skill_activated tier 1; shell commands and read_file paths inside a skill
root -> skill_file_read; `error` lines, tool_not_registered / unknown-skill results and a
`max_turns` / `error` result -> run_error; no `result` line -> incomplete.
The endpoint is `base_url` (with /v1); the key comes from SKILL_EVAL_OPENAI_API_KEY.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skill_eval.adapters import base
from skill_eval.adapters.agent_loop import DEFAULT_KEY_VAR
from skill_eval.adapters.base import (
    ERR_AGENT,
    ERR_INCOMPLETE,
    ERR_MAX_TURNS,
    ERR_SKILL_NOT_LOADED,
    ERR_STREAM,
    ERR_TOOL_MISSING,
    ERR_UNKNOWN_SKILL,
    Adapter,
    EventBuilder,
    NormalizedRun,
    PendingCall,
    SkillPaths,
    int_or_zero,
)

# Runs the loop with the package importable no matter how skill-eval was installed, and
# with -I so the sandbox's PYTHONPATH cannot inject code into the harness.
_BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from skill_eval.adapters.agent_loop import main; sys.exit(main(sys.argv[1:]))"


def loop_command(backend_args: list[str], prompt: str, max_turns: int, skill_roots: Sequence[Path]) -> list[str]:
    package_parent = str(Path(__file__).resolve().parents[2])
    argv = [sys.executable, "-I", "-c", _BOOT, package_parent, *backend_args, "--max-turns", str(max_turns)]
    for root in skill_roots:
        argv += ["--skills-root", str(root)]
    return [*argv, "--", prompt]


class OpenAICompatibleAdapter(Adapter):
    name = "openai-compatible"
    tier = base.TIER_AGENT
    executable = sys.executable

    def __init__(self, api: str = "chat"):
        # "chat" (Chat Completions) is what Ollama, vLLM and llama.cpp all serve;
        # "responses" for endpoints that only speak the Responses API
        if api not in ("chat", "responses"):
            raise ValueError(f"api must be chat or responses, not {api!r}")
        self.api = api

    def build_command(
        self,
        prompt: str,
        *,
        model: str | None,
        max_turns: int,
        binary: str | None = None,
        base_url: str | None = None,
        workdir: Path | None = None,
        home: Path | None = None,
    ) -> list[str]:
        if not base_url:
            raise ValueError("openai-compatible needs base_url (the endpoint, e.g. http://127.0.0.1:11434)")
        url = base_url.rstrip("/")
        if not url.endswith("/v1"):
            url += "/v1"
        roots = self.skill_dirs(home or Path.home(), workdir or Path.cwd())
        backend = ["--backend", self.api, "--base-url", url, "--model", model or "scripted"]
        return loop_command(backend, prompt, max_turns, roots)

    def env(
        self,
        *,
        home: Path,
        workdir: Path,
        base_url: str | None = None,
        credentials: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        env = {"HOME": str(home)}
        if credentials and DEFAULT_KEY_VAR in credentials:
            env[DEFAULT_KEY_VAR] = credentials[DEFAULT_KEY_VAR]
        elif base_url:
            env[DEFAULT_KEY_VAR] = base.SCRIPTED_DUMMY_KEY  # local servers ignore it
        return env

    def credential_vars(self) -> tuple[str, ...]:
        return (DEFAULT_KEY_VAR,)

    def parse_stream(
        self,
        raw: bytes,
        skill_roots: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None,
        installed_skills: Sequence[str] | None,
    ) -> NormalizedRun:
        return parse_loop_stream(raw, skill_roots, cwd=cwd, installed_skills=installed_skills, source="agent-loop stream")


def parse_loop_stream(
    raw: bytes,
    skill_roots: Sequence[str | os.PathLike[str]] = (),
    *,
    cwd: str | os.PathLike[str] | None = None,
    installed_skills: Sequence[str] | None = None,
    source: str = "agent-loop stream",
) -> NormalizedRun:
    lines = list(base.iter_json_lines(raw, source))
    start = next((obj for _, obj, _ in lines if obj is not None and obj.get("type") == "start"), None) or {}
    roots = list(skill_roots) or list(start.get("skill_roots") or [])
    b = EventBuilder(SkillPaths(roots, cwd if cwd is not None else start.get("cwd")))
    pending: dict[str, PendingCall] = {}
    tokens_in = tokens_out = 0
    result: dict[str, Any] | None = None
    final = ""
    for n, obj, err in lines:
        if obj is None:
            b.error(ERR_STREAM, err or f"line {n}")
            continue
        kind = obj.get("type")
        if kind == "start":
            loaded = {s.get("name") for s in obj.get("skills") or [] if isinstance(s, dict)}
            for skill in installed_skills or ():
                if skill not in loaded:
                    b.error(ERR_SKILL_NOT_LOADED, f"{skill} is installed but the loop did not discover it")
        elif kind == "model_response":
            usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
            tokens_in += int_or_zero(usage.get("input_tokens"))
            tokens_out += int_or_zero(usage.get("output_tokens"))
        elif kind == "message":
            text = obj.get("text") if isinstance(obj.get("text"), str) else ""
            b.message(str(obj.get("role", "assistant")), text)
        elif kind == "tool_call":
            call_id = str(obj.get("id", ""))
            tool_input = obj.get("input") if isinstance(obj.get("input"), dict) else {}
            pending[call_id] = PendingCall(str(obj.get("tool", "")), tool_input)
            b.tool_call(call_id, str(obj.get("tool", "")), tool_input)
        elif kind == "tool_result":
            _tool_result(b, obj, pending)
        elif kind == "skill_activated" and isinstance(obj.get("skill"), str):
            b.activated(obj["skill"], base.TIER_AGENT)
        elif kind == "error":
            err_kind = ERR_SKILL_NOT_LOADED if obj.get("kind") == "skill_not_loaded" else ERR_AGENT
            b.error(err_kind, str(obj.get("message", "")))
        elif kind == "result":
            result = obj
    usage_kw = {"tokens_in": tokens_in, "tokens_out": tokens_out, "model": start.get("model")}
    if result is None:
        b.error(ERR_INCOMPLETE, "no result line (the loop was killed, timed out or crashed)")
        return b.finish(final_text=final, stop_reason=base.STOP_INCOMPLETE, **usage_kw)
    status = result.get("status")
    final = result.get("final") if isinstance(result.get("final"), str) else ""
    turns = result.get("turns") if isinstance(result.get("turns"), int) else None
    if status == "completed":
        stop = base.STOP_COMPLETED
    elif status == "max_turns":
        stop = base.STOP_MAX_TURNS
        b.error(ERR_MAX_TURNS, f"stopped after {turns} turns")
    else:
        stop = base.STOP_ERROR
        b.error(ERR_AGENT, f"loop ended with status {status!r}")
    return b.finish(final_text=final, stop_reason=stop, turns=turns, **usage_kw)


def _tool_result(b: EventBuilder, obj: dict[str, Any], pending: dict[str, PendingCall]) -> None:
    call_id = str(obj.get("id", ""))
    is_error = bool(obj.get("is_error"))
    output = obj.get("output") if isinstance(obj.get("output"), str) else ""
    b.tool_result(call_id, is_error, output)
    call = pending.pop(call_id, None)
    tool, tool_input = (call.tool, call.input) if call else ("", {})
    if obj.get("error") == "tool_not_registered":
        b.error(ERR_TOOL_MISSING, tool)
    elif obj.get("error") == "unknown_skill":
        b.error(ERR_UNKNOWN_SKILL, str(tool_input.get("name")))
    if is_error:
        return
    # read_file of a SKILL.md already produced the loop's own tier-1 `skill_activated` line
    if tool == "read_file" and isinstance(tool_input.get("path"), str):
        b.file_tool_read(tool_input["path"], tier2=False)
    elif tool == "shell" and isinstance(tool_input.get("command"), str):
        b.shell_read(tool_input["command"])
