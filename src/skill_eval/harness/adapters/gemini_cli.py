"""Gemini CLI: `gemini -p ... --output-format stream-json --yolo`, tier-1 activation.

Measured against 0.61.0 (research/agent-cli/REPORT.md §3):
- activation is a `tool_use` with `tool_name == "activate_skill"` and `parameters.name`,
  followed by a `tool_result` with `status: "success"`;
- without `--yolo` the headless CLI does not register `run_shell_command` or
  `activate_skill`; scripted calls come back `status: "error"`,
  `error.type: "tool_not_registered"` while `result.status` stays "success" — a run_error;
- an untrusted folder exits 55 and silently downgrades --yolo: `--skip-trust` plus
  `security.folderTrust.enabled = false` in settings.json;
- without `-m` a router request to a flash-lite model precedes each turn; pinning a model
  gives one request per turn (the scripted server handles both);
- assistant text arrives as `message` events with `delta: true`; consecutive deltas are
  joined into one normalized message.
stderr is noisy and not parsed; stdout is one JSON object per line.
Limitation (measured): a shell command that exits non-zero still yields `status: "success"`
with only its output, so `tool_result.is_error` is false for it; exit codes of subject calls
come from calls.jsonl (the recording shim), never from this stream.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.harness.adapters import base
from skill_eval.harness.adapters._events import EventBuilder, SkillPaths, int_or_zero, obj_field
from skill_eval.harness.adapters.base import (
    ERR_AGENT,
    ERR_INCOMPLETE,
    ERR_MAX_TURNS,
    ERR_PERMISSION,
    ERR_TOOL_MISSING,
    ERR_UNKNOWN_SKILL,
    AdapterBase,
    LaunchContext,
    NormalizedRun,
)

_READ_TOOLS = {"read_file": ("file_path", "absolute_path", "path"), "read_many_files": ("paths", "include")}
_SHELL_TOOL = "run_shell_command"
_ACTIVATE = "activate_skill"


class GeminiCliAdapter(AdapterBase):
    name = "gemini-cli"
    tier = base.TIER_AGENT
    executable = "gemini"
    model_server_kind = "gemini"
    default_endpoint = "https://generativelanguage.googleapis.com"  # the credential proxy's upstream without --base-url
    credential_vars = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    default_model = "gemini-2.5-pro"  # pinning skips the per-turn router request

    def skill_dirs(self, home: Path, workdir: Path) -> list[Path]:
        return [
            workdir / ".agents" / "skills",
            workdir / ".gemini" / "skills",
            home / ".gemini" / "skills",
            home / ".agents" / "skills",
        ]

    def build_command(self, ctx: LaunchContext) -> list[str]:
        # max_turns goes into settings.json (model.maxSessionTurns), see home_files()
        return [
            ctx.binary or self.executable,
            "--output-format",
            "stream-json",
            "--yolo",
            "--skip-trust",
            "-m",
            ctx.model or self.default_model or "",
            "-p",
            ctx.prompt,
        ]

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        env = {
            "HOME": str(ctx.home),
            "GEMINI_TELEMETRY_ENABLED": "false",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "NO_COLOR": "1",
        }
        return self.add_endpoint(env, ctx, url_var="GOOGLE_GEMINI_BASE_URL", key_var="GEMINI_API_KEY")

    def home_files(self, ctx: LaunchContext) -> dict[str, bytes]:
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "model": {"maxSessionTurns": ctx.max_turns},
        }
        return {".gemini/settings.json": (json.dumps(settings, indent=2, sort_keys=True) + "\n").encode()}

    def parse_stream(
        self,
        raw: bytes,
        skill_roots: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None,
        installed_skills: Sequence[str] | None,
    ) -> NormalizedRun:
        b = EventBuilder(SkillPaths(skill_roots, cwd))
        st = _State(b)
        for obj in b.json_lines(raw, "gemini stream"):
            kind = obj.get("type")
            if kind == "message" and obj.get("role") == "assistant":
                st.delta(obj)
                continue
            st.flush()
            if kind == "init":
                st.model = obj.get("model")
            elif kind == "tool_use":
                st.final = ""  # the answer is the text after the last tool call
                b.tool_call(str(obj.get("tool_id", "")), str(obj.get("tool_name", "")), obj_field(obj, "parameters"))
            elif kind == "tool_result":
                _tool_result(b, obj)
            elif kind == "error" and obj.get("severity") != "warning":
                b.error(ERR_AGENT, str(obj.get("message", "")))
            elif kind == "result":
                st.result = obj
        st.flush()
        if st.result is None:
            b.error(ERR_INCOMPLETE, "no result event (the agent was killed, timed out or crashed)")
            return b.finish(final_text=st.final, stop_reason=base.STOP_INCOMPLETE, tokens_in=None, tokens_out=None, model=st.model)
        return _finish(b, st.result, st)


@dataclass
class _State:
    """What the Gemini parser carries across lines: text deltas are joined into one message."""

    b: EventBuilder
    buffer: list[str] = field(default_factory=list)
    final: str = ""
    result: dict[str, Any] | None = None
    model: str | None = None

    def delta(self, obj: dict[str, Any]) -> None:
        content = obj.get("content")
        if isinstance(content, str):
            if not obj.get("delta"):
                self.flush()
            self.buffer.append(content)

    def flush(self) -> None:
        if self.buffer:
            self.final = "".join(self.buffer)
            self.b.message("assistant", self.final)
            self.buffer.clear()


def _finish(b: EventBuilder, result: dict[str, Any], st: _State) -> NormalizedRun:
    stop = base.STOP_COMPLETED
    if result.get("status") != "success":
        error = obj_field(result, "error")
        message = f"{error.get('type', '')} {error.get('message', '')}".strip() or str(result.get("status"))
        if "turn" in message.lower() and ("max" in message.lower() or "limit" in message.lower()):
            stop = base.STOP_MAX_TURNS
            b.error(ERR_MAX_TURNS, message)
        else:
            stop = base.STOP_ERROR
            b.error(ERR_AGENT, f"result status {result.get('status')!r}: {message}")
    stats = obj_field(result, "stats")
    return b.finish(
        final_text=st.final,
        stop_reason=stop,
        tokens_in=int_or_zero(stats.get("input_tokens")) if stats else None,
        tokens_out=int_or_zero(stats.get("output_tokens")) if stats else None,
        model=st.model,
    )


def _tool_result(b: EventBuilder, obj: dict[str, Any]) -> None:
    call_id = str(obj.get("tool_id", ""))
    ok = obj.get("status") == "success"
    error = obj_field(obj, "error")
    output = obj.get("output")
    if not isinstance(output, str):
        output = str(error.get("message", "")) if error else json.dumps(output, sort_keys=True)
    call = b.tool_result(call_id, not ok, output)
    tool, params = call.tool, call.input
    if not ok:
        etype = str(error.get("type", ""))
        if etype == "tool_not_registered":
            b.error(ERR_TOOL_MISSING, f"{tool} (headless Gemini CLI registers it only with --yolo)")
        elif "denied" in etype or "permission" in etype or "cancel" in etype:
            b.error(ERR_PERMISSION, f"{tool} call {call_id}: {etype}")
        elif tool == _ACTIVATE:
            b.error(ERR_UNKNOWN_SKILL, f"{params.get('name')}: {output.strip()[:200]}")
        return
    if tool == _ACTIVATE and isinstance(params.get("name"), str):
        b.activated(params["name"], base.TIER_AGENT)
    elif tool in _READ_TOOLS:
        paths: list[str] = []
        for key in _READ_TOOLS[tool]:
            value = params.get(key)
            if isinstance(value, str):
                paths.append(value)
            elif isinstance(value, list):
                paths += [v for v in value if isinstance(v, str)]
        for path in paths:
            b.file_tool_read(path)
    elif tool == _SHELL_TOOL and isinstance(params.get("command"), str):
        b.shell_read(params["command"])
