"""Codex CLI: `codex exec --json`, tier-2 activation (reads of the skill tree only).

Measured against 0.171.0 (research/agent-cli/REPORT.md §2):
- Codex has native skills but no activation tool: the model reads `<root>/<name>/SKILL.md`
  with a shell command. The only evidence is a `command_execution` item whose command names
  that file, so activation here is tier 2 and must never be reported as tier 1;
- a `$name` mention makes the CLI inject the body into the request; the `--json` stream
  does not show it (only the model server's request log does);
- only the Responses wire API works (`wire_api = "chat"` is rejected), configured as a
  custom `model_providers` entry in `$CODEX_HOME/config.toml`;
- an `item.completed` of type `error` ("Model metadata for `x` not found") is a warning the
  run survives; it means the harness configured a model slug this Codex does not know,
  which changes its prompt and tools, so it is a run_error (`model_config`);
- `turn.failed` / top-level `error` events are failures; a stream without
  `turn.completed` was cut off.
Codex has no max-turns flag: the runner's wall-clock timeout is the only turn budget.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skill_eval.harness.adapters import base
from skill_eval.harness.adapters._events import EventBuilder, SkillPaths, int_or_zero, obj_field
from skill_eval.harness.adapters.base import (
    ERR_AGENT,
    ERR_INCOMPLETE,
    ERR_MODEL,
    ERR_PERMISSION,
    ERR_SANDBOX,
    AdapterBase,
    LaunchContext,
    NormalizedRun,
)

PROVIDER_ID = "skill_eval"
KEY_VAR = "SKILL_EVAL_OPENAI_API_KEY"
# Output texts of Codex's own sandbox refusing a write or a socket (workspace-write mode).
_SANDBOX_MARKERS = ("Read-only file system", "Operation not permitted")


class CodexAdapter(AdapterBase):
    name = "codex"
    tier = base.TIER_READS
    executable = "codex"
    model_server_kind = "openai-responses"
    default_endpoint = "https://api.openai.com"  # the credential proxy's upstream without --base-url
    credential_vars = (KEY_VAR, "OPENAI_API_KEY", "CODEX_API_KEY")
    default_model = "gpt-5.5"  # a slug from `codex debug models` in 0.171; unknown slugs degrade

    def __init__(self, sandbox: str = "bypass"):
        # "bypass": the runner's sandbox is the boundary (measured to work); "workspace-write":
        # Codex's own seccomp sandbox on top (blocks sockets, e.g. a subject's network use).
        if sandbox not in ("bypass", "workspace-write", "read-only"):
            raise ValueError(f"sandbox must be bypass, workspace-write or read-only, not {sandbox!r}")
        self.sandbox = sandbox

    def extra_identity(self, resolved: Path) -> list[Path]:
        """npm's codex.js launcher execs node_modules/@openai/codex-<platform>/vendor/<triple>/bin/codex."""
        node_modules = resolved.parents[3] if len(resolved.parents) > 3 else resolved.parent
        return sorted(node_modules.glob("@openai/codex-*/vendor/*/bin/codex"))

    def skill_dirs(self, home: Path, workdir: Path) -> list[Path]:
        codex_home = home / ".codex"
        return [
            workdir / ".agents" / "skills",
            workdir / ".codex" / "skills",
            codex_home / "skills",
            codex_home / "skills" / ".system",  # written by Codex itself on first run (imagegen, ...)
        ]

    def build_command(self, ctx: LaunchContext) -> list[str]:
        argv = [ctx.binary or self.executable, "exec", "--json", "--skip-git-repo-check"]
        if self.sandbox == "bypass":
            argv.append("--dangerously-bypass-approvals-and-sandbox")
        else:
            argv += ["--sandbox", self.sandbox]
        if ctx.model:
            argv += ["--model", ctx.model]
        argv.append(ctx.prompt)
        return argv

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        env = {"HOME": str(ctx.home), "CODEX_HOME": str(ctx.home / ".codex")}
        return self.add_endpoint(env, ctx, url_var=None, key_var=KEY_VAR)

    def home_files(self, ctx: LaunchContext) -> dict[str, bytes]:
        # allow_login_shell = false: Codex otherwise runs every command as `bash -lc`, and a
        # login shell re-reads /etc/profile, which resets PATH — the recording shim on the
        # sandbox PATH would vanish and the subject would be "command not found" (measured).
        lines = [f"model = {_toml_str(ctx.model or self.default_model or '')}", "allow_login_shell = false"]
        if ctx.base_url:
            lines.append(f"model_provider = {_toml_str(PROVIDER_ID)}")
        lines += [
            "",
            "[features]",  # no curated-plugin sync to github.com, no apps
            "plugins = false",
            "apps = false",
            "remote_plugin = false",
        ]
        if ctx.base_url:
            lines += [
                "",
                f"[model_providers.{PROVIDER_ID}]",
                'name = "skill-eval scripted model server"',
                f"base_url = {_toml_str(ctx.base_url.rstrip('/') + '/v1')}",
                'wire_api = "responses"',
                f"env_key = {_toml_str(KEY_VAR)}",
                "request_max_retries = 0",
                "stream_max_retries = 0",
            ]
        return {".codex/config.toml": ("\n".join(lines) + "\n").encode()}

    def parse_stream(
        self,
        raw: bytes,
        skill_roots: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None,
        installed_skills: Sequence[str] | None,
    ) -> NormalizedRun:
        b = EventBuilder(SkillPaths(skill_roots, cwd))
        started: set[str] = set()
        tokens: list[int] = []  # input, output summed over turns; empty: no usage seen
        completed = failed = False
        final = ""
        for obj in b.json_lines(raw, "codex stream"):
            kind = obj.get("type")
            item = obj.get("item")
            if kind in ("item.started", "item.updated", "item.completed") and isinstance(item, dict):
                text = _item(b, item, kind, started)
                final = text if text is not None else final
            elif kind == "turn.completed":
                completed = True
                _add_usage(tokens, obj_field(obj, "usage"))
            elif kind in ("turn.failed", "error"):
                failed = True
                detail = f"turn failed: {obj_field(obj, 'error').get('message', '')}" if kind == "turn.failed" else str(obj.get("message", ""))
                b.error(ERR_AGENT, detail)
        if failed:
            stop = base.STOP_ERROR
        elif completed:
            stop = base.STOP_COMPLETED
        else:
            stop = base.STOP_INCOMPLETE
            b.error(ERR_INCOMPLETE, "no turn.completed event (the agent was killed, timed out or crashed)")
        return b.finish(final_text=final, stop_reason=stop, tokens_in=tokens[0] if tokens else None,
                        tokens_out=tokens[1] if tokens else None)


