"""`skill-eval scorecard --out DIR`: scorecard.json, scorecard.md (PR comment) and scorecard.html.

Re-grades every committed bundle, computes lift per (skill, agent, model) and arm pair, cost,
activation and the eval-quality audit (DESIGN §11). A gate it prints as failed (the cost-regression
gate: "COST GATE FAILED", one `FAIL` line per regression with both numbers) makes it exit 1, after
the three files are written; `--report-only` is the informational form (same files and lines,
exit 0, labelled "report only"). `--gate` is accepted for old scripts: gating is the default now.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval.content import config
from skill_eval.core.output import emit
from skill_eval.reporting import scorecard as sc
from skill_eval.reporting.scorecard.markdown import summary_line


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("build/scorecard"),
                   help="output directory; a relative one is taken from --root (default: build/scorecard); inside the "
                        "repository no symlink is followed")
    p.add_argument("--evidence", type=Path, default=None, help="evidence root (default: <evals root>/evidence)")
    p.add_argument("--report-only", action="store_true",
                   help="informational: write and print everything, but exit 0 even when a gate fails")
    p.add_argument("--gate", action="store_true", help=argparse.SUPPRESS)  # the default since issue 28; kept for old scripts


def run(args: argparse.Namespace) -> int:
    cfg = config.load(args.root)
    result = sc.compute(cfg, args.evidence)
    paths = sc.write(result.card, args.out, cfg.root)
    gate = result.card["gates"]["cost_regression"]
    report_only = bool(getattr(args, "report_only", False))
    lines = [summary_line(result.card), *[f"wrote {p}" for p in paths], *[f"FAIL {p}" for p in gate["problems"]]]
    if not gate["passed"] and report_only:
        lines.append("scorecard: report only (--report-only): the failed gate above does not set the exit code")
    emit(args, lines, {"summary": summary_line(result.card), "files": [str(p) for p in paths],
                       "cost_regression": gate, "scripted": result.card["scripted"], "report_only": report_only})
    return 1 if not gate["passed"] and not report_only else 0
