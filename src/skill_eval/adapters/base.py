"""The one interface every agent adapter implements, plus the helpers they share.

An adapter knows three things about one agent: how to launch it headless (argv, the
environment variables it needs, config files for its isolated HOME), where it discovers
skills, and how to turn its own event stream into the normalized vocabulary of
docs/ARCHITECTURE.md (`events.jsonl`, `usage.json`). It never decides a grade.

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

import hashlib
import json
import os
import posixpath
import shlex
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval import strict
from skill_eval.errors import InputError

TIER_AGENT = "1"  # the agent itself reports activation (Claude Skill, Gemini activate_skill)
TIER_READS = "2"  # only reads of files inside the installed skill tree are visible (Codex)
TIER_MANUAL = "manual"

# run_error kinds (the prefix of `reason`)
ERR_PERMISSION = "permission_denied"
ERR_TOOL_MISSING = "tool_not_registered"
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

# normalized stop reasons (usage.json "stop_reason")
STOP_COMPLETED = "completed"
STOP_MAX_TURNS = "max_turns"
STOP_BUDGET = "budget"
STOP_ERROR = "error"
STOP_INCOMPLETE = "incomplete"

# Dummy credential handed to agents that talk to a scripted model server. It is not a secret,
# but the runner still redacts every value of `credential_vars()` from bundles.
SCRIPTED_DUMMY_KEY = "skill-eval-scripted-dummy-key"

MAX_OUTPUT_CHARS = 20_000  # tool output kept in events.jsonl (raw/ keeps everything)


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
class BinaryInfo:
    """Identity of an agent binary for meta.json: version string + digest of the resolved file.

    `package` is `name@version` from the nearest package.json when the binary came from npm;
    `extra` digests files the entry point runs (Codex's codex.js execs a vendored native binary).
    """

    path: str
    resolved: str
    version: str | None
    sha256: str
    package: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LaunchSpec:
    """Everything the runner needs to start one agent run (see Adapter.launch)."""

    argv: list[str]
    env: dict[str, str]  # on top of the runner's minimal sandbox env (PATH with the shim, LANG)
    home_files: dict[str, bytes]  # relative to the isolated HOME, written before launch
    stdin: bytes
    credential_vars: tuple[str, ...]  # values to redact from every bundle file
    skill_dirs: list[Path]  # [0] is where the arm's skills are installed


class Adapter:
    """Base class; subclasses set the class attributes and override what differs."""

    name: str = ""
    tier: str = TIER_MANUAL
    executable: str = ""  # program name looked up by the runner when no binary is given
    default_model: str | None = None

    # -- launch -------------------------------------------------------------------------
    def skill_dirs(self, home: Path, workdir: Path) -> list[Path]:
        """Skill roots the agent discovers; the first is where the runner installs an arm's skills."""
        return [workdir / ".agents" / "skills"]

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
        raise NotImplementedError

    def env(
        self,
        *,
        home: Path,
        workdir: Path,
        base_url: str | None = None,
        credentials: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """Variables the agent needs on top of the runner's minimal sandbox environment.

        With `base_url` (a scripted model server) the credential is a dummy; otherwise the
        caller passes the real one in `credentials` (never written to a bundle: the runner
        redacts the values of `credential_vars()`).
        """
        return {"HOME": str(home)}

    def credential_vars(self) -> tuple[str, ...]:
        return ()

    def add_endpoint(self, env: dict[str, str], base_url: str | None, credentials: Mapping[str, str] | None,
                     *, url_var: str | None, key_var: str) -> dict[str, str]:
        """A scripted server gets its URL and a dummy key; a real endpoint gets the caller's credentials."""
        if base_url:
            if url_var:
                env[url_var] = base_url
            env[key_var] = SCRIPTED_DUMMY_KEY
        elif credentials:
            env.update({var: credentials[var] for var in self.credential_vars() if var in credentials})
        return env

    def binary_info(self, path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> BinaryInfo:
        """`binary_info` plus whatever else identifies this agent's code (see extra_identity)."""
        resolved = Path(path).resolve(strict=True)
        return binary_info(path, env=env, extra=self.extra_identity(resolved))

    def extra_identity(self, resolved: Path) -> list[Path]:
        return []

    def home_files(
        self, *, home: Path, workdir: Path, base_url: str | None, model: str | None, max_turns: int
    ) -> dict[str, bytes]:
        """Config files to create under the isolated HOME (relative path -> bytes) before launch."""
        return {}

    def stdin(self) -> bytes:
        """Bytes fed on stdin (empty: several CLIs block or print a notice on an open TTY/pipe)."""
        return b""

    def launch(
        self,
        prompt: str,
        *,
        home: Path,
        workdir: Path,
        model: str | None,
        max_turns: int,
        binary: str | None = None,
        base_url: str | None = None,
        credentials: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> LaunchSpec:
        """argv + env + HOME files + stdin in one call (no I/O: the runner writes and spawns)."""
        return LaunchSpec(
            argv=self.build_command(
                prompt, model=model, max_turns=max_turns, binary=binary, base_url=base_url, workdir=workdir, home=home, **extra
            ),
            env=self.env(home=home, workdir=workdir, base_url=base_url, credentials=credentials),
            home_files=self.home_files(home=home, workdir=workdir, base_url=base_url, model=model, max_turns=max_turns),
            stdin=self.stdin(),
            credential_vars=self.credential_vars(),
            skill_dirs=self.skill_dirs(home, workdir),
        )

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


# ---------------------------------------------------------------------------------------
# shared helpers


def iter_json_lines(raw: bytes, source: str) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """Yield (line number, object, error) for each non-blank line of a JSONL stream.

    Lines are parsed with `strict.loads_json` (duplicate keys, NaN refused): an agent stream
    has no reason to contain either, and a line we would read ambiguously is an error. A bad
    line yields (n, None, message) instead of raising, so the adapter records a run_error
    and keeps the rest; a non-object line is an error too.
    """
    try:
        text = strict.decode_utf8(raw, source)
    except InputError as exc:
        yield 0, None, str(exc)
        text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    # split on "\n" only: str.splitlines() would also split inside JSON strings at U+2028,
    # U+0085 and friends, which JSON.stringify leaves unescaped
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            obj = strict.loads_json(line, f"{source} line {n}")
        except InputError as exc:
            yield n, None, str(exc)
            continue
        if not isinstance(obj, dict):
            yield n, None, f"{source} line {n}: not a JSON object"
            continue
        yield n, obj, None


def clip(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters in raw/]"


def as_text(value: Any) -> str:
    """Tool output as text: strings as-is, Anthropic content-block lists joined, else JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, str):
                parts.append(block)
            else:
                parts.append(json.dumps(block, sort_keys=True))
        return "\n".join(parts)
    return json.dumps(value, sort_keys=True)


class SkillPaths:
    """Map paths seen in a stream to (skill, path inside the skill) without touching the disk.

    Roots are the absolute skill directories the agent discovers. Relative paths are joined
    to `cwd` when known; without a cwd a relative path still matches when it starts with a
    root's last two components (".agents/skills/x/SKILL.md"), which is how agents write them.
    """

    def __init__(self, roots: Iterable[str | os.PathLike[str]], cwd: str | os.PathLike[str] | None):
        # longest first: a nested root (Codex's skills/.system) wins over its parent
        self.roots = sorted({posixpath.normpath(os.fspath(r)) for r in roots}, key=lambda r: (-len(r), r))
        self.cwd = posixpath.normpath(os.fspath(cwd)) if cwd is not None else None

    def classify(self, path: str) -> tuple[str, str] | None:
        if not path or "\x00" in path:
            return None
        path = path.strip().strip("'\"")
        if path.startswith("file://"):
            path = path[len("file://") :]
        candidates = []
        if posixpath.isabs(path):
            candidates.append(posixpath.normpath(path))
        elif self.cwd is not None:
            candidates.append(posixpath.normpath(posixpath.join(self.cwd, path)))
        for cand in candidates:
            for root in self.roots:
                if cand.startswith(root + "/"):
                    return _split_skill(cand[len(root) + 1 :])
        if not posixpath.isabs(path):
            rel = posixpath.normpath(path)
            for root in self.roots:
                tail = "/".join(root.split("/")[-2:])
                if tail and rel.startswith(tail + "/"):
                    return _split_skill(rel[len(tail) + 1 :])
        return None


def _split_skill(inside: str) -> tuple[str, str] | None:
    parts = inside.split("/", 1)
    if not parts[0] or parts[0].startswith("."):  # "..", or a hidden dir such as .system
        return None
    return parts[0], parts[1] if len(parts) > 1 else "."


_SHELLS = {"bash", "sh", "zsh", "dash"}
# programs whose naming a SKILL.md means its text reached the model (tier-2 evidence)
READERS = {"cat", "sed", "head", "tail", "less", "more", "nl", "awk", "gawk", "bat", "batcat", "grep", "rg", "tac", "view", "strings"}


def command_words(command: str | Sequence[str]) -> list[str]:
    """Words of a shell command, unwrapping `bash -lc '<script>'` the way Codex reports it.

    Best effort (this only feeds the tier-2 read heuristic): operators split words, an
    unbalanced quote falls back to whitespace splitting, `key=value` words also yield value.
    """
    if isinstance(command, str):
        words = _split(command)
    else:
        words = [str(w) for w in command]
    if len(words) >= 3 and posixpath.basename(words[0]) in _SHELLS and words[1] in ("-c", "-lc", "-cl"):
        words = _split(words[2]) + words[3:]
    out: list[str] = []
    for w in words:
        out.append(w)
        if "=" in w:
            out.append(w.split("=", 1)[1])
    return out


def _split(text: str) -> list[str]:
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return text.split()


class EventBuilder:
    """Accumulates normalized events, in stream order, with the bookkeeping every parser needs."""

    def __init__(self, skill_paths: SkillPaths):
        self.paths = skill_paths
        self.events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.tool_calls = 0
        self.turns = 0
        self._after_tool = True  # model activity after a tool result (or at start) opens a turn

    def _model_activity(self) -> None:
        if self._after_tool:
            self.turns += 1
            self._after_tool = False

    def message(self, role: str, text: str) -> None:
        if role == "assistant":
            self._model_activity()
        if text:
            self.events.append({"type": "message", "role": role, "text": text})

    def tool_call(self, call_id: str, tool: str, tool_input: Any) -> None:
        self._model_activity()
        self.tool_calls += 1
        if not isinstance(tool_input, dict):
            tool_input = {"value": tool_input}
        self.events.append({"type": "tool_call", "id": str(call_id), "tool": tool, "input": tool_input})

    def tool_result(self, call_id: str, is_error: bool, output: str) -> None:
        self._after_tool = True
        self.events.append({"type": "tool_result", "id": str(call_id), "is_error": bool(is_error), "output": clip(output)})

    def activated(self, skill: str, tier: str) -> None:
        if skill:  # an empty name is no evidence (schemas/event.schema.json: minLength 1)
            self.events.append({"type": "skill_activated", "skill": skill, "tier": tier})

    def file_read(self, skill: str, path: str) -> None:
        event = {"type": "skill_file_read", "skill": skill, "path": path}
        if self.events and self.events[-1] == event:
            return
        self.events.append(event)

    def reads_from_paths(self, paths: Iterable[str]) -> list[tuple[str, str]]:
        """Record skill_file_read for every path inside a skill root; return the hits."""
        hits = []
        seen = set()
        for p in paths:
            hit = self.paths.classify(p)
            if hit and hit not in seen:
                seen.add(hit)
                hits.append(hit)
                self.file_read(*hit)
        return hits

    def file_tool_read(self, path: str, *, tier2: bool = True) -> None:
        """A read tool (Claude Read, Gemini read_file) returned a file: SKILL.md is tier 2."""
        for skill, rel in self.reads_from_paths([path]):
            if tier2 and rel == "SKILL.md":
                self.activated(skill, TIER_READS)

    def shell_read(self, command: str | Sequence[str], *, tier2: bool = True) -> None:
        """A successful shell command: every skill path it names is a skill_file_read; a
        SKILL.md named by a reading program (cat, sed, head...) is a tier-2 activation.
        `ls .agents/skills/x/SKILL.md` touches the file but reads nothing: no activation."""
        words = command_words(command)
        hits = self.reads_from_paths(words)
        if tier2 and any(posixpath.basename(w) in READERS for w in words):
            for skill, rel in hits:
                if rel == "SKILL.md":
                    self.activated(skill, TIER_READS)

    def error(self, kind: str, detail: str) -> None:
        reason = f"{kind}: {detail}" if detail else kind
        if reason not in self.errors:
            self.errors.append(reason)
            self.events.append({"type": "run_error", "reason": reason})

    def finish(
        self,
        *,
        final_text: str,
        stop_reason: str,
        tokens_in: int | None,
        tokens_out: int | None,
        cost_usd: float | None = None,
        turns: int | None = None,
        agent_version: str | None = None,
        model: str | None = None,
    ) -> NormalizedRun:
        usage = {
            "turns": turns if turns is not None else self.turns,
            "tool_calls": self.tool_calls,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": cost_usd,
            "wall_clock_s": None,  # measured by the runner, which must set it (usage schema: number)
            "retries": 0,  # counted by the runner
            "stop_reason": stop_reason,
        }
        return NormalizedRun(
            events=self.events,
            final_text=final_text,
            usage=usage,
            errors=list(self.errors),
            stop_reason=stop_reason,
            agent_version=agent_version,
            model=model,
        )


def int_or_zero(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def binary_info(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    extra: Sequence[Path] = (),
) -> BinaryInfo:
    """Version string (first line of `<binary> --version`) and sha256 of the resolved file.

    npm installs put a symlink in node_modules/.bin; the digest is of the file it resolves to
    (Claude: the native binary; Codex: the JS launcher, its native binary in `extra`; Gemini:
    the JS bundle entry point, its chunks identified by `package`). A binary that does not
    answer --version still gets a digest, with version None.
    """
    p = Path(path)
    resolved = p.resolve(strict=True)
    version = None
    try:
        proc = subprocess.run(
            [str(p), "--version"],
            capture_output=True,
            timeout=timeout,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        lines = proc.stdout.decode("utf-8", errors="replace").strip().splitlines()
        if proc.returncode == 0 and lines:
            version = lines[-1].strip()  # Codex prints a warning line first on some setups
    except (OSError, subprocess.TimeoutExpired):
        version = None
    return BinaryInfo(
        path=str(p),
        resolved=str(resolved),
        version=version,
        sha256=_sha256_file(resolved),
        package=_npm_package(resolved),
        extra={str(x): _sha256_file(x) for x in extra},
    )


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _npm_package(resolved: Path) -> str | None:
    for parent in list(resolved.parents)[:4]:
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                data = strict.load_json(manifest)
            except InputError:
                return None
            if isinstance(data, dict) and isinstance(data.get("name"), str) and isinstance(data.get("version"), str):
                return f"{data['name']}@{data['version']}"
            return None
    return None


def require_binary(binary: str | None, default: str) -> str:
    return binary if binary else default


@dataclass
class PendingCall:
    """A tool call waiting for its result (parsers keep these keyed by call id)."""

    tool: str
    input: dict[str, Any] = field(default_factory=dict)
