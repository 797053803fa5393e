"""Agent adapters: one module per agent, one interface (base.Adapter), looked up by name.

Like pre-commit's languages/: the runner never special-cases an agent; it asks the
adapter's capabilities (`needs_binary`, `model_server_kind`, `needs_endpoint`), hands it
one LaunchContext for argv, env, HOME config files and skill directories, launches, and
hands the captured stdout back to `parse`. Adapter source is part of the harness digest.
"""

from __future__ import annotations

import importlib

from skill_eval.core.errors import ConfigError
from skill_eval.harness.adapters._binary import BinaryInfo, binary_info
from skill_eval.harness.adapters.base import (
    TIER_AGENT,
    TIER_MANUAL,
    TIER_READS,
    Adapter,
    LaunchContext,
    LaunchSpec,
    NormalizedRun,
    is_loopback,
)

# adapter name -> (module, class)
ADAPTERS: dict[str, tuple[str, str]] = {
    "claude-code": ("claude_code", "ClaudeCodeAdapter"),
    "codex": ("codex", "CodexAdapter"),
    "gemini-cli": ("gemini_cli", "GeminiCliAdapter"),
    "openai-compatible": ("openai_compatible", "OpenAICompatibleAdapter"),
    "scripted": ("scripted", "ScriptedAdapter"),
}


def get_adapter(name: str, **options: str) -> Adapter:
    """A fresh adapter instance; an unknown name or option is a configuration error (exit 2).

    Options: codex `sandbox` ("bypass" | "workspace-write" | "read-only"),
    openai-compatible `api` ("chat" | "responses").
    """
    if name not in ADAPTERS:
        raise ConfigError(f"unknown agent adapter {name!r}", fix=f"use one of {', '.join(sorted(ADAPTERS))}")
    module, cls = ADAPTERS[name]
    try:
        adapter: Adapter = getattr(importlib.import_module(f"skill_eval.harness.adapters.{module}"), cls)(**options)
        return adapter
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad options {options!r} for agent adapter {name!r}: {exc}") from None


def adapter_names() -> list[str]:
    return sorted(ADAPTERS)


__all__ = [
    "ADAPTERS",
    "TIER_AGENT",
    "TIER_MANUAL",
    "TIER_READS",
    "Adapter",
    "BinaryInfo",
    "LaunchContext",
    "LaunchSpec",
    "NormalizedRun",
    "adapter_names",
    "binary_info",
    "get_adapter",
    "is_loopback",
]
