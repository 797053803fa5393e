"""`skill-eval plan --shards N`: the recording plan cut into N shards, as a CI job matrix.

Plans exactly as `skill-eval run` does (the same arguments: suite, base, ids, arm, k, agent,
model, run id) and prints, per shard, how many items it holds, the plan's digest, and the
matrix a CI system expands into N record jobs: a GitHub Actions `strategy.matrix` (an `include`
list, one entry per shard) and a GitLab `parallel:matrix` (one variable, SKILL_EVAL_SHARD, with
N values). Each job then runs `skill-eval run --shard I/N` with the same arguments; the shards
are computed from item identities alone, so every job agrees (content/shards.py). Records nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

from skill_eval.commands._common import bounded_int, load_config
from skill_eval.commands.run import PlanSpec, add_plan_arguments, plan_digest
from skill_eval.content import shards
from skill_eval.core.errors import EXIT_OK
from skill_eval.core.output import emit

DESCRIPTION = __doc__
GITLAB_VARIABLE = "SKILL_EVAL_SHARD"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_plan_arguments(p)
    p.add_argument("--shards", type=bounded_int(1, shards.MAX_SHARDS), default=1, metavar="N",
                   help=f"number of shards (record jobs), 1..{shards.MAX_SHARDS}")
    p.add_argument("--items", action="store_true", help="also list each shard's items")


def matrix(count: int) -> dict[str, Any]:
    """The CI matrices for `count` shards."""
    labels = [shards.Shard(i, count).label for i in range(1, count + 1)]
    return {"github": {"include": [{"shard": label, "index": i, "count": count, "slug": shards.Shard(i, count).slug}
                                   for i, label in enumerate(labels, 1)]},
            "gitlab": {"parallel": {"matrix": [{GITLAB_VARIABLE: labels}]}}}


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    spec = PlanSpec.from_args(args, cfg)
    items = spec.build(cfg)
    labels = [i.label for i in items]
    owner = shards.assign(labels, args.shards)
    per: list[list[str]] = [[] for _ in range(args.shards)]
    for label in labels:
        per[owner[label] - 1].append(label)
    sizes = [len(p) for p in per]
    digest = plan_digest(spec, items)
    nonempty = [n for n in sizes if n]
    ratio = max(nonempty) / min(nonempty) if nonempty else 1.0
    lines = [f"plan: {len(items)} item(s), run id {spec.run_id}, digest {digest[:16]}, {args.shards} shard(s) "
             f"(max/min {ratio:.2f})"]
    for i, members in enumerate(per, 1):
        lines.append(f"  shard {i}/{args.shards}: {len(members)} item(s)")
        if args.items:
            lines += [f"    {label}" for label in members]
    if any(n == 0 for n in sizes):
        lines.append(f"plan: {sizes.count(0)} shard(s) are empty (more shards than items): their jobs record nothing")
    payload: dict[str, Any] = {"planned": len(items), "run_id": spec.run_id, "plan_digest": digest, "shards": args.shards,
                               "plan": spec.to_json(), "sizes": sizes, "max_min_ratio": round(ratio, 4),
                               "matrix": matrix(args.shards)}
    if args.items:
        payload["items"] = {shards.Shard(i, args.shards).label: members for i, members in enumerate(per, 1)}
    emit(args, lines, payload)
    return EXIT_OK
