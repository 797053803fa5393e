"""`skill-eval pack`: generate (or `--check`) agent-evals/skills/skill-eval-pack.json."""

from __future__ import annotations

import argparse

from skill_eval.commands._common import load_config, plural
from skill_eval.content import pack
from skill_eval.core.errors import EXIT_CHECK_FAILED, EXIT_OK
from skill_eval.core.output import emit

FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)
DESCRIPTION = pack.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if the committed pack is stale")


def _stale_lines(problems: list[str]) -> list[str]:
    """The stale entries as the maintainer reads them: entries whose inputs moved together (one edit: a
    skill, a shared fragment, a fixture) are one line, since one `skill-eval pack` fixes them all; a
    hand-edited pack or a changed affected-skills list keeps its own line. `--json` keeps every entry."""
    groups: dict[str, list[tuple[str, str]]] = {}
    lines: list[str] = []
    for p in problems:
        key, sep, rest = p.partition(": inputs moved: ")
        inputs, _, affects = rest.rpartition(" (affects ")
        if not sep or not inputs or ";" in inputs:
            lines.append(f"  stale: {p}")
            continue
        groups.setdefault(inputs, []).append((key, affects.rstrip(")")))
    for inputs, entries in groups.items():
        skills = sorted({s for _, aff in entries for s in aff.split(", ") if s})
        lines.append(f"  stale: {', '.join(k for k, _ in entries)}: inputs moved: {inputs} (affects {', '.join(skills)})")
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
