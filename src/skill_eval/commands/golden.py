"""`skill-eval golden`: the L4 check — every golden bundle fails exactly its expected set."""

from __future__ import annotations

import argparse

from skill_eval.commands._common import load_config
from skill_eval.core.errors import EXIT_CHECK_FAILED, EXIT_OK
from skill_eval.core.output import emit
from skill_eval.grading import golden

FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true", help="also list the reasons of every expected failure")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    outcomes, problems = golden.check(cfg)
    lines, mismatches = [], []
    for o in outcomes:
        if o.ok:
            lines.append(f"ok   {o.entry.id}: {list(o.entry.expected) or 'passes'}")
            if args.verbose:
                lines += [f"       {k}: {r}" for k, rs in o.reasons.items() for r in rs]
        else:
            mismatches.append(o.entry.id)
            lines.append(f"FAIL {o.entry.id}: expected {list(o.entry.expected)}, got {o.actual}")
            lines += [f"       {k}: {r}" for k, rs in o.reasons.items() for r in rs]
    lines += [f"FAIL {p}" for p in problems]
    ok = not mismatches and not problems
    lines.append(f"golden: {len(outcomes) - len(mismatches)}/{len(outcomes)} bundles match their expected failure sets"
                 + ("" if ok else " — a grader rule changed behaviour, or the corpus is stale (scripts/make_golden.py)"))
    payload = {
        "passed": ok,
        "problems": problems,
        "bundles": [{"id": o.entry.id, "good": o.entry.good, "primary": o.entry.primary, "expected": list(o.entry.expected),
                     "actual": o.actual, "ok": o.ok, "reasons": o.reasons} for o in outcomes],
    }
    emit(args, lines, payload)
    return EXIT_OK if ok else EXIT_CHECK_FAILED
