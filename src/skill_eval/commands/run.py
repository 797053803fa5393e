"""`skill-eval run`: record evidence bundles with a real (or scripted) agent.

Selects the suite (risk|full, optionally only what moved since --base, or explicit ids),
then for each (scenario|prompt, k) builds a fresh sandbox, installs the arm's skills where
the agent discovers them, runs the agent through its adapter with the recording shim first
on PATH, and seals one bundle under agent-evals/skills/evidence/. Resumable: finished
bundles are kept and skipped; an interrupted run leaves no partial bundle.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.checks.surface import find_subject
from skill_eval.commands._common import bounded_int, load_config, plural
from skill_eval.commands._options import add_agent_arguments, add_base_argument, agent_options, flag_or_config
from skill_eval.content import freshness, shards
from skill_eval.content.config import JOBS_MAX, K_MAX, Config
from skill_eval.content.selection import SUITES
from skill_eval.core.errors import EXIT_CHECK_FAILED, EXIT_OK, SkillEvalError
from skill_eval.core.output import emit
from skill_eval.harness.runner import isolation, lock, plan
from skill_eval.harness.runner.execute import RunOptions, preflight, run_item
from skill_eval.harness.runner.pool import run_all

DESCRIPTION = __doc__


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments that decide the plan (shared with `skill-eval plan`, which must plan alike)."""
    p.add_argument("ids", nargs="*", help="explicit scenario or prompt ids (default: the selected suite)")
    p.add_argument("--suite", choices=SUITES, default="risk")
    add_base_argument(p, help="only skills whose digests moved since this git ref")
    p.add_argument("--no-trigger", action="store_true", help="skip the trigger corpus")
    add_agent_arguments(p, "agent", "model", "model-server", help={
        "model-server": "replay scripted model turns from a file or a directory of <item-id>.yaml (trigger/<id>.yaml)"})
    p.add_argument("--arm", default="skill-agent", help="skill-agent | skill | docs | baseline | siblings | released:<ref>")
    p.add_argument("-k", type=bounded_int(1, K_MAX), default=None, help=f"repetitions per item, 1..{K_MAX} (default: evals.k)")
    p.add_argument("--run-id", default=None, help="run directory name (default: <agent>-<model>, stable so reruns resume)")
    p.add_argument("--aa", action="store_true",
                   help="record a second, independent run of the same arm for A/A calibration (run id suffixed -aa, "
                        "meta extra.aa); the evidence gate allows it and never counts it toward pass^k")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_plan_arguments(p)
    p.add_argument("--shard", type=_shard_arg, default=None, metavar="I/N",
                   help="record only shard I of N of the plan (a stable hash of each item's identity: the same "
                        "shards on every machine; docs/SHARDS.md); writes a shard manifest beside the bundles")
    add_agent_arguments(p, "base-url", "agent-binary")
    p.add_argument("-j", "--jobs", type=bounded_int(1, JOBS_MAX), default=1, help=f"parallel runs, 1..{JOBS_MAX}")
    add_agent_arguments(p, "max-turns", "timeout", "max-cost", "max-tokens", "max-total-tokens", "temperature", "seed",
                        "no-auth")
    p.add_argument("--retry-incomplete", action="store_true",
                   help="also re-run items whose bundle is sealed incomplete (default: keep them; they are evidence too)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    p.add_argument("--wait", action="store_true",
                   help="if another run is recording into this repository, wait for it instead of failing at once")


