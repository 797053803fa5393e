"""`skill-eval pack`: generate (or `--check`) agent-evals/skills/skill-eval-pack.json."""

from __future__ import annotations

import argparse

from skill_eval.commands._common import load_config, plural
from skill_eval.content import pack
from skill_eval.core.errors import EXIT_CHECK_FAILED, EXIT_OK
from skill_eval.core.output import emit

NAME = "pack"
HELP = "write the evaluation pack of content digests (--check: exit 1 naming every entry that moved)"
FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)
DESCRIPTION = pack.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if the committed pack is stale")


def _stale_lines(problems: list[str]) -> list[str]:
    """The stale entries as the maintainer needs them: entries that only moved with edited files (the usual
    case after editing a skill: a derived file out of date) are one line naming them, since one command fixes
    them all; anything else (a hand-edited pack) is listed entry by entry. `--json` keeps every entry."""
    moved = [p for p in problems if ": inputs moved: " in p and "hand-edited" not in p]
    lines = [f"  stale: {p}" for p in problems if p not in moved]
    if len(moved) == 1:
        lines.append(f"  stale: {moved[0]}")
    elif moved:
        keys = [p.split(": ", 1)[0] for p in moved]
        lines.append(f"  stale: {len(moved)} entries moved with the files you edited ({', '.join(keys[:6])}"
                     f"{', ...' if len(keys) > 6 else ''}); --json lists each")
    return lines


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    rel = pack.pack_path(cfg).relative_to(cfg.root)
    if args.check:
        problems = pack.check(cfg)
        lines = _stale_lines(problems)
        lines.append(
            f"pack --check: FAIL — {len(problems)} entries moved; run `skill-eval pack` (make pack) and commit {rel}"
            if problems else f"pack --check: ok — {rel} matches the working tree"
        )
        emit(args, lines, {"ok": not problems, "problems": problems, "pack": str(rel)})
        return EXIT_CHECK_FAILED if problems else EXIT_OK
    entries = pack.compute(cfg)
    pack.write(cfg, entries)
    emit(args, [f"wrote {rel} ({plural(len(entries), 'entry')})"], {"ok": True, "pack": str(rel), "entries": sorted(entries)})
    return EXIT_OK
