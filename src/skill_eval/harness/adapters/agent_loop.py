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

Real models misbehave (issue 12: a 135M model over llama.cpp), so the loop never trusts a
reply's shape: a reply it cannot read (HTTP error, non-JSON body, no choices, wrong types)
ends the run with an `error` line; bad tool arguments, unknown tools and a tool call written
as prose are reported, never executed; an empty reply is an error, not an answer. Budgets:
`--max-tokens` caps one reply (sent to the endpoint), `--max-total-tokens` caps the run;
a reply cut at its cap (`finish_reason: length`) or a run over its total ends with result
status `budget`, which the adapter normalizes to stop reason `budget` (outcome budget_stop).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from skill_eval.core import strict
from skill_eval.core.errors import InputError
from skill_eval.harness.modelserver import script as ms

if TYPE_CHECKING:
    import urllib.error

MAX_TOOL_OUTPUT = 64 * 1024
MAX_READ = 256 * 1024
MAX_REPLY_BYTES = 16 * 1024 * 1024  # one model reply; a larger body is a broken server, not an answer
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
    truncated: bool = False  # the endpoint stopped the reply at its token cap (finish_reason length)
    estimate: int | None = None  # tokens charged to the budget when the endpoint reported no usage

    @property
    def spent(self) -> int:
        return self.estimate if self.estimate is not None else self.usage[0] + self.usage[1]


@dataclass(frozen=True)
class Budget:
    """Token caps for one run: per reply (sent to the endpoint) and in total (input + output)."""

    max_tokens: int | None = None
    max_total_tokens: int | None = None

    def exceeded(self, spent: int) -> bool:
        return self.max_total_tokens is not None and spent >= self.max_total_tokens

    def over_reply(self, output_tokens: int) -> bool:
        return self.max_tokens is not None and output_tokens > self.max_tokens


# A tool call written into the text instead of the structured `tool_calls` field: the tags
# Hermes/Qwen-style chat templates use, or a bare JSON object naming one of our tools.
_PROSE_CALL = re.compile(r"<tool_call>|<function[=>]|\{\s*\"(?:name|function)\"\s*:\s*\"(?:shell|read_file|activate_skill)\"")


