"""`skill-eval generate`: write (or `--check`) the published skill trees."""

from __future__ import annotations

import argparse

from skill_eval.commands._common import load_config
from skill_eval.content import generate
from skill_eval.content.skills import citation_graph, discover
from skill_eval.core.errors import EXIT_CHECK_FAILED, EXIT_OK
from skill_eval.core.output import emit


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if a published copy differs")
    p.add_argument("--graph", action="store_true", help="print the citation graph (fragment -> citing skills)")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    skills = discover(cfg)
    graph = citation_graph(cfg, skills)
    if args.check:
        problems = generate.drift(cfg, skills)
        lines = problems + [f"generate --check: {'FAIL' if problems else 'ok'} — {len(problems)} differences"]
        emit(args, lines, {"ok": not problems, "problems": problems, "citations": graph})
        return EXIT_CHECK_FAILED if problems else EXIT_OK
    written = generate.write_published(cfg, skills)
    lines = [f"wrote {root}/ ({len(skills)} skills)" for root in written]
    if args.graph:
        lines += [f"  {frag} <- {', '.join(users)}" for frag, users in graph.items()]
    emit(args, lines, {"ok": True, "written": written, "skills": sorted(skills), "citations": graph})
    return EXIT_OK
