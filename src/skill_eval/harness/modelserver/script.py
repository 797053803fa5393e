"""Model scripts: load, digest, pick the turn a request is at, translate neutral tool calls.

Why the turn index comes from the request: a scripted server that counted requests would
break on a client retry, a second parallel run, or an auxiliary request (title generation,
Gemini's router). Every tool-call id we mint carries its turn (`skev_t<turn>_c<i>`), the
client echoes the ids back in the conversation, so the next turn is 1 + the highest turn
found in the request body. A client that rewrites ids (Gemini CLI may) falls back to
counting the assistant/model messages that hold tool calls.

The digest is sha256 of the file bytes, so a bundle's `model: scripted:<digest>` names
exactly the script that produced it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.core import schemas, strict
from skill_eval.core.errors import InputError

ID_PREFIX = "skev_t"
_ID_RE = re.compile(r"skev_t(\d+)_c(\d+)")
DEFAULT_USAGE = {"input_tokens": 100, "output_tokens": 20}
EXHAUSTED = "[skill-eval scripted model: the script has no turn {turn}; it has {count}]"


@dataclass(frozen=True)
class Call:
    """One tool call of a turn, after translation for a provider."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class ModelScript:
    turns: list[dict[str, Any]]
    digest: str
    usage: dict[str, int]
    source: str
    latency: float = 0.0  # default seconds per turn (script `latency:`, or a server's --latency)

    @property
    def model_id(self) -> str:
        return f"scripted:{self.digest}"

    def delay(self, index: int) -> float:
        """Seconds to wait before answering turn `index`: the turn's `delay`, else the script's latency.

        Real models take seconds per turn; without this, scripted runs finish in milliseconds and
        runner parallelism cannot be measured the way real runs behave."""
        step = self.turns[index] if 0 <= index < len(self.turns) else {}
        return float(step.get("delay", self.latency))

    def turn(self, index: int) -> dict[str, Any]:
        """Turn `index` (0-based); past the end, a final answer saying so (logged by servers)."""
        if 0 <= index < len(self.turns):
            return self.turns[index]
        return {"final": EXHAUSTED.format(turn=index + 1, count=len(self.turns)), "exhausted": True}


def load_script(path: Path) -> ModelScript:
    data = strict.read_bytes(path, max_bytes=4 * 1024 * 1024)
    return parse_script(data, str(path), yaml=path.suffix in (".yaml", ".yml"))


def parse_script(data: bytes, source: str, *, yaml: bool) -> ModelScript:
    text = strict.decode_utf8(data, source)
    value = strict.loads_yaml(text, source) if yaml else strict.loads_json(text, source)
    schemas.validate(value, "model_script", source)
    turns = value["turns"]
    for i, turn in enumerate(turns):
        is_last = i == len(turns) - 1
        if is_last and "final" not in turn:
            raise InputError(f"field turns.{i}: the last turn must be a final answer", source=source)
        if not is_last and "final" in turn:
            raise InputError(f"field turns.{i}: only the last turn may be final (later turns are unreachable)", source=source)
    usage = dict(DEFAULT_USAGE)
    usage.update(value.get("usage", {}))
    return ModelScript(turns=turns, digest=hashlib.sha256(data).hexdigest(), usage=usage, source=source,
                       latency=float(value.get("latency", 0.0)))


def call_id(turn: int, index: int, prefix: str = "") -> str:
    return f"{prefix}{ID_PREFIX}{turn}_c{index}"


def turn_from_ids(body: Any) -> int | None:
    """1 + the highest turn named by one of our call ids anywhere in the body, else None."""
    best = -1
    for text in _strings(body):
        for m in _ID_RE.finditer(text):
            best = max(best, int(m.group(1)))
    return best + 1 if best >= 0 else None


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


# -- translation of neutral calls -------------------------------------------------------