def run(args: argparse.Namespace) -> int:
    from skill_eval.core import seal

    if threading.current_thread() is threading.main_thread():
        # A runner started in the background (`cmd &`, some CI wrappers) inherits SIGINT ignored and
        # could then never be interrupted cleanly (agents killed, nothing half-sealed): restore it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    cfg = load_config(args)
    agent = flag_or_config(args.agent, cfg.agent.adapter)
    opts = RunOptions(**agent_options(args, cfg), aa=args.aa, real_subject=find_subject(cfg) if cfg.has_subject else None,
                      signing_key=seal.signing_key(repo=cfg.root))
    if opts.signing_key is None and not args.dry_run and not args.json:
        print(f"run: {seal.KEY_ENV} is not set: bundles are sealed UNSIGNED"
              + (' and evals.signatures = "require" will fail them' if cfg.signatures == "require" else "")
              + " (docs/SIGNING.md)", file=sys.stderr)
    if (args.temperature is not None or args.seed is not None) and (args.model_server or agent != "openai-compatible"):
        from skill_eval.core.errors import ConfigError

        raise ConfigError("--temperature/--seed apply to a real model behind --agent openai-compatible only",
                          fix="drop them (scripted turns and agent CLIs sample as they are configured)")
    if args.model_server and not args.model_server.startswith("scripted:"):
        from skill_eval.core.errors import ConfigError

        raise ConfigError(f"--model-server {args.model_server!r}: only scripted:PATH is supported")
    spec = PlanSpec.from_args(args, cfg)
    run_id = spec.run_id
    if args.dry_run:
        p = _plan(args, cfg, agent, spec)
        payload: dict[str, Any] = {"planned": len(p.states), "todo": [i.label for i in p.todo]}
        if p.shard is not None:
            payload["shard"] = {"shard": p.shard.label, "plan_digest": p.digest, "plan_items": p.whole,
                                "items": list(p.states)}
        emit(args, [p.header, *(f"  {i.label} ({p.states[i.label]})" for i in p.todo)], payload)
        return EXIT_OK
    say = None if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    with lock.hold(cfg.root, wait=args.wait, say=say):  # planned under the lock: a run waited for has recorded
        return _record(args, cfg, opts, run_id, _plan(args, cfg, agent, spec))


def _shard_arg(text: str) -> shards.Shard:
    try:
        return shards.parse(text)
    except SkillEvalError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


@dataclass(frozen=True)
class PlanSpec:
    """What decides a plan, resolved (the run id and k filled in): `run`, `plan` and the merge's
    re-planning (commands/evidence_merge.py, from a shard manifest's `plan`) build it alike."""

    suite: str
    base: str | None
    ids: tuple[str, ...]
    arm: str
    k: int
    trigger: bool
    run_id: str

    @classmethod
    def from_args(cls, args: argparse.Namespace, cfg: Config) -> PlanSpec:
        agent = flag_or_config(args.agent, cfg.agent.adapter)
        scripted = bool(args.model_server and args.model_server.startswith("scripted:"))
        model = "scripted" if scripted else flag_or_config(args.model, cfg.agent.model)
        run_id: str = args.run_id or plan.default_run_id(agent, model)
        if args.aa and not run_id.endswith("-aa"):  # the gate and the scorecard know A/A runs by this suffix
            run_id += "-aa"
        return cls(args.suite, args.base, tuple(args.ids or ()), args.arm, flag_or_config(args.k, cfg.k),
                   not args.no_trigger, run_id)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> PlanSpec:
        return cls(raw["suite"], raw["base"], tuple(raw["ids"]), raw["arm"], raw["k"], raw["trigger"], raw["run_id"])

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "base": self.base, "ids": list(self.ids), "arm": self.arm, "k": self.k,
                "trigger": self.trigger, "run_id": self.run_id}

    def build(self, cfg: Config) -> list[plan.RunItem]:
        return plan.build(cfg, suite=self.suite, base=self.base, ids=list(self.ids) or None, arm=self.arm, k=self.k,
                          run_id=self.run_id, include_trigger=self.trigger)


def plan_digest(spec: PlanSpec, items: list[plan.RunItem]) -> str:
    return shards.plan_digest([i.label for i in items], spec.run_id)


