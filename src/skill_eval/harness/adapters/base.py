"""The adapter interface the runner programs against, and the base class adapters build on.

An adapter knows three things about one agent: how to launch it headless (argv, the
environment variables it needs, config files for its isolated HOME), where it discovers
skills, and how to turn its own event stream into the normalized vocabulary of
docs/ARCHITECTURE.md (`events.jsonl`, `usage.json`). It never decides a grade.

Why a Protocol (pre-commit's `Language`): the runner uses `Adapter` and nothing else — a
handful of capability attributes it asks instead of checking names (`needs_binary`,
`model_server_kind`, `needs_endpoint`), `launch(LaunchContext)`, `parse(...)` and
`binary_info(...)`. `AdapterBase` supplies the defaults, so an adapter module is only its
differences. Stream helpers live in `_events.py`, binary identity in `_binary.py`.

Why parse takes bytes: the runner owns every file access (a test scans it for opens), so an
adapter is handed the raw stream it already captured and returns records. `parse` never
raises on bad input: a malformed or truncated stream becomes explicit `run_error` events,
because a stream we cannot read must fail the run, not crash the runner and not pass.

Why `run_error` exists at all: the real CLIs report several failures as success (Claude's
permission denials with `subtype: success`, Gemini's `tool_not_registered` with
`status: success`, Codex's unknown-model warning item). Each adapter turns those into
`{"type": "run_error", "reason": "<kind>: <detail>"}` so nothing downstream can mistake a
crippled run for a clean one. `reason` always starts with one of the `ERR_*` kinds below.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skill_eval.harness.adapters._binary import BinaryInfo, binary_info

TIER_AGENT = "1"  # the agent itself reports activation (Claude Skill, Gemini activate_skill)
TIER_READS = "2"  # only reads of files inside the installed skill tree are visible (Codex)
TIER_MANUAL = "manual"

# run_error kinds (the prefix of `reason`; the list is docs/ARCHITECTURE.md's)
ERR_PERMISSION = "permission_denied"
ERR_TOOL_MISSING = "tool_not_registered"
ERR_TOOL_CALL = "invalid_tool_call"  # a call the agent could not make as written (bad JSON arguments, a call in prose)
ERR_MAX_TURNS = "max_turns"
ERR_BUDGET = "budget_exceeded"
ERR_UNKNOWN_SKILL = "unknown_skill"
ERR_SKILL_FAILED = "skill_activation_failed"  # a known skill the agent refused to load
ERR_SKILL_NOT_LOADED = "skill_not_loaded"
ERR_AGENT = "agent_error"
ERR_MODEL = "model_config"
ERR_SANDBOX = "sandbox_denied"
ERR_STREAM = "malformed_stream"
ERR_INCOMPLETE = "incomplete_stream"

# normalized stop reasons (usage.json "stop_reason"); STOP_BUDGET is what the runner seals as
# outcome `budget_stop`
STOP_COMPLETED = "completed"
STOP_MAX_TURNS = "max_turns"
STOP_BUDGET = "budget"
STOP_ERROR = "error"
STOP_INCOMPLETE = "incomplete"

# Dummy credential handed to agents that talk to a scripted model server. It is not a secret,
# but the runner still redacts every value of `credential_vars` from bundles.
SCRIPTED_DUMMY_KEY = "skill-eval-scripted-dummy-key"


@dataclass
class NormalizedRun:
    """What an adapter extracts from one raw stream."""

    events: list[dict[str, Any]]
    final_text: str
    usage: dict[str, Any]
    errors: list[str]
    stop_reason: str
    agent_version: str | None = None
    model: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors and self.stop_reason == STOP_COMPLETED


@dataclass(frozen=True)
class LaunchContext:
    """Everything one launch depends on, in one value (no adapter reads anything else).

    `base_url`: the model endpoint (a scripted server's URL, or a real one); `credentials`:
    the caller's real credential values (empty for scripted runs); `script`: the model script
    for an adapter that replays it itself (`model_server_kind is None`); `max_tokens`: cap on
    one model reply; `max_total_tokens`: cap on the tokens of the whole run (input + output),
    reached -> stop reason `budget`. Adapters whose agent has no such knob ignore the budgets.
    `temperature` / `seed`: sampling of a real model (the built-in loop sends them with every
    request; None: the endpoint's default). The runner records both in meta.json. Every path is
    the agent's (runner/layout.py: /work, /home/agent, ... at the bwrap level).
    """

    prompt: str
    home: Path
    workdir: Path
    model: str | None = None
    max_turns: int = 40
    binary: str | None = None
    base_url: str | None = None
    credentials: Mapping[str, str] = field(default_factory=dict)
    script: Path | None = None
    max_tokens: int | None = None
    max_total_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    python: str | None = None  # the in-process loop's interpreter as the agent names it (default: this one)
    pythonpath: str | None = None  # where that interpreter imports skill_eval from (default: this package's parent)


@dataclass(frozen=True)
class LaunchSpec:
    """Everything the runner needs to start one agent run (see Adapter.launch)."""

    argv: list[str]
    env: dict[str, str]  # on top of the runner's minimal sandbox env (PATH with the shim, LANG)
    home_files: dict[str, bytes]  # relative to the isolated HOME, written before launch
    stdin: bytes
    credential_vars: tuple[str, ...]  # values to redact from every bundle file
    skill_dirs: list[Path]  # [0] is where the arm's skills are installed


@runtime_checkable
class Adapter(Protocol):
    """What the runner uses of an adapter. Ask the capabilities, never the name."""

    name: str
    tier: str  # activation evidence tier: TIER_AGENT | TIER_READS | TIER_MANUAL
    executable: str  # program looked up on PATH when `needs_binary` and no binary is given
    needs_binary: bool  # False: skill-eval's own loop runs (nothing to find or identify)
    model_server_kind: str | None  # scripted server to start for scripted turns; None: replays ctx.script itself
    needs_endpoint: bool  # a real model needs an explicit --base-url (no default endpoint)
    default_endpoint: str | None  # the provider's API origin when no --base-url is given (the credential proxy's upstream)
    credential_vars: tuple[str, ...]  # env vars holding a credential (passed through, always redacted)

    def launch(self, ctx: LaunchContext) -> LaunchSpec: ...

    def parse(
        self,
        raw: bytes,
        skill_roots: Sequence[str | os.PathLike[str]] = (),
        *,
        cwd: str | os.PathLike[str] | None = None,
        installed_skills: Sequence[str] | None = None,
        exit_code: int | None = None,
    ) -> NormalizedRun: ...

    def binary_info(self, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> BinaryInfo: ...


def is_loopback(url: str | None) -> bool:
    """True for an http(s) URL whose host is 127.0.0.0/8, ::1 or localhost (a local server)."""
    if not url:
        return False
    try:
        parsed = urllib.parse.urlsplit(url)
        host = parsed.hostname
    except ValueError:
        return False
    if parsed.scheme not in ("http", "https") or not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AdapterBase:
    """Defaults for every member of `Adapter`; a subclass overrides only what differs.

    The launch is assembled from `build_command`, `env`, `home_files`, `stdin` and
    `skill_dirs`, each a function of the one LaunchContext (no I/O: the runner writes and
    spawns). `parse` wraps the adapter's `parse_stream` with the exit-status rule.
    """

    name: str = ""
    tier: str = TIER_MANUAL
    executable: str = ""
    needs_binary: bool = True
    model_server_kind: str | None = None
    needs_endpoint: bool = False
    default_endpoint: str | None = None
    credential_vars: tuple[str, ...] = ()
    default_model: str | None = None

    # -- launch -------------------------------------------------------------------------
    def skill_dirs(self, home: Path, workdir: Path) -> list[Path]:
        """Skill roots the agent discovers; the first is where the runner installs an arm's skills."""
        return [workdir / ".agents" / "skills"]

    def build_command(self, ctx: LaunchContext) -> list[str]:
        raise NotImplementedError

    def env(self, ctx: LaunchContext) -> dict[str, str]:
        """Variables the agent needs on top of the runner's minimal sandbox environment."""
        return {"HOME": str(ctx.home)}

    def home_files(self, ctx: LaunchContext) -> dict[str, bytes]:
        """Config files to create under the isolated HOME (relative path -> bytes) before launch."""
        return {}

    def stdin(self) -> bytes:
        """Bytes fed on stdin (empty: several CLIs block or print a notice on an open TTY/pipe)."""
        return b""

    def launch(self, ctx: LaunchContext) -> LaunchSpec:
        """argv + env + HOME files + stdin in one call."""
        return LaunchSpec(
            argv=self.build_command(ctx),
            env=self.env(ctx),
            home_files=self.home_files(ctx),
            stdin=self.stdin(),
            credential_vars=self.credential_vars,
            skill_dirs=self.skill_dirs(ctx.home, ctx.workdir),
        )

    def add_endpoint(self, env: dict[str, str], ctx: LaunchContext, *, url_var: str | None, key_var: str) -> dict[str, str]:
        """Point the agent at `ctx.base_url`; the caller's credentials win, else a dummy key
        (a scripted or local server ignores it, and the CLIs refuse to start without one)."""
        if ctx.base_url and url_var:
            env[url_var] = ctx.base_url
        present = {var: ctx.credentials[var] for var in self.credential_vars if var in ctx.credentials}
        if present:
            env.update(present)
        elif ctx.base_url:
            env[key_var] = SCRIPTED_DUMMY_KEY
        return env

    def binary_info(self, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> BinaryInfo:
        """`binary_info` plus whatever else identifies this agent's code (see extra_identity)."""
        resolved = Path(path).resolve(strict=True)
        return binary_info(path, env=env, extra=self.extra_identity(resolved))

    def extra_identity(self, resolved: Path) -> list[Path]:
        return []

    # -- results ------------------------------------------------------------------------
    def parse(
        self,
        raw: bytes,
        skill_roots: Sequence[str | os.PathLike[str]] = (),
        *,
        cwd: str | os.PathLike[str] | None = None,
        installed_skills: Sequence[str] | None = None,
        exit_code: int | None = None,
    ) -> NormalizedRun:
        """Normalize one captured stdout stream. Never raises on bad input.

        skill_roots: the absolute skill directories of this run (`skill_dirs`), to recognise
        reads of skill files; cwd: the agent's working directory, for relative paths;
        installed_skills: names the arm installed (a skill the agent did not load is a
        run_error where the stream lists loaded skills); exit_code: the agent process's
        status — non-zero is a run_error even when the stream looks clean (Claude exits 1
        on max turns, Gemini 53; a crash after the last event shows only here).
        """
        run = self.parse_stream(raw, skill_roots, cwd=cwd, installed_skills=installed_skills)
        if exit_code not in (None, 0):
            reason = f"{ERR_AGENT}: {self.name} exited with status {exit_code}"
            run.errors.append(reason)
            run.events.append({"type": "run_error", "reason": reason})
            if run.stop_reason == STOP_COMPLETED:
                run.stop_reason = run.usage["stop_reason"] = STOP_ERROR
        return run

    def parse_stream(
        self,
        raw: bytes,
        skill_roots: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None,
        installed_skills: Sequence[str] | None,
    ) -> NormalizedRun:
        raise NotImplementedError
