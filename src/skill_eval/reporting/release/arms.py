"""`release stage --run`: which arms a release records, recorded once by the harness.

Required arms: the candidate (`skill-agent`) and the `baseline` (no skill offered; the lift
gate's control) for every ready case, plus `released:<ref>` for every case whose skill was
published at the ref, each once (k = 1) with the run id `release-<session>`. The recording
itself (one fresh sandbox per run through the ordinary runner, bundles moved whole into
`<out>/<session>/raw/`) is harness.runner.session.record_once; nothing here launches an agent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skill_eval.checks.surface import find_subject
from skill_eval.content.config import Config
from skill_eval.core import seal
from skill_eval.core.errors import ConfigError
from skill_eval.harness.runner import plan
from skill_eval.harness.runner.execute import RunOptions
from skill_eval.harness.runner.session import record_once
from skill_eval.reporting.release import RAW_DIR
from skill_eval.reporting.release import snapshot as snap

IN_PROCESS = ("scripted", "openai-compatible")  # adapters with no agent executable to bind


def _options(cfg: Config, args: argparse.Namespace) -> RunOptions:
    if args.model_server and not args.model_server.startswith("scripted:"):
        raise ConfigError(f"--model-server {args.model_server!r}: only scripted:PATH is supported")
    return RunOptions(
        adapter=args.agent or cfg.agent.adapter, model=args.model or cfg.agent.model, model_server=args.model_server,
        base_url=args.base_url, binary=args.agent_binary, max_turns=cfg.agent.max_turns, timeout=cfg.agent.timeout_seconds,
        max_cost_usd=cfg.agent.max_cost_usd, real_subject=find_subject(cfg),
        signing_key=seal.signing_key(repo=cfg.root),  # a release counts signed evidence only (docs/SIGNING.md)
    )


def plan_items(cfg: Config, session: str, released_ref: str | None) -> list[plan.RunItem]:
    run_id = f"release-{session}"
    candidate = plan.build(cfg, suite="full", arm=snap.CANDIDATE_ARM, k=1, run_id=run_id, include_trigger=False)
    items = candidate + plan.build(cfg, suite="full", arm=snap.BASELINE_ARM, k=1, run_id=run_id, include_trigger=False)
    if released_ref:
        skills = snap.released_skills(cfg, released_ref, sorted({i.skill for i in candidate}))["skills"]
        ids = [i.item_id for i in candidate if i.skill in skills]
        if ids:
            items += plan.build(cfg, suite="full", ids=ids, arm=snap.released_arm(released_ref), k=1, run_id=run_id,
                                include_trigger=False)
    return items


def record_session(cfg: Config, *, out_dir: Path, session: str, released_ref: str | None, args: argparse.Namespace) -> list[str]:
    """Record the session's arms; returns one line per run that did not complete (they stay as incomplete evidence)."""
    name = args.agent or cfg.agent.adapter
    if name not in IN_PROCESS and not args.agent_binary:
        raise ConfigError(f"a release binds the {name} executable by digest: pass --agent-binary PATH",
                          field="--agent-binary", fix="name the exact CLI to run (a same-name PATH lookup is never used)")
    return record_once(cfg, plan_items(cfg, session, released_ref), _options(cfg, args), raw=out_dir / session / RAW_DIR,
                       jobs=args.jobs, progress=None if args.json else sys.stderr)
