"""The built-in tool-using agent loop behind the `openai-compatible` and `scripted` adapters.

It runs as its own process (`python -m`-style, launched by the adapter's argv) so the
runner treats it exactly like a real agent CLI: cwd = the sandbox, env = the sandbox env,
raw JSONL stream on stdout, parsed afterwards by the adapter. Backends:
- `chat` / `responses`: any OpenAI-style endpoint (Ollama, vLLM, llama.cpp, the scripted
  server), non-streaming requests, key read from an env var (never argv);
- `script`: no model at all, the turns of a model script replayed in-process — for tests
  and the runner's throughput benchmark.
Tools: `shell` (runs in cwd with the sandbox env minus the API key), `read_file`,
`activate_skill`. Skills are disclosed progressively, like the real CLIs: name +
description + location in the system prompt, body only on activation. Reading or
activating a SKILL.md writes a `skill_activated` line: this loop *is* the agent, so its
activation evidence is tier 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from skill_eval import strict
from skill_eval.errors import InputError
from skill_eval.modelserver import script as ms

MAX_TOOL_OUTPUT = 64 * 1024
MAX_READ = 256 * 1024
DEFAULT_KEY_VAR = "SKILL_EVAL_OPENAI_API_KEY"

TOOLS: list[dict[str, Any]] = [
    {
        "name": "shell",
        "description": "Run a shell command (/bin/sh -c) in the working directory; returns exit code, stdout and stderr.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
    {
        "name": "read_file",
        "description": "Read a text file (path absolute or relative to the working directory).",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "activate_skill",
        "description": "Load the full instructions of one of the available skills by name.",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
]

SYSTEM = """You are a command-line agent working in {cwd}.
Use the `shell` tool to run commands and `read_file` to read files. When you are done, answer without calling a tool.
{skills}"""

SKILLS_BLOCK = """
Skills extend what you can do. When a task matches a skill's description, call `activate_skill` with its name
(or `read_file` its SKILL.md) before acting, then follow its instructions.
<available_skills>
{entries}
</available_skills>"""


class ModelError(Exception):
    """The endpoint failed or answered something unusable."""


@dataclass
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md


@dataclass
class Reply:
    text: str
    calls: list[ms.Call]
    usage: tuple[int, int]
    raw: Any = None


@dataclass
class Agent:
    model: Any
    cwd: Path
    skills: dict[str, Skill]
    out: TextIO
    child_env: dict[str, str]
    shell_timeout: float = 600.0
    history: list[dict[str, Any]] = field(default_factory=list)

    def emit(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")
        self.out.flush()

    # -- tools --------------------------------------------------------------------------
    def execute(self, call: ms.Call) -> tuple[bool, str, dict[str, Any]]:
        """Run one tool call: (is_error, output, extra fields for the raw tool_result line)."""
        args = call.input
        if call.name == "shell" and isinstance(args.get("command"), str):
            return self._shell(args["command"])
        if call.name == "read_file" and isinstance(args.get("path"), str):
            return self._read(args["path"])
        if call.name == "activate_skill" and isinstance(args.get("name"), str):
            skill = self.skills.get(args["name"])
            if skill is None:
                return True, f"Unknown skill: {args['name']}", {"error": "unknown_skill"}
            body = _read_text(skill.path)
            activated = {"type": "skill_activated", "skill": skill.name, "via": "activate_skill", "path": str(skill.path)}
            return False, f"Base directory for this skill: {skill.path.parent}\n\n{body}", {"_activated": [activated]}
        if call.name in {t["name"] for t in TOOLS}:
            return True, f"invalid arguments for {call.name}: {json.dumps(args, sort_keys=True)[:500]}", {"error": "invalid_arguments"}
        return True, f"No such tool available: {call.name}", {"error": "tool_not_registered"}

    def _shell(self, command: str) -> tuple[bool, str, dict[str, Any]]:
        try:
            proc = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=self.cwd,
                env=self.child_env,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=self.shell_timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return True, f"command timed out after {self.shell_timeout:g}s", {"exit_code": None}
        except OSError as exc:
            return True, f"cannot run /bin/sh: {exc}", {"exit_code": None}
        text = proc.stdout.decode("utf-8", errors="replace")
        if proc.stderr:
            text += ("\n" if text and not text.endswith("\n") else "") + proc.stderr.decode("utf-8", errors="replace")
        if len(text) > MAX_TOOL_OUTPUT:
            text = text[:MAX_TOOL_OUTPUT] + f"\n[output truncated at {MAX_TOOL_OUTPUT} characters]"
        return proc.returncode != 0, f"exit code: {proc.returncode}\n{text}", {"exit_code": proc.returncode}

    def _read(self, path: str) -> tuple[bool, str, dict[str, Any]]:
        target = (self.cwd / path) if not os.path.isabs(path) else Path(path)
        try:
            data = target.read_bytes()[:MAX_READ]
        except OSError as exc:
            return True, f"cannot read {path}: {exc.strerror}", {}
        resolved = os.path.realpath(target)
        activated = [
            {"type": "skill_activated", "skill": s.name, "via": "read_file", "path": str(s.path)}
            for s in self.skills.values()
            if os.path.realpath(s.path) == resolved
        ]
        return False, data.decode("utf-8", errors="replace"), {"path": resolved, "_activated": activated}

    # -- loop ---------------------------------------------------------------------------
    def run(self, prompt: str, max_turns: int) -> int:
        entries = "\n".join(f"- {s.name}: {s.description} (file: {s.path})" for s in sorted(self.skills.values(), key=lambda s: s.name))
        system = SYSTEM.format(cwd=self.cwd, skills=SKILLS_BLOCK.format(entries=entries) if self.skills else "")
        self.history = [{"role": "system", "text": system}, {"role": "user", "text": prompt}]
        for turn in range(1, max_turns + 1):
            try:
                reply = self.model.complete(self.history, TOOLS)
            except ModelError as exc:
                self.emit({"type": "error", "kind": "model_error", "message": str(exc)})
                self.emit({"type": "result", "status": "error", "final": "", "turns": turn - 1})
                return 1
            self.emit(
                {
                    "type": "model_response",
                    "turn": turn,
                    "text": reply.text,
                    "tool_calls": [{"id": c.id, "name": c.name, "input": c.input} for c in reply.calls],
                    "usage": {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]},
                }
            )
            if reply.text:
                self.emit({"type": "message", "role": "assistant", "text": reply.text})
            self.history.append({"role": "assistant", "text": reply.text, "calls": reply.calls})
            if not reply.calls:
                self.emit({"type": "result", "status": "completed", "final": reply.text, "turns": turn})
                return 0
            for call in reply.calls:
                self.emit({"type": "tool_call", "id": call.id, "tool": call.name, "input": call.input})
                is_error, output, extra = self.execute(call)
                activations = extra.pop("_activated", [])
                self.emit(dict(extra, type="tool_result", id=call.id, is_error=is_error, output=output))
                for line in activations:  # after the result, as the CLIs report it
                    self.emit(line)
                self.history.append({"role": "tool", "id": call.id, "name": call.name, "output": output})
        self.emit({"type": "result", "status": "max_turns", "final": "", "turns": max_turns})
        return 0


def _read_text(path: Path) -> str:
    return path.read_bytes()[:MAX_READ].decode("utf-8", errors="replace")


def discover_skills(roots: list[Path]) -> tuple[dict[str, Skill], list[str]]:
    """Skills under the roots (first root wins a name clash) and the problems found."""
    found: dict[str, Skill] = {}
    problems: list[str] = []
    for root in roots:
        if not root.is_dir():
            continue
        for skill_md in sorted(root.glob("*/SKILL.md")):
            try:
                meta = frontmatter(strict.read_text(skill_md, max_bytes=MAX_READ), skill_md)
            except InputError as exc:
                problems.append(str(exc))
                continue
            name = meta.get("name") if isinstance(meta.get("name"), str) else skill_md.parent.name
            desc = meta.get("description") if isinstance(meta.get("description"), str) else ""
            found.setdefault(name, Skill(name, " ".join(desc.split()), skill_md.resolve()))
    return found, problems


def frontmatter(text: str, source: object) -> dict[str, Any]:
    if not text.startswith("---\n"):
        raise InputError("no YAML frontmatter", source=source)
    end = text.find("\n---", 4)
    if end < 0:
        raise InputError("unterminated YAML frontmatter", source=source)
    meta = strict.loads_yaml(text[4:end], source)
    if not isinstance(meta, dict):
        raise InputError("frontmatter is not a mapping", source=source)
    return meta


# -- backends ----------------------------------------------------------------------------


class ScriptModel:
    """Replays a model script; the turn is the number of assistant entries so far (stateless)."""

    def __init__(self, script: ms.ModelScript):
        self.script = script

    def complete(self, history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        turn = sum(1 for h in history if h["role"] == "assistant")
        step = self.script.turn(turn)
        wait = self.script.delay(turn)
        if wait > 0:  # the scripted model's think time (script `latency:` / a turn's `delay:`)
            time.sleep(wait)
        usage = (self.script.usage["input_tokens"], self.script.usage["output_tokens"])
        if "final" in step:
            return Reply(step["final"], [], usage)
        offered = {t["name"]: t["parameters"] for t in tools}
        text = "\n".join(h.get("text", "") for h in history)
        calls = [ms.translate(c, "openai", offered, text, ms.call_id(turn, i, "call_")) for i, c in enumerate(step["tools"])]
        return Reply(step.get("say", ""), calls, usage)


class HttpModel:
    """Non-streaming Chat Completions or Responses requests to an OpenAI-style endpoint."""

    def __init__(self, api: str, base_url: str, model: str, api_key: str | None, timeout: float = 600.0):
        self.api, self.base_url, self.model, self.api_key, self.timeout = api, base_url.rstrip("/"), model, api_key, timeout

    def complete(self, history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        if self.api == "chat":
            body = {"model": self.model, "messages": _chat_messages(history), "tools": [{"type": "function", "function": t} for t in tools]}
            data = self._post("/chat/completions", body)
            return _parse_chat(data)
        instructions = "\n".join(h["text"] for h in history if h["role"] == "system")
        body = {
            "model": self.model,
            "instructions": instructions,
            "input": _responses_input(history),
            "tools": [dict(t, type="function") for t in tools],
            "stream": False,
            "store": False,
        }
        return _parse_responses(self._post("/responses", body))

    def _post(self, route: str, body: dict[str, Any]) -> Any:
        import urllib.error  # here: the scripted backend (every benchmark and replay run) never pays for http.client
        import urllib.request

        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.base_url + route, data=json.dumps(body).encode(), headers=headers, method="POST")  # noqa: S310 - the configured endpoint
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            raise ModelError(f"HTTP {exc.code} from {route}: {exc.read()[:300]!r}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise ModelError(f"cannot reach {self.base_url}{route}: {exc}") from None
        try:
            return json.loads(payload)
        except ValueError:
            raise ModelError(f"{route} answered non-JSON: {payload[:200]!r}") from None


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        return {"_invalid_json": raw}
    return value if isinstance(value, dict) else {"_invalid_json": raw}


def _chat_messages(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for h in history:
        if h["role"] in ("system", "user"):
            out.append({"role": h["role"], "content": h["text"]})
        elif h["role"] == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": h["text"] or None}
            if h["calls"]:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.input)}} for c in h["calls"]
                ]
            out.append(msg)
        else:
            out.append({"role": "tool", "tool_call_id": h["id"], "content": h["output"]})
    return out


def _responses_input(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for h in history:
        if h["role"] == "user":
            out.append({"role": "user", "content": [{"type": "input_text", "text": h["text"]}]})
        elif h["role"] == "assistant":
            if h["text"]:
                out.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": h["text"]}]})
            for c in h["calls"]:
                out.append({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": json.dumps(c.input)})
        elif h["role"] == "tool":
            out.append({"type": "function_call_output", "call_id": h["id"], "output": h["output"]})
    return out


def _parse_chat(data: Any) -> Reply:
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelError(f"chat completion without choices[0].message: {str(data)[:300]}") from None
    calls = []
    for i, tc in enumerate(message.get("tool_calls") or []):
        fn = tc.get("function") or {}
        calls.append(ms.Call(str(tc.get("id") or f"call_{i}"), str(fn.get("name", "")), _args(fn.get("arguments"))))
    usage = data.get("usage") or {}
    return Reply(message.get("content") or "", calls, (usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0), data)


def _parse_responses(data: Any) -> Reply:
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        raise ModelError(f"response without an output list: {str(data)[:300]}")
    texts, calls = [], []
    for item in data["output"]:
        if item.get("type") == "message":
            texts += [c.get("text", "") for c in item.get("content") or [] if c.get("type") == "output_text"]
        elif item.get("type") == "function_call":
            calls.append(ms.Call(str(item.get("call_id")), str(item.get("name", "")), _args(item.get("arguments"))))
    usage = data.get("usage") or {}
    return Reply("".join(texts), calls, (usage.get("input_tokens") or 0, usage.get("output_tokens") or 0), data)


# -- entry point -------------------------------------------------------------------------


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    p = argparse.ArgumentParser(prog="skill-eval-agent-loop", description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["chat", "responses", "script"], required=True)
    p.add_argument("--base-url", help="OpenAI-style base URL including /v1 (chat/responses)")
    p.add_argument("--model", default="scripted")
    p.add_argument("--script", type=Path, help="model script (script backend)")
    p.add_argument("--api-key-env", default=DEFAULT_KEY_VAR, help="variable holding the API key (never on argv)")
    p.add_argument("--max-turns", type=int, default=40)
    p.add_argument("--skills-root", action="append", type=Path, default=[])
    p.add_argument("--shell-timeout", type=float, default=600.0)
    p.add_argument("prompt")
    args = p.parse_args(argv)
    out = out or sys.stdout
    cwd = Path.cwd()
    child_env = {k: v for k, v in os.environ.items() if k != args.api_key_env}
    skills, problems = discover_skills([r if r.is_absolute() else cwd / r for r in args.skills_root])
    if args.backend == "script":
        if not args.script:
            p.error("--script is required with --backend script")
        try:
            model: Any = ScriptModel(ms.load_script(args.script))
        except InputError as exc:
            print(f"skill-eval-agent-loop: {exc}", file=sys.stderr)
            return 2
        model_id = model.script.model_id
    else:
        if not args.base_url:
            p.error("--base-url is required with --backend chat|responses")
        model = HttpModel(args.backend, args.base_url, args.model, os.environ.get(args.api_key_env))
        model_id = args.model
    agent = Agent(model=model, cwd=cwd, skills=skills, out=out, child_env=child_env, shell_timeout=args.shell_timeout)
    agent.emit(
        {
            "type": "start",
            "backend": args.backend,
            "model": model_id,
            "cwd": str(cwd),
            "skill_roots": [str(r if r.is_absolute() else cwd / r) for r in args.skills_root],
            "skills": [{"name": s.name, "path": str(s.path)} for s in skills.values()],
            "tools": [t["name"] for t in TOOLS],
        }
    )
    for problem in problems:
        agent.emit({"type": "error", "kind": "skill_not_loaded", "message": problem})
    return agent.run(args.prompt, args.max_turns)


if __name__ == "__main__":  # pragma: no cover - launched through the adapters' argv
    sys.exit(main())
