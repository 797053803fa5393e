"""`skill-eval scorecard --out DIR`: scorecard.json, scorecard.md (PR comment) and scorecard.html.

Re-grades every committed bundle, computes lift per (skill, agent, model) and arm pair, cost,
activation and the eval-quality audit (DESIGN §11). `--gate` makes a failed cost-regression gate
exit 1 (the numbers are in the message); without it the command only reports.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval.content import config
from skill_eval.core.output import emit
from skill_eval.reporting import scorecard as sc
from skill_eval.reporting.scorecard.markdown import summary_line

NAME = "scorecard"
HELP = "write scorecard.json / .md / .html: lift with CIs, activation, dimensions, pass^k, cost, audit"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("build/scorecard"),
                   help="output directory; a relative one is taken from --root (default: build/scorecard); inside the "
                        "repository no symlink is followed")
    p.add_argument("--evidence", type=Path, default=None, help="evidence root (default: <evals root>/evidence)")
    p.add_argument("--gate", action="store_true", help="exit 1 when the cost-regression gate fails")


def run(args: argparse.Namespace) -> int:
    cfg = config.load(args.root)
    result = sc.compute(cfg, args.evidence)
    paths = sc.write(result.card, args.out, cfg.root)
    gate = result.card["gates"]["cost_regression"]
    lines = [summary_line(result.card), *[f"wrote {p}" for p in paths], *[f"FAIL {p}" for p in gate["problems"]]]
    emit(args, lines, {"summary": summary_line(result.card), "files": [str(p) for p in paths],
                       "cost_regression": gate, "scripted": result.card["scripted"]})
    return 1 if args.gate and not gate["passed"] else 0
