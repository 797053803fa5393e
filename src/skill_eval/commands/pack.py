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


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    rel = pack.pack_path(cfg).relative_to(cfg.root)
    if args.check:
        problems = pack.check(cfg)
        lines = [f"  stale: {p}" for p in problems]
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
