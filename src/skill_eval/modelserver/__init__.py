"""Scripted model servers: the real agent CLIs run end to end offline against them.

`start_server(kind, script)` starts one on 127.0.0.1 (ephemeral port by default) in a
background thread and returns a ServerHandle (`.url`, `.requests`, `.stop()`, context
manager). kinds: `anthropic` (Claude Code), `openai-responses` (Codex; also serves Chat
Completions for the built-in openai-compatible loop), `gemini` (Gemini CLI).
A bundle recorded against one says `model: scripted:<sha256 of the script file>`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skill_eval.errors import SkillEvalError
from skill_eval.modelserver.anthropic import AnthropicProvider
from skill_eval.modelserver.common import Provider, RecordedRequest, ServerHandle
from skill_eval.modelserver.gemini import GeminiProvider
from skill_eval.modelserver.openai import OpenAIProvider
from skill_eval.modelserver.script import ModelScript, load_script, parse_script

PROVIDERS: dict[str, type[Provider]] = {
    "anthropic": AnthropicProvider,
    "openai-responses": OpenAIProvider,
    "gemini": GeminiProvider,
}

# which server kind each agent adapter talks to
KIND_FOR_ADAPTER = {"claude-code": "anthropic", "codex": "openai-responses", "gemini-cli": "gemini", "openai-compatible": "openai-responses"}


def start_server(
    kind: str, script: Path | str | ModelScript, *, host: str = "127.0.0.1", port: int = 0, log: Any = None
) -> ServerHandle:
    """Start a scripted server. `log`: optional text stream receiving one JSON line per request."""
    if kind not in PROVIDERS:
        raise SkillEvalError(f"unknown model server kind {kind!r}", fix=f"use one of {', '.join(sorted(PROVIDERS))}")
    loaded = script if isinstance(script, ModelScript) else load_script(Path(script))
    return ServerHandle(PROVIDERS[kind](loaded), host=host, port=port, log=log)


__all__ = ["PROVIDERS", "KIND_FOR_ADAPTER", "ModelScript", "RecordedRequest", "ServerHandle", "load_script", "parse_script", "start_server"]