@dataclass
class Agent:
    model: Any
    cwd: Path
    skills: dict[str, Skill]
    out: TextIO
    child_env: dict[str, str]
    shell_timeout: float = 600.0
    budget: Budget = field(default_factory=Budget)
    history: list[dict[str, Any]] = field(default_factory=list)

    def emit(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, ensure_ascii=False)
        # a lone surrogate (half an emoji escaped by a small model) cannot be written as UTF-8:
        # replace it rather than die mid-stream
        self.out.write(line.encode("utf-8", "replace").decode("utf-8") + "\n")
        self.out.flush()

    # -- tools --------------------------------------------------------------------------
    def execute(self, call: ms.Call) -> tuple[bool, str, dict[str, Any]]:
        """Run one tool call: (is_error, output, extra fields for the raw tool_result line)."""
        args = call.input
        if any(isinstance(v, str) and "\x00" in v for v in args.values()):  # no OS call takes a NUL
            return True, f"invalid arguments for {call.name}: a NUL character", {"error": "invalid_arguments"}
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
        spent = 0
        for turn in range(1, max_turns + 1):
            if self.budget.exceeded(spent):
                return self._end("budget", turn - 1, reason=f"{spent} tokens spent, budget {self.budget.max_total_tokens}")
            try:
                reply = self.model.complete(self.history, TOOLS)
            except ModelError as exc:
                self.emit({"type": "error", "kind": "model_error", "message": str(exc)})
                return self._end("error", turn - 1, code=1)
            spent += reply.spent
            self._record_reply(turn, reply)
            if reply.truncated or self.budget.over_reply(reply.usage[1]):  # cut, or a server that ignored the cap
                return self._end("budget", turn, reason=f"turn {turn} reply reached max_tokens {self.budget.max_tokens}")
            if not reply.calls:
                return self._answer(turn, reply.text)
            for call in reply.calls:
                self._call(call)
        return self._end("max_turns", max_turns)

    def _record_reply(self, turn: int, reply: Reply) -> None:
        self.emit(
            {
                "type": "model_response",
                "turn": turn,
                "text": reply.text,
                "tool_calls": [{"id": c.id, "name": c.name, "input": c.input} for c in reply.calls],
                "usage": {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]},
                **({"truncated": True} if reply.truncated else {}),
            }
        )
        if reply.text:
            self.emit({"type": "message", "role": "assistant", "text": reply.text})
        self.history.append({"role": "assistant", "text": reply.text, "calls": reply.calls})

    def _answer(self, turn: int, text: str) -> int:
        """A reply without tool calls is the final answer — unless it is empty or a call in prose."""
        if not text.strip():
            self.emit({"type": "error", "kind": "model_error", "message": f"turn {turn}: empty reply (no text, no tool calls)"})
            return self._end("error", turn, code=1)
        if _PROSE_CALL.search(text):
            self.emit({"type": "error", "kind": "invalid_tool_call",
                       "message": f"turn {turn}: a tool call written as text, not in tool_calls (not executed)"})
        return self._end("completed", turn, final=text)

    def _call(self, call: ms.Call) -> None:
        self.emit({"type": "tool_call", "id": call.id, "tool": call.name, "input": call.input})
        is_error, output, extra = self.execute(call)
        activations = extra.pop("_activated", [])
        self.emit(dict(extra, type="tool_result", id=call.id, is_error=is_error, output=output))
        for line in activations:  # after the result, as the CLIs report it
            self.emit(line)
        self.history.append({"role": "tool", "id": call.id, "name": call.name, "output": output})

    def _end(self, status: str, turns: int, *, final: str = "", reason: str | None = None, code: int = 0) -> int:
        self.emit({"type": "result", "status": status, "final": final, "turns": turns, **({"reason": reason} if reason else {})})
        return code


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
            name = raw_name if isinstance(raw_name := meta.get("name"), str) else skill_md.parent.name
            desc = raw_desc if isinstance(raw_desc := meta.get("description"), str) else ""
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

    def __init__(self, api: str, base_url: str, model: str, api_key: str | None, timeout: float = 600.0,
                 max_tokens: int | None = None, temperature: float | None = None, seed: int | None = None):
        self.api, self.base_url, self.model, self.api_key, self.timeout = api, base_url.rstrip("/"), model, api_key, timeout
        self.max_tokens = max_tokens
        # sampling: sent only when set, so an endpoint's own default stays in force otherwise
        self.sampling = {k: v for k, v in (("temperature", temperature), ("seed", seed)) if v is not None}

    def complete(self, history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        if self.api == "chat":
            # tool_choice "auto" is the OpenAI default, but llama-cpp-python's chatml-function-calling
            # handler drops the tools from the prompt unless it is sent: the model could never call one
            body: dict[str, Any] = {"model": self.model, "messages": _chat_messages(history), "tools": [{"type": "function", "function": t} for t in tools],
                    "tool_choice": "auto"}
            if self.max_tokens is not None:
                body["max_tokens"] = self.max_tokens
            body.update(self.sampling)
            return _parse_chat(self._post("/chat/completions", body))
        instructions = "\n".join(h["text"] for h in history if h["role"] == "system")
        body = {
            "model": self.model,
            "instructions": instructions,
            "input": _responses_input(history),
            "tools": [dict(t, type="function") for t in tools],
            "stream": False,
            "store": False,
        }
        if self.max_tokens is not None:
            body["max_output_tokens"] = self.max_tokens
        if "temperature" in self.sampling:  # the Responses API has no seed
            body["temperature"] = self.sampling["temperature"]
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
                payload = resp.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise ModelError(f"HTTP {exc.code} from {route}: {_peek(exc)!r}") from None
        except (urllib.error.URLError, OSError) as exc:  # includes a timeout: never wait forever
            raise ModelError(f"cannot reach {self.base_url}{route}: {exc}") from None
        if len(payload) > MAX_REPLY_BYTES:
            raise ModelError(f"{route} answered more than {MAX_REPLY_BYTES} bytes")
        try:
            return json.loads(payload)
        except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
            raise ModelError(f"{route} answered non-JSON: {payload[:200]!r}") from None


def _peek(exc: urllib.error.HTTPError) -> bytes:
    try:
        return exc.read()[:300]
    except OSError:
        return b""


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
            # "" not null: llama-cpp-python 0.3.36 rejects an assistant message whose content is null (HTTP 500),
            # though it answers with one itself
            msg: dict[str, Any] = {"role": "assistant", "content": h["text"] or ""}
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


def _dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelError(f"{what} is not a JSON object: {str(value)[:300]}")
    return value


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ModelError(f"{what} is not a string: {str(value)[:300]}")
    return value


def _usage(usage: Any, keys: tuple[str, str], reply_text: str) -> tuple[tuple[int, int], int | None]:
    """Reported token counts (0 when absent), and an estimate for the budget when the counts
    are absent or not integers (4 characters a token, the reply only): a server that reports
    no usage must still not slip past the run's token budget, but usage.json keeps only
    what was reported."""
    usage = usage if isinstance(usage, dict) else {}
    counts = [usage.get(k) for k in keys]
    if all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
        return (counts[0], counts[1]), None
    return (0, 0), max(1, len(reply_text) // 4)


def _parse_chat(data: Any) -> Reply:
    data = _dict(data, "chat completion")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ModelError(f"chat completion without choices: {str(data)[:300]}")
    choice = _dict(choices[0], "choices[0]")
    message = _dict(choice.get("message"), "choices[0].message")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ModelError(f"tool_calls is not a list: {str(raw_calls)[:300]}")
    calls = []
    for i, tc in enumerate(raw_calls):
        fn = _dict(_dict(tc, f"tool_calls[{i}]").get("function"), f"tool_calls[{i}].function")
        calls.append(ms.Call(str(tc.get("id") or f"call_{i}"), str(fn.get("name", "")), _args(fn.get("arguments"))))
    text = _text(message.get("content"), "message content")
    usage, estimate = _usage(data.get("usage"), ("prompt_tokens", "completion_tokens"), text + json.dumps(raw_calls))
    return Reply(text, calls, usage, data, truncated=choice.get("finish_reason") == "length", estimate=estimate)


def _parse_responses(data: Any) -> Reply:
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        raise ModelError(f"response without an output list: {str(data)[:300]}")
    texts, calls = [], []
    for i, item in enumerate(data["output"]):
        item = _dict(item, f"output[{i}]")
        if item.get("type") == "message":
            content = item.get("content") or []
            texts += [_text(c.get("text"), "output_text") for c in content if isinstance(c, dict) and c.get("type") == "output_text"]
        elif item.get("type") == "function_call":
            calls.append(ms.Call(str(item.get("call_id")), str(item.get("name", "")), _args(item.get("arguments"))))
    details = data.get("incomplete_details")
    truncated = data.get("status") == "incomplete" and isinstance(details, dict) and details.get("reason") == "max_output_tokens"
    text = "".join(texts)
    usage, estimate = _usage(data.get("usage"), ("input_tokens", "output_tokens"), text)
    return Reply(text, calls, usage, data, truncated=truncated, estimate=estimate)


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
    p.add_argument("--request-timeout", type=float, default=600.0, help="seconds to wait for one model reply")
    p.add_argument("--max-tokens", type=int, default=None, help="cap on one model reply (sent as max_tokens)")
    p.add_argument("--max-total-tokens", type=int, default=None, help="token budget of the whole run (input + output)")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature sent with every request")
    p.add_argument("--seed", type=int, default=None, help="sampling seed sent with every request (servers that honour it)")
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
        model = HttpModel(args.backend, args.base_url, args.model, os.environ.get(args.api_key_env),
                          timeout=args.request_timeout, max_tokens=args.max_tokens, temperature=args.temperature,
                          seed=args.seed)
        model_id = args.model
    agent = Agent(model=model, cwd=cwd, skills=skills, out=out, child_env=child_env, shell_timeout=args.shell_timeout,
                  budget=Budget(args.max_tokens, args.max_total_tokens))
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
