"""scripted: deterministic runs with no model at all, for tests and throughput benchmarks.

The built-in loop (agent_loop.py) replays a model script in-process: each turn's shell
commands really run in the sandbox (through the recording shim on PATH, like an agent's
would), `skill` calls go through the loop's activate_skill tool, and the last turn is
the final answer. Same raw stream and parser as openai-compatible. A bundle recorded this
way names the script: `model: scripted:<sha256 of the script file>` (see `model_id`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from skill_eval.harness.adapters import base
from skill_eval.harness.adapters.base import AdapterBase, LaunchContext, NormalizedRun
from skill_eval.harness.adapters.openai_compatible import loop_command, parse_loop_stream
from skill_eval.harness.modelserver.script import load_script


class ScriptedAdapter(AdapterBase):
    name = "scripted"
    tier = base.TIER_AGENT
    needs_binary = False
    model_server_kind = None  # replays ctx.script in its own loop: no server, no endpoint, no key

    def build_command(self, ctx: LaunchContext) -> list[str]:
        """`ctx.script` (or `ctx.model` given as a script path) is the model script to replay."""
        path = ctx.script or (Path(ctx.model) if ctx.model else None)
        if path is None:
            raise ValueError("the scripted adapter needs a model script (script=PATH)")
        backend = ["--backend", "script", "--script", str(path if Path(path).is_absolute() else Path(path).resolve())]
        return loop_command(backend, ctx, self.skill_dirs(ctx.home, ctx.workdir))

    @staticmethod
    def model_id(script: Path) -> str:
        """`scripted:<digest>` for meta.json (the script is validated on the way)."""
        return load_script(script).model_id

    def parse_stream(
        self,
        raw: bytes,
        skill_roots: Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None,
        installed_skills: Sequence[str] | None,
    ) -> NormalizedRun:
        return parse_loop_stream(raw, skill_roots, cwd=cwd, installed_skills=installed_skills, source="scripted stream")