@dataclass(frozen=True)
class _Plan:
    cur: Any  # the current digests
    todo: list[plan.RunItem]  # the items to record
    stale: list[plan.RunItem]  # those among them replacing a stale, unreadable or incomplete bundle
    header: str
    states: dict[str, str]  # every planned item's state (of this shard, with --shard), by label
    spec: PlanSpec
    items: list[plan.RunItem]  # the planned items (of this shard, with --shard)
    whole: int  # items in the unsharded plan
    digest: str  # the unsharded plan's digest
    shard: shards.Shard | None


def _plan(args: argparse.Namespace, cfg: Config, agent: str, spec: PlanSpec) -> _Plan:
    every = spec.build(cfg)
    items = shards.select(every, args.shard, lambda i: i.label) if args.shard else every
    cur = freshness.current(cfg)
    states = {i.label: plan.existing_state(cfg, i, cur) for i in items}
    redo = {"missing", "stale", "unreadable"} | ({"incomplete"} if args.retry_incomplete else set())
    todo = [i for i in items if states[i.label] in redo]
    stale = [i for i in todo if states[i.label] in ("stale", "unreadable", "incomplete")]
    of = f" (shard {args.shard.label} of a {len(every)}-item plan)" if args.shard else ""
    header = (f"run: {len(items)} bundles planned{of} ({len(items) - len(todo)} already recorded"
              + (f", {len(stale)} stale/unreadable to replace" if stale else "") + f"), agent {agent}, run id {spec.run_id}")
    return _Plan(cur, todo, stale, header, states, spec, items, len(every), plan_digest(spec, every), args.shard)


def _write_manifest(cfg: Config, p: _Plan) -> Path:
    """The shard's manifest beside its bundles (never inside one: bundles are sealed): which shard of
    which plan this evidence tree holds, and the bundles it owns (commands/evidence_merge.py reads it)."""
    from skill_eval.core import fsio, strict

    assert p.shard is not None
    root = plan.evidence_root(cfg)
    body = shards.manifest(p.shard, p.digest, p.spec.to_json(), p.whole,
                           [(i.label, plan.bundle_path(cfg, i).relative_to(root).as_posix()) for i in p.items])
    rel = root.relative_to(cfg.root) / shards.manifest_name(p.shard, p.spec.run_id)
    return fsio.write_file(cfg.root, rel, strict.dumps_json(body))


def _record(args: argparse.Namespace, cfg: Config, opts: RunOptions, run_id: str, p: _Plan) -> int:
    """The recording itself, under the repository's run lock."""
    cur, todo, stale, header = p.cur, p.todo, p.stale, p.header
    adapter, info = preflight(cfg, opts)
    if p.shard is not None:
        _write_manifest(cfg, p)
    removed = plan.discard_partials(cfg)
    isolation.discard_stale()  # sandboxes of dead runs may hold unredacted output
    for item in stale:
        plan.retire(cfg, item)
    if not args.json:
        print(header + (f"; discarded {plural(len(removed), 'partial bundle')}" if removed else ""), file=sys.stderr)
    outcomes = run_all(todo, lambda item: run_item(cfg, item, opts, cur, adapter, info), jobs=args.jobs,
                       progress=None if args.json else sys.stderr)
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    failed = [o for o in outcomes if o.status != "complete"]
    evidence = plan.evidence_root(cfg).relative_to(cfg.root)
    lines = [f"  {o.status}: {o.item.label}: {o.reason}" for o in failed]
    lines.append(f"run: {', '.join(f'{v} {k}' for k, v in sorted(counts.items())) or 'nothing to do'} — "
                 f"next: `skill-eval evidence` to re-grade, then `git add {evidence}` and commit the new bundles")
    emit(args, lines, {"ok": not failed, "counts": counts, "run_id": run_id,
                       "outcomes": [{"item": o.item.label, "status": o.status, "reason": o.reason, "seconds": o.seconds,
                                     "path": str(Path(o.path).relative_to(cfg.root)) if o.path else None} for o in outcomes]})
    return EXIT_CHECK_FAILED if failed else EXIT_OK