def translate(
    call: dict[str, Any],
    provider: str,
    offered: dict[Any, Any],  # client JSON: names and schemas as the request sent them
    request_text: str,
    cid: str,
) -> Call:
    """Turn a neutral script call into the tool the client offered.

    provider: "anthropic", "openai" (Responses or Chat: Codex or the built-in loop) or
    "gemini". `offered` maps offered tool names to their parameter schemas; `request_text`
    is the serialized request (Codex's skill paths are read from its developer message).
    """
    if "tool" in call:
        return Call(cid, call["tool"], dict(call.get("input", {})))
    if "shell" in call:
        return _shell(call["shell"], call.get("description", "scripted command"), provider, offered, cid)
    if "skill" in call:
        name = call["skill"]
        # Claude and Gemini get their native activation tool even when the client did not
        # offer it (--bare, no --yolo): the CLI then reports the missing tool, which is the
        # failure the adapters must surface — a silent fallback would hide it.
        if provider == "anthropic":
            args = {"skill": name}
            if "args" in call:
                args["args"] = call["args"]
            return Call(cid, "Skill", args)
        if provider == "gemini" or "activate_skill" in offered:
            return Call(cid, "activate_skill", {"name": name})
        # Codex has no activation tool: the model reads SKILL.md (tier 2 evidence)
        return _shell(f"cat {_quote(skill_md_path(name, request_text))}", f"read skill {name}", provider, offered, cid)
    path = call["read_file"]
    if provider == "gemini" and "read_file" in offered:
        return Call(cid, "read_file", {_first_param(offered["read_file"], "file_path"): path})
    if provider == "anthropic" and "Read" in offered and path.startswith("/"):
        return Call(cid, "Read", {"file_path": path})
    if provider == "openai" and "read_file" in offered:
        return Call(cid, "read_file", {"path": path})
    return _shell(f"cat {_quote(path)}", f"read {path}", provider, offered, cid)


def _shell(command: str, description: str, provider: str, offered: dict[str, Any], cid: str) -> Call:
    if provider == "anthropic":
        return Call(cid, "Bash", {"command": command, "description": description})
    if provider == "gemini":
        return Call(cid, "run_shell_command", {"command": command, "description": description})
    if "exec_command" in offered or not offered:
        return Call(cid, "exec_command", _exec_args(command, offered))
    if "shell" in offered:
        props = (offered["shell"] or {}).get("properties", {})
        if props.get("command", {}).get("type") == "array":
            return Call(cid, "shell", {"command": ["bash", "-lc", command]})
        return Call(cid, "shell", {"command": command})
    if "shell_command" in offered:
        return Call(cid, "shell_command", {"command": command})
    return Call(cid, "exec_command", _exec_args(command, offered))


# How long a scripted turn lets Codex's exec_command wait for its command: Codex's default (10 s) hands
# back a still-running command, and the exec session kills it when the turn ends (exit 137): on a loaded
# machine an abicheck compare takes longer than that. The run's own wall clock still bounds it.
EXEC_WAIT_MS = 300_000


def _exec_args(command: str, offered: dict[str, Any]) -> dict[str, Any]:
    props = (offered.get("exec_command") or {}).get("properties", {})
    return {"cmd": command, **({"yield_time_ms": EXEC_WAIT_MS} if "yield_time_ms" in props else {})}


def _first_param(schema: dict[str, Any] | None, default: str) -> str:
    required = (schema or {}).get("required")
    if isinstance(required, list) and required and isinstance(required[0], str):
        return required[0]
    return default


def _quote(path: str) -> str:
    return path if re.fullmatch(r"[\w./~-]+", path) else "'" + path.replace("'", "'\\''") + "'"


def skill_md_path(name: str, request_text: str) -> str:
    """Where Codex said the skill lives.

    0.171 lists roots as "- `r1` = `/abs/.agents/skills`" (backticks; REPORT.md shows them
    without) and skills as "- name: description (file: r1/name/SKILL.md)".
    """
    m = re.search(r"- " + re.escape(name) + r": .*?\(file: ([^)\s]+/" + re.escape(name) + r"/SKILL\.md)\)", request_text)
    if m:
        file = m.group(1)
        root = re.match(r"(r\d+)/", file)
        if root:
            rm = re.search(r"- `?" + root.group(1) + r"`? = `?([^`\s]+)", request_text)
            if rm:
                return rm.group(1).rstrip("/") + file[len(root.group(1)) :]
        return file
    return f".agents/skills/{name}/SKILL.md"


def json_for_schema(schema: Any) -> Any:
    """A value satisfying a (simple) JSON schema: for tool-less auxiliary requests.

    Gemini's router needs `complexity_score >= 1`; Claude's title request needs `title`.
    """
    if not isinstance(schema, dict):
        return "scripted"
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    kind = kind.lower() if isinstance(kind, str) else kind
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: json_for_schema(v) for k, v in props.items()}
    if kind == "array":
        return [json_for_schema(schema.get("items", {}))] if schema.get("minItems") else []
    if kind in ("integer", "number"):
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return False
    return "scripted"


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
