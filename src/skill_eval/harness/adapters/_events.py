"""Stream-parsing helpers every adapter shares: JSONL lines, skill paths, the event builder.

Why one module: the three CLI parsers and the built-in loop's parser used to repeat the
same bad-line branch, the same pending-call bookkeeping and the same path classification.
Here `EventBuilder` owns all of it — it reports unreadable lines as `malformed_stream`
run_errors (`json_lines`), remembers each tool call until its result arrives (`tool_call`
/ `tool_result`), and turns paths into skill reads — so an adapter module is only the
agent's differences: which event names mean what.

Nothing here touches the disk: paths are classified as strings (the runner owns file I/O).
"""

from __future__ import annotations

import json
import os
import posixpath
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from skill_eval.core import strict
from skill_eval.core.errors import InputError
from skill_eval.harness.adapters.base import ERR_STREAM, TIER_READS, NormalizedRun

MAX_OUTPUT_CHARS = 20_000  # tool output kept in events.jsonl (raw/ keeps everything)


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


def int_or_zero(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def obj_field(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """`obj[key]` when it is an object, else {} (streams are untrusted: never assume a shape)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


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


@dataclass
class PendingCall:
    """A tool call waiting for its result (EventBuilder keeps these keyed by call id)."""

    tool: str
    input: dict[str, Any] = field(default_factory=dict)


NO_CALL = PendingCall("")  # what `tool_result` returns for a result whose call was never seen


class EventBuilder:
    """Accumulates normalized events, in stream order, with the bookkeeping every parser needs."""

    def __init__(self, skill_paths: SkillPaths):
        self.paths = skill_paths
        self.events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.tool_calls = 0
        self.turns = 0
        self._pending: dict[str, PendingCall] = {}
        self._after_tool = True  # model activity after a tool result (or at start) opens a turn

    def json_lines(self, raw: bytes, source: str) -> Iterator[dict[str, Any]]:
        """The stream's JSON objects; every unreadable line is reported as `malformed_stream`."""
        for n, obj, err in iter_json_lines(raw, source):
            if obj is None:
                self.error(ERR_STREAM, err or f"line {n}")
            else:
                yield obj

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
        """Record a call and remember it (a dict input; anything else as {}) for its result."""
        self._model_activity()
        self.tool_calls += 1
        self._pending[str(call_id)] = PendingCall(tool, tool_input if isinstance(tool_input, dict) else {})
        if not isinstance(tool_input, dict):
            tool_input = {"value": tool_input}
        self.events.append({"type": "tool_call", "id": str(call_id), "tool": tool, "input": tool_input})

    def tool_result(self, call_id: str, is_error: bool, output: str) -> PendingCall:
        """Record a result; returns the call it answers (NO_CALL when the stream never showed it)."""
        self._after_tool = True
        self.events.append({"type": "tool_result", "id": str(call_id), "is_error": bool(is_error), "output": clip(output)})
        return self._pending.pop(str(call_id), NO_CALL)

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


__all__ = [
    "MAX_OUTPUT_CHARS",
    "NO_CALL",
    "READERS",
    "EventBuilder",
    "PendingCall",
    "SkillPaths",
    "as_text",
    "clip",
    "command_words",
    "int_or_zero",
    "iter_json_lines",
    "obj_field",
]
