"""`skill-eval baseline show|update`: per-(skill, agent, model) floors for dimensions 1, 3, 4, 5.

`update` grades every skill-agent bundle under evidence/, refuses while any
zero-tolerance dimension (2, 6) fails pass^k, and refuses to lower a recorded rate
unless --allow-regression is given with --reason (kept in the file's history).
"""

from __future__ import annotations

import argparse

from skill_eval.commands._common import load_config
from skill_eval.commands._options import add_verbs
from skill_eval.content.config import Config
from skill_eval.core.errors import EXIT_OK
from skill_eval.core.output import emit
from skill_eval.grading import baselines, evidence, gates
from skill_eval.grading.graders import ZERO_TOLERANCE_DEFAULT, Catalog, Grade


def add_arguments(p: argparse.ArgumentParser) -> None:
    verbs = add_verbs(p)
    show = verbs.add_parser("show", help="the current pass rates beside the recorded baselines (writes nothing)")
    update = verbs.add_parser("update", help="record the current rates as the baselines (refused while 2/6 fail pass^k, "
                                             "or when a rate would go down without --allow-regression)")
    for verb in (show, update):
        verb.add_argument("--skill", default=None, help="only this skill")
    update.add_argument("--allow-regression", action="store_true", help="allow a rate to go down (needs --reason)")
    update.add_argument("--reason", default=None, help="why the baseline changes (required with --allow-regression)")


def _grades(cfg: Config) -> tuple[list[Grade], Catalog]:
    catalog = Catalog(cfg)
    found, _ = evidence.scan(cfg)
    # A/A calibration runs (run --aa) are a second sample of the same slots: never part of a baseline
    from skill_eval.grading import judgments, regrade

    signers = regrade.signers_of(cfg)  # only judgments that verify count (grading/judgments.py)
    return [judgments.graded(f.path, catalog, signers)[0] for f in found
            if f.meta is not None and not evidence.is_aa(f.rel)], catalog


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    grades, catalog = _grades(cfg)
    if args.skill:
        grades = [g for g in grades if g.meta.get("skill") == args.skill]
    if args.action == "update":
        zero = catalog.rubric.zero_tolerance if catalog.rubric else ZERO_TOLERANCE_DEFAULT
        problems = gates.pass_k([g for g in grades if g.kind == "behavioral" and g.meta.get("arm") == "skill-agent"],
                                cfg.k, tuple(zero))
        written = baselines.update(cfg, grades, problems, skill=args.skill, allow_regression=args.allow_regression,
                                   reason=args.reason)
        emit(args, [f"wrote {p.relative_to(cfg.root)}" for p in written],
             {"written": [str(p.relative_to(cfg.root)) for p in written]})
        return EXIT_OK
    rows, lines = [], []
    for t, per_dim in sorted(baselines.rates(grades, baselines.MERGE_DIMS + baselines.RELEASE_DIMS).items()):
        base = baselines.load(cfg, t)
        row = {"skill": t.skill, "agent": t.agent, "model": t.model, "current": {str(d): list(v) for d, v in per_dim.items()},
               "baseline": base["dimensions"] if base else None}
        rows.append(row)
        lines.append(f"{t.skill} / {t.agent} / {t.model}: current "
                     + ", ".join(f"d{d} {p}/{n}" for d, (p, n) in per_dim.items())
                     + (" | baseline " + ", ".join(f"d{d} {v['rate']:.2f}" for d, v in base["dimensions"].items()) if base else " | no baseline"))
    if not rows:
        lines.append("no behavioural skill-agent evidence yet")
    emit(args, lines, {"baselines": rows})
    return EXIT_OK
