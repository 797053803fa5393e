"""Claude Code: `claude -p --output-format stream-json --verbose`, tier-1 activation.

Measured against 2.1.197 (research/agent-cli/REPORT.md §1):
- activation is an `assistant` tool_use named `Skill` with `input.skill`, confirmed by a
  `user` tool_result "Launching skill: <name>" (`tool_use_result.commandName`); an unknown
  name comes back as `<tool_use_error>Unknown skill: ...</tool_use_error>`, is_error true;
- each content block arrives as its own `assistant` line (same message id), so turns are
  counted from the `result` line (`num_turns`), falling back to distinct message ids;
- the `result` line ends the run; `subtype` is `success`, `error_max_turns`,
  `error_max_budget_usd` or `error_during_execution`. A run denied a tool still ends
  `success`, listing it in `permission_denials` — turned into run_error here;
- `--include-partial-messages` adds `stream_event` lines; they duplicate the complete
  `assistant` lines and are ignored.
A `/skill` typed as the prompt never appears in the stream (REPORT §1 item 3): the runner
must not rely on this parser for user-invoked skills.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.harness.adapters import base
from skill_eval.harness.adapters._events import EventBuilder, SkillPaths, as_text, int_or_zero, obj_field
from skill_eval.harness.adapters.base import (
    ERR_AGENT,
    ERR_BUDGET,
    ERR_INCOMPLETE,
    ERR_MAX_TURNS,
    ERR_PERMISSION,
    ERR_SKILL_FAILED,
    ERR_SKILL_NOT_LOADED,
    ERR_TOOL_MISSING,
    ERR_UNKNOWN_SKILL,
    AdapterBase,
    LaunchContext,
    NormalizedRun,
)

_UNKNOWN_SKILL = re.compile(r"Unknown skill:\s*(\S+?)(?:</tool_use_error>|\s|$)")
_NO_SUCH_TOOL = re.compile(r"No such tool available:\s*([\w.:-]+)")
# Texts Claude Code puts in a tool_result when a permission check (not the command) failed.
_DENIAL_MARKERS = (
    "was blocked. For security",
    "Permission to use",
    "haven't granted it yet",
    "requires approval",
    "permission denied by user",
)
_READ_TOOLS = {"Read": "file_path", "NotebookRead": "notebook_path"}

_RESULT_SUBTYPES = {
    "success": (base.STOP_COMPLETED, None),
    "error_max_turns": (base.STOP_MAX_TURNS, ERR_MAX_TURNS),
    "error_max_budget_usd": (base.STOP_BUDGET, ERR_BUDGET),
    "error_during_execution": (base.STOP_ERROR, ERR_AGENT),
}


class ClaudeCodeAdapter(AdapterBase):
    name = "claude-code"
    tier = base.TIER_AGENT
    executable = "claude"
    model_server_kind = "anthropic"
    default_endpoint = "https://api.anthropic.com"  # the credential proxy's upstream without --base-url
    credential_vars = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")

    def skill_dirs(self, home: Path, workdir: Path) -> list[Path]:
        return [workdir / ".claude" / "skills", home / ".claude" / "skills"]

    def build_command(self, ctx: LaunchContext) -> list[str]:
        # --verbose is mandatory with stream-json under -p; --dangerously-skip-permissions
        # because the runner's sandbox is the boundary and a default-mode run silently loses
        # its Bash writes (permission_denials). Root needs IS_SANDBOX=1 (see env()).
        argv = [
            ctx.binary or self.executable,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--max-turns",
            str(ctx.max_turns),
            "--dangerously-skip-permissions",
        ]
        if ctx.model:
            argv += ["--model", ctx.model]
        argv.append(ctx.prompt)
        return argv

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        env = {
            "HOME": str(ctx.home),
            "CLAUDE_CONFIG_DIR": str(ctx.home / ".claude"),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            # bundled skills (deep-research, verify, ...) would compete with the evaluated ones
            "CLAUDE_CODE_DISABLE_BUNDLED_SKILLS": "1",
            "IS_SANDBOX": "1",
        }
        return self.add_endpoint(env, ctx, url_var="ANTHROPIC_BASE_URL", key_var="ANTHROPIC_API_KEY")

    def parse_stream(
        self,
        raw: bytes,
        skill_roots: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None,
        installed_skills: Sequence[str] | None,
    ) -> NormalizedRun:
        b = EventBuilder(SkillPaths(skill_roots, cwd))
        st = _State()
        for obj in b.json_lines(raw, "claude stream"):
            kind = obj.get("type")
            if kind == "system" and obj.get("subtype") == "init":
                st.version, st.model = obj.get("claude_code_version"), obj.get("model")
                _check_init(b, obj, installed_skills)
            elif kind == "assistant":
                _assistant(b, obj_field(obj, "message"), st)
            elif kind == "user":
                content = obj_field(obj, "message").get("content")
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        _tool_result(b, block, obj.get("tool_use_result"))
            elif kind == "result":
                st.result = obj
        if st.result is None:
            b.error(ERR_INCOMPLETE, "no result event (the agent was killed, timed out or crashed)")
            return b.finish(final_text=st.last_text, stop_reason=base.STOP_INCOMPLETE, tokens_in=None, tokens_out=None,
                            turns=len(st.message_ids), agent_version=st.version, model=st.model)
        return _finish(b, st.result, st)


@dataclass
class _State:
    """What the Claude parser carries across lines."""

    message_ids: set[str] = field(default_factory=set)
    last_text: str = ""
    result: dict[str, Any] | None = None
    version: str | None = None
    model: str | None = None


def _assistant(b: EventBuilder, msg: dict[str, Any], st: _State) -> None:
    if isinstance(msg.get("id"), str):
        st.message_ids.add(msg["id"])
    for block in msg.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            b.message("assistant", block["text"])
            st.last_text = block["text"]
        elif block.get("type") == "tool_use":
            b.tool_call(str(block.get("id", "")), str(block.get("name", "")), obj_field(block, "input"))


def _check_init(b: EventBuilder, init: dict[str, Any], installed: Sequence[str] | None) -> None:
    if not installed:
        return
    tools = raw_tools if isinstance(raw_tools := init.get("tools"), list) else []
    if "Skill" not in tools:
        b.error(ERR_TOOL_MISSING, "Skill (the agent cannot activate skills: --bare or --disable-slash-commands?)")
    loaded = raw_loaded if isinstance(raw_loaded := init.get("skills"), list) else []
    for skill in installed:
        if skill not in loaded:
            b.error(ERR_SKILL_NOT_LOADED, f"{skill} is installed but not in the agent's skill list")


def _tool_result(b: EventBuilder, block: dict[str, Any], meta: Any) -> None:
    call_id = str(block.get("tool_use_id", ""))
    output = as_text(block.get("content"))
    is_error = bool(block.get("is_error"))
    call = b.tool_result(call_id, is_error, output)
    tool, tool_input = call.tool, call.input
    missing = _NO_SUCH_TOOL.search(output) if is_error else None
    if missing:
        b.error(ERR_TOOL_MISSING, f"{missing.group(1).rstrip('.')} call {call_id}")
        return
    if is_error and any(m in output for m in _DENIAL_MARKERS):
        b.error(ERR_PERMISSION, f"{tool or 'tool'} call {call_id}")
        return
    if tool == "Skill":
        name = tool_input.get("skill")
        if is_error:
            unknown = _UNKNOWN_SKILL.search(output)
            if unknown:
                b.error(ERR_UNKNOWN_SKILL, unknown.group(1))
            else:  # e.g. disable-model-invocation: the skill exists but may not be activated
                b.error(ERR_SKILL_FAILED, f"{name}: {output.strip()[:200]}")
        else:
            confirmed = meta.get("commandName") if isinstance(meta, dict) else None
            skill = confirmed if isinstance(confirmed, str) and confirmed else name
            if isinstance(skill, str) and skill:
                b.activated(skill, base.TIER_AGENT)
        return
    if is_error:
        return
    if tool in _READ_TOOLS and isinstance(tool_input.get(_READ_TOOLS[tool]), str):
        b.file_tool_read(tool_input[_READ_TOOLS[tool]])
    elif tool == "Bash" and isinstance(tool_input.get("command"), str):
        b.shell_read(tool_input["command"])


def _finish(b: EventBuilder, result: dict[str, Any], st: _State) -> NormalizedRun:
    subtype = result.get("subtype")
    stop, err_kind = _RESULT_SUBTYPES.get(subtype if isinstance(subtype, str) else "", (base.STOP_ERROR, ERR_AGENT))
    for denial in result.get("permission_denials") or []:
        if isinstance(denial, dict):
            b.error(ERR_PERMISSION, f"{denial.get('tool_name', 'tool')} call {denial.get('tool_use_id', '?')}")
    if err_kind == ERR_MAX_TURNS:
        b.error(err_kind, f"stopped after {result.get('num_turns')} turns")
    elif err_kind is not None:
        b.error(err_kind, f"result subtype {subtype!r}: {as_text(result.get('errors') or result.get('result'))[:300]}")
    elif result.get("is_error"):
        stop = base.STOP_ERROR
        b.error(ERR_AGENT, f"result is_error: {as_text(result.get('result'))[:300]}")
    if result.get("api_error_status") not in (None, 0):
        b.error(ERR_AGENT, f"API error status {result.get('api_error_status')}")
    usage = obj_field(result, "usage")
    tokens_in = (
        int_or_zero(usage.get("input_tokens"))
        + int_or_zero(usage.get("cache_creation_input_tokens"))
        + int_or_zero(usage.get("cache_read_input_tokens"))
    )
    cost = result.get("total_cost_usd")
    # an error result carries no `result`: the last text is not an answer then (max turns)
    final = raw_final if isinstance(raw_final := result.get("result"), str) else (st.last_text if stop == base.STOP_COMPLETED else "")
    turns = result.get("num_turns") if isinstance(result.get("num_turns"), int) else len(st.message_ids)
    return b.finish(
        final_text=final,
        stop_reason=stop,
        tokens_in=tokens_in if usage else None,
        tokens_out=int_or_zero(usage.get("output_tokens")) if usage else None,
        cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
        turns=turns,
        agent_version=st.version,
        model=st.model,
    )
