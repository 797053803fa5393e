"""`skill-eval check-skills`: the L0 structural check (pre-commit and `pr`)."""

from __future__ import annotations

import argparse

from skill_eval.checks import structure, surface
from skill_eval.commands._common import load_config, plural
from skill_eval.output import emit

NAME = "check-skills"
HELP = "L0: frontmatter, links, real subject commands/flags, published-copy parity"
DESCRIPTION = (
    "Check every skill in the source tree: Agent Skills frontmatter rules, body size, that every "
    "relative link and references/ path resolves inside the published skill, that every subject "
    "command and flag named in a code block exists in the committed CLI reference, and that the "
    "published copies are byte-identical to what `skill-eval generate` produces. Exit 1 on any error."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-flags", action="store_true", help="skip the subject command/flag check")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    reference = None if args.no_flags else surface.load_reference(cfg)
    findings, skills = structure.check_all(cfg, reference)
    errors = [f for f in findings if f.level == "error"]
    warnings = [f for f in findings if f.level == "warning"]
    lines = [str(f) for f in errors + warnings]
    status = "FAIL" if errors else "ok"
    lines.append(f"check-skills: {status} — {plural(len(skills), 'skill')}, {plural(len(errors), 'error')}, {plural(len(warnings), 'warning')}")
    emit(args, lines, {
        "ok": not errors,
        "skills": sorted(skills),
        "errors": [f.__dict__ for f in errors],
        "warnings": [f.__dict__ for f in warnings],
    })
    return 1 if errors else 0
