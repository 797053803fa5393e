"""`skill-eval select`: moved digests -> affected skills -> the suite to (re-)run."""

from __future__ import annotations

import argparse

from skill_eval.commands._common import load_config
from skill_eval.commands._options import add_base_argument
from skill_eval.content import selection
from skill_eval.core.errors import EXIT_OK
from skill_eval.core.output import emit

DESCRIPTION = selection.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_base_argument(p, help="git ref to diff against (default: select for every skill)")
    p.add_argument("--suite", choices=selection.SUITES, default="risk")
    p.add_argument("--arm", default=None, help="one arm (default: every arm the pr profile requires, evals.arms.pr)")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    suite = selection.select(cfg, args.suite, args.base)
    expected = selection.expected_bundles(cfg, suite, args.arm)
    lines = []
    if args.base:
        lines.append(f"moved since {args.base}: {', '.join(suite.moved) or 'nothing'}")
    lines.append(f"affected skills: {', '.join(suite.skills) or 'none'}")
    for s in suite.scenarios:
        lines.append(f"  {s.id} [{s.skill}, {s.category}]: {suite.reasons[s.id]}")
    lines.append(f"  + trigger corpus: {len(suite.prompts)} prompts" if suite.prompts else "  (no trigger prompts)")
    lines.append(f"select: {args.suite} suite — {len(suite.scenarios)} scenarios, {len(suite.prompts)} prompts, k={cfg.k}, {len(expected)} bundles")
    emit(args, lines, {
        "suite": args.suite, "base": args.base, "k": cfg.k, "moved": list(suite.moved), "skills": list(suite.skills),
        "scenarios": [{"id": s.id, "skill": s.skill, "category": s.category, "reason": suite.reasons[s.id]} for s in suite.scenarios],
        "prompts": [p.id for p in suite.prompts],
        "expected_bundles": [e.__dict__ for e in expected],
    })
    return EXIT_OK
