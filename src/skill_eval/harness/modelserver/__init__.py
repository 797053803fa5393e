"""Scripted model servers: the real agent CLIs run end to end offline against them.

`start_server(kind, script)` starts one on 127.0.0.1 (ephemeral port by default) in a
background thread and returns a ServerHandle (`.url`, `.requests`, `.stop()`, context
manager). kinds: `anthropic` (Claude Code), `openai-responses` (Codex; also serves Chat
Completions for the built-in openai-compatible loop), `gemini` (Gemini CLI).
A bundle recorded against one says `model: scripted:<sha256 of the script file>`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_eval.core.errors import SkillEvalError
from skill_eval.harness.modelserver.script import ModelScript, load_script, parse_script

if TYPE_CHECKING:
    from skill_eval.harness.modelserver.common import Provider, RecordedRequest, ServerHandle

# kind -> (module, class); imported on first use so the scripted adapter's loop, which only
# needs script.py, does not pay for http.server at every run
PROVIDERS: dict[str, tuple[str, str]] = {
    "anthropic": ("anthropic", "AnthropicProvider"),
    "openai-responses": ("openai", "OpenAIProvider"),
    "gemini": ("gemini", "GeminiProvider"),
}

# which server kind each agent adapter talks to
KIND_FOR_ADAPTER = {"claude-code": "anthropic", "codex": "openai-responses", "gemini-cli": "gemini", "openai-compatible": "openai-responses"}


def provider_class(kind: str) -> type[Provider]:
    if kind not in PROVIDERS:
        raise SkillEvalError(f"unknown model server kind {kind!r}", fix=f"use one of {', '.join(sorted(PROVIDERS))}")
    module, cls = PROVIDERS[kind]
    found: type[Provider] = getattr(importlib.import_module(f"skill_eval.harness.modelserver.{module}"), cls)
    return found


def start_server(
    kind: str, script: Path | str | ModelScript, *, host: str = "127.0.0.1", port: int = 0, log: Any = None,
    latency: float | None = None,
) -> ServerHandle:
    """Start a scripted server. `log`: optional text stream receiving one JSON line per request;
    `latency`: seconds per scripted turn, overriding the script's `latency:` (a turn's `delay:` still wins)."""
    import dataclasses

    from skill_eval.harness.modelserver.common import ServerHandle

    provider = provider_class(kind)
    loaded = script if isinstance(script, ModelScript) else load_script(Path(script))
    if latency is not None:
        loaded = dataclasses.replace(loaded, latency=float(latency))
    return ServerHandle(provider(loaded), host=host, port=port, log=log)


def __getattr__(name: str) -> Any:
    if name in ("Provider", "RecordedRequest", "ServerHandle"):
        return getattr(importlib.import_module("skill_eval.harness.modelserver.common"), name)
    raise AttributeError(name)


__all__ = [
    "KIND_FOR_ADAPTER",
    "PROVIDERS",
    "ModelScript",
    "Provider",
    "RecordedRequest",
    "ServerHandle",
    "load_script",
    "parse_script",
    "provider_class",
    "start_server",
]