def _add_usage(tokens: list[int], usage: dict[str, Any]) -> None:
    if not usage:
        return
    if not tokens:
        tokens += [0, 0]
    tokens[0] += int_or_zero(usage.get("input_tokens"))
    tokens[1] += int_or_zero(usage.get("output_tokens"))


def _item(b: EventBuilder, item: dict[str, Any], kind: str, started: set[str]) -> str | None:
    """Normalize one item event; return the text of a completed agent message."""
    item_id = str(item.get("id", ""))
    itype = item.get("type")
    done = kind == "item.completed"
    if itype == "agent_message" and done:
        text = raw_text if isinstance(raw_text := item.get("text"), str) else ""
        b.message("assistant", text)
        return text
    if itype == "error" and done:
        message = str(item.get("message", ""))
        b.error(ERR_MODEL if "Model metadata" in message else ERR_AGENT, message)
        return None
    tool, tool_input = _tool_of(item)
    if tool is None:
        return None  # reasoning, todo_list, ...: not part of the vocabulary
    if item_id not in started:
        started.add(item_id)
        b.tool_call(item_id, tool, tool_input)
    if not done:
        return None
    status = item.get("status")
    exit_code = item.get("exit_code")
    is_error = status in ("failed", "declined") or (isinstance(exit_code, int) and exit_code != 0)
    output = item.get("aggregated_output")
    if not isinstance(output, str):
        output = json.dumps({k: v for k, v in item.items() if k not in ("id", "type")}, sort_keys=True)
    b.tool_result(item_id, is_error, output)
    if status == "declined":
        b.error(ERR_PERMISSION, f"{tool} item {item_id} declined")
    if itype == "command_execution":
        if any(m in output for m in _SANDBOX_MARKERS):
            b.error(ERR_SANDBOX, f"item {item_id}: Codex's sandbox refused part of the command")
        if not is_error:
            b.shell_read(tool_input.get("command", ""))
    return None


def _tool_of(item: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    itype = item.get("type")
    if itype == "command_execution":
        return "command_execution", {"command": str(item.get("command", ""))}
    if itype == "file_change":
        return "file_change", {"changes": item.get("changes", [])}
    if itype == "mcp_tool_call":
        return f"mcp:{item.get('server', '')}/{item.get('tool', '')}", {"arguments": item.get("arguments")}
    if itype == "web_search":
        return "web_search", {"query": item.get("query")}
    return None, {}


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string
