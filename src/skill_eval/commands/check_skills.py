"""`skill-eval check-skills`: the L0 structural check (pre-commit and `pr`)."""

from __future__ import annotations

import argparse

from skill_eval.checks import structure, surface
from skill_eval.commands._common import load_config, plural
from skill_eval.core.output import emit

NAME = "check-skills"
HELP = "L0: frontmatter, links, real subject commands/flags, published-copy parity"
FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)
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
    # The command/flag check needs a subject CLI reference; a host without a [subject] has none.
    use_flags = not args.no_flags and cfg.has_subject and bool(cfg.subject.cli_reference)
    reference = surface.load_reference(cfg) if use_flags else None
    findings, skills = structure.check_all(cfg, reference)
    errors = [f for f in findings if f.level == "error"]
    warnings = [f for f in findings if f.level == "warning"]
    notes = [f for f in findings if f.level == "note"]
    lines = [str(f) for f in errors + warnings + notes]
    status = "FAIL" if errors else "ok"
    lines.append(f"check-skills: {status} — {plural(len(skills), 'skill')}, {plural(len(errors), 'error')}, {plural(len(warnings), 'warning')}"
                 + (f", {plural(len(notes), 'folder')} skipped" if notes else ""))
    emit(args, lines, {
        "ok": not errors,
        "skills": sorted(skills),
        "errors": [f.__dict__ for f in errors],
        "warnings": [f.__dict__ for f in warnings],
        "skipped": [f.__dict__ for f in notes],
    })
    return 1 if errors else 0
