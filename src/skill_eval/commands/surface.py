"""`skill-eval surface`: the committed CLI reference of the subject tool."""

from __future__ import annotations

import argparse

from skill_eval.checks import surface
from skill_eval.commands._common import load_config
from skill_eval.core.errors import EXIT_CHECK_FAILED, EXIT_OK, ConfigError
from skill_eval.core.output import emit

DESCRIPTION = surface.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--write", action="store_true", help="regenerate the reference from the installed tool")
    p.add_argument("--subject", default=None, help="path of the subject executable (default: $SKILL_EVAL_REAL or PATH)")
    p.add_argument("--no-cache", action="store_true",
                   help="re-extract even if .cache/skill-eval/surface/ holds this installation's reference")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if not (cfg.has_subject and cfg.subject.cli_reference):
        why = "no [subject] in the config" if not cfg.has_subject else "[subject] has no surface.cli_reference"
        fix = ("add a [subject] table naming the CLI your skills drive, with surface.cli_reference = "
               "\"<evals root>/surface/<name>-cli.json\", then `skill-eval surface --write`")
        if args.write:
            raise ConfigError(f"cannot write a CLI reference: {why}", source=cfg.source, field="subject", fix=fix)
        emit(args, [f"surface: not applicable — {why} (to check the commands and flags your skills name: {fix})"],
             {"ok": True, "not_applicable": True, "hint": fix})
        return EXIT_OK
    tool = surface.find_subject(cfg, args.subject)
    if args.write:
        path = surface.write_reference(cfg, tool, cache=not args.no_cache)
        emit(args, [f"wrote {path.relative_to(cfg.root)}"], {"ok": True, "reference": str(path)})
        return EXIT_OK
    reference = surface.load_reference(cfg)
    problems = surface.drift(reference, surface.extract(tool, cache_root=None if args.no_cache else cfg.root))
    lines = [f"  drift: {p}" for p in problems]
    lines.append(f"surface: {'FAIL' if problems else 'ok'} — {cfg.subject.cli_reference} vs installed {tool.name} {reference.get('version')}"
                 + (" (update skills, then `skill-eval surface --write`)" if problems else ""))
    emit(args, lines, {"ok": not problems, "problems": problems})
    return EXIT_CHECK_FAILED if problems else EXIT_OK
