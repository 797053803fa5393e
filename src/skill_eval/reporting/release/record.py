"""`release stage --run`: record every required arm exactly once into the session's raw/ tree.

Required arms: the candidate (`skill-agent`) and the `baseline` (no skill offered; the lift
gate's control) for every ready case, plus `released:<ref>` for every case whose skill was
published at the ref. Each runs once (k = 1), in its own fresh
sandbox, through the ordinary runner (so the same isolation, shim, redaction and sealing
apply); no run is retried. The runner seals bundles under the evidence tree with the run id
`release-<session>`; they are then moved, whole, into `<out>/<session>/raw/` so a release
session never mixes with the committed evidence the pr gate checks.

An absent credential is not an error here: no arm is recorded, and the stage says incomplete.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from skill_eval.checks.surface import find_subject
from skill_eval.content import freshness
from skill_eval.content.config import Config
from skill_eval.core import seal
from skill_eval.core.errors import ConfigError, InputError
from skill_eval.harness.runner import plan
from skill_eval.harness.runner.execute import RunOptions, preflight, run_item
from skill_eval.harness.runner.pool import run_all
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
    """Run the arms; returns one line per run that did not complete (they stay as incomplete evidence)."""
    raw = out_dir / session / RAW_DIR
    if raw.exists():
        raise InputError("this session already has recorded runs; each arm runs exactly once", source=raw,
                         fix="choose a new --session")
    name = args.agent or cfg.agent.adapter
    if name not in IN_PROCESS and not args.agent_binary:
        raise ConfigError(f"a release binds the {name} executable by digest: pass --agent-binary PATH",
                          field="--agent-binary", fix="name the exact CLI to run (a same-name PATH lookup is never used)")
    opts = _options(cfg, args)
    items = plan_items(cfg, session, released_ref)
    homes = sorted({plan.bundle_path(cfg, i).parent.parent for i in items})
    taken = [h for h in homes if h.exists()]
    if taken:
        raise InputError("the evidence tree already holds this session's run id", source=taken[0], fix="choose a new --session")
    from skill_eval.harness.adapters import get_adapter

    adapter = get_adapter(opts.adapter, **opts.adapter_options)
    cv = adapter.credential_vars  # a method on older adapters, an attribute on newer ones
    creds = tuple(cv() if callable(cv) else cv or ())
    if not opts.scripted and creds and not any(os.environ.get(v) for v in creds):
        print(f"release: no credential for {adapter.name} (none of {', '.join(creds)} is set): "
              "no arm recorded; the stage will be incomplete", file=sys.stderr)
        raw.mkdir(parents=True)
        return [f"absent credential for {adapter.name}"]
    adapter, info = preflight(cfg, opts)
    cur = freshness.current(cfg)
    outcomes = run_all(items, lambda item: run_item(cfg, item, opts, cur, adapter, info), jobs=args.jobs,
                       progress=None if args.json else sys.stderr)
    raw.mkdir(parents=True)
    evidence = plan.evidence_root(cfg)
    for home in homes:  # <evidence>/<skill>/<arm>/<run-id>: move whole, sealed bundles only
        if home.exists():
            dest = raw / home.relative_to(evidence)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(home), str(dest))
            for partial in dest.rglob(f"{plan.TMP_PREFIX}*"):
                shutil.rmtree(partial, ignore_errors=True)
    return [f"{o.item.label}: {o.status} ({o.reason})" for o in outcomes if o.status != "complete"]
