"""openai-compatible: the built-in loop (agent_loop.py) against any OpenAI-style endpoint.

For models with no agent CLI of their own (Ollama, vLLM, llama.cpp, ...). The loop runs as
a child process so the runner launches it like any CLI; this module builds its argv and
parses the JSONL stream it writes (same format for the `scripted` adapter).

Stream -> vocabulary: `message` -> message; `tool_call` / `tool_result` as-is;
`skill_activated` (written when the loop served a SKILL.md through activate_skill or
read_file) -> skill_activated tier 1; shell commands and read_file paths inside a skill
root -> skill_file_read; `error` lines, tool_not_registered / unknown-skill /
invalid-arguments results and a `max_turns` / `budget` / `error` result -> run_error; no
`result` line -> incomplete.
The endpoint is `base_url` (with /v1); the key comes from SKILL_EVAL_OPENAI_API_KEY, and a
local server (loopback) needs none. Budgets: `max_tokens` per reply, `max_total_tokens` per
run (the loop stops with status `budget`, normalized as stop reason `budget`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skill_eval.harness.adapters import base
from skill_eval.harness.adapters._events import EventBuilder, SkillPaths, int_or_zero, iter_json_lines, obj_field
from skill_eval.harness.adapters.agent_loop import DEFAULT_KEY_VAR
from skill_eval.harness.adapters.base import (
    ERR_AGENT,
    ERR_BUDGET,
    ERR_INCOMPLETE,
    ERR_MAX_TURNS,
    ERR_SKILL_NOT_LOADED,
    ERR_TOOL_CALL,
    ERR_TOOL_MISSING,
    ERR_UNKNOWN_SKILL,
    AdapterBase,
    LaunchContext,
    NormalizedRun,
)

# Runs the loop with the package importable no matter how skill-eval was installed, and
# with -I so the sandbox's PYTHONPATH cannot inject code into the harness.
_BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from skill_eval.harness.adapters.agent_loop import main; sys.exit(main(sys.argv[1:]))"

# the loop's `error` line kinds -> run_error kinds (anything else: agent_error)
_ERROR_KINDS = {"skill_not_loaded": ERR_SKILL_NOT_LOADED, "invalid_tool_call": ERR_TOOL_CALL}
# the loop's result statuses -> (stop reason, run_error kind)
_RESULTS = {
    "completed": (base.STOP_COMPLETED, None),
    "max_turns": (base.STOP_MAX_TURNS, ERR_MAX_TURNS),
    "budget": (base.STOP_BUDGET, ERR_BUDGET),
}
# tool_result `error` values -> run_error kinds
_RESULT_ERRORS = {"tool_not_registered": ERR_TOOL_MISSING, "unknown_skill": ERR_UNKNOWN_SKILL, "invalid_arguments": ERR_TOOL_CALL}


def loop_command(backend_args: list[str], ctx: LaunchContext, skill_roots: Sequence[Path]) -> list[str]:
    package_parent = ctx.pythonpath or str(Path(__file__).resolve().parents[3])
    argv = [ctx.python or sys.executable, "-I", "-c", _BOOT, package_parent, *backend_args, "--max-turns", str(ctx.max_turns)]
    if ctx.max_tokens is not None:
        argv += ["--max-tokens", str(ctx.max_tokens)]
    if ctx.max_total_tokens is not None:
        argv += ["--max-total-tokens", str(ctx.max_total_tokens)]
    if ctx.temperature is not None:
        argv += ["--temperature", repr(float(ctx.temperature))]
    if ctx.seed is not None:
        argv += ["--seed", str(int(ctx.seed))]
    for root in skill_roots:
        argv += ["--skills-root", str(root)]
    return [*argv, "--", ctx.prompt]


class OpenAICompatibleAdapter(AdapterBase):
    name = "openai-compatible"
    tier = base.TIER_AGENT
    executable = sys.executable
    needs_binary = False
    model_server_kind = "openai-responses"  # that server also serves Chat Completions
    needs_endpoint = True
    credential_vars = (DEFAULT_KEY_VAR,)

    def __init__(self, api: str = "chat"):
        # "chat" (Chat Completions) is what Ollama, vLLM and llama.cpp all serve;
        # "responses" for endpoints that only speak the Responses API
        if api not in ("chat", "responses"):
            raise ValueError(f"api must be chat or responses, not {api!r}")
        self.api = api

    def build_command(self, ctx: LaunchContext) -> list[str]:
        if not ctx.base_url:
            raise ValueError("openai-compatible needs base_url (the endpoint, e.g. http://127.0.0.1:11434)")
        url = ctx.base_url.rstrip("/")
        if not url.endswith("/v1"):
            url += "/v1"
        backend = ["--backend", self.api, "--base-url", url, "--model", ctx.model or "scripted"]
        return loop_command(backend, ctx, self.skill_dirs(ctx.home, ctx.workdir))

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        # a scripted or local server ignores the key; the loop sends none when the variable is unset
        return self.add_endpoint({"HOME": str(ctx.home)}, ctx, url_var=None, key_var=DEFAULT_KEY_VAR)

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
    start = next((obj for _, obj, _ in iter_json_lines(raw, source) if obj is not None and obj.get("type") == "start"), None) or {}
    roots = list(skill_roots) or list(start.get("skill_roots") or [])
    b = EventBuilder(SkillPaths(roots, cwd if cwd is not None else start.get("cwd")))
    tokens = [0, 0]
    result: dict[str, Any] | None = None
    for obj in b.json_lines(raw, source):
        kind = obj.get("type")
        if kind == "start":
            loaded = {s.get("name") for s in obj.get("skills") or [] if isinstance(s, dict)}
            for skill in installed_skills or ():
                if skill not in loaded:
                    b.error(ERR_SKILL_NOT_LOADED, f"{skill} is installed but the loop did not discover it")
        elif kind == "model_response":
            usage = obj_field(obj, "usage")
            tokens[0] += int_or_zero(usage.get("input_tokens"))
            tokens[1] += int_or_zero(usage.get("output_tokens"))
        elif kind == "message":
            b.message(str(obj.get("role", "assistant")), raw_text if isinstance(raw_text := obj.get("text"), str) else "")
        elif kind == "tool_call":
            b.tool_call(str(obj.get("id", "")), str(obj.get("tool", "")), obj_field(obj, "input"))
        elif kind == "tool_result":
            _tool_result(b, obj)
        elif kind == "skill_activated" and isinstance(obj.get("skill"), str):
            b.activated(obj["skill"], base.TIER_AGENT)
        elif kind == "error":
            b.error(_ERROR_KINDS.get(str(obj.get("kind")), ERR_AGENT), str(obj.get("message", "")))
        elif kind == "result":
            result = obj
    return _finish(b, result, tokens, start.get("model"))


def _finish(b: EventBuilder, result: dict[str, Any] | None, tokens: list[int], model: Any) -> NormalizedRun:
    usage_kw = {"tokens_in": tokens[0], "tokens_out": tokens[1], "model": model}
    if result is None:
        b.error(ERR_INCOMPLETE, "no result line (the loop was killed, timed out or crashed)")
        return b.finish(final_text="", stop_reason=base.STOP_INCOMPLETE, **usage_kw)
    status = result.get("status")
    final = raw_final if isinstance(raw_final := result.get("final"), str) else ""
    turns = result.get("turns") if isinstance(result.get("turns"), int) else None
    stop, err_kind = _RESULTS.get(status if isinstance(status, str) else "", (base.STOP_ERROR, ERR_AGENT))
    if err_kind == ERR_MAX_TURNS:
        b.error(err_kind, f"stopped after {turns} turns")
    elif err_kind == ERR_BUDGET:
        b.error(err_kind, str(result.get("reason") or f"token budget reached after {turns} turns"))
    elif err_kind is not None:
        b.error(err_kind, f"loop ended with status {status!r}")
    return b.finish(final_text=final, stop_reason=stop, turns=turns, **usage_kw)


def _tool_result(b: EventBuilder, obj: dict[str, Any]) -> None:
    call_id = str(obj.get("id", ""))
    is_error = bool(obj.get("is_error"))
    call = b.tool_result(call_id, is_error, raw_output if isinstance(raw_output := obj.get("output"), str) else "")
    tool, tool_input = call.tool, call.input
    kind = _RESULT_ERRORS.get(str(obj.get("error")))
    if kind == ERR_UNKNOWN_SKILL:
        b.error(kind, str(tool_input.get("name")))
    elif kind == ERR_TOOL_CALL:
        b.error(kind, f"{tool} call {call_id}: arguments are not a JSON object with the documented fields")
    elif kind is not None:
        b.error(kind, tool)
    if is_error:
        return
    # read_file of a SKILL.md already produced the loop's own tier-1 `skill_activated` line
    if tool == "read_file" and isinstance(tool_input.get("path"), str):
        b.file_tool_read(tool_input["path"], tier2=False)
    elif tool == "shell" and isinstance(tool_input.get("command"), str):
        b.shell_read(tool_input["command"])
