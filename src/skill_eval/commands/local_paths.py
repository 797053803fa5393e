"""`pr` step: no machine-local path in any committed bundle (evidence/ and calibration/).

A bundle is re-graded on other machines for years; a sandbox path (`/tmp/sandbox-…`, Claude's
mangled `-tmp-sandbox-…-work`) or the recording user's home directory left in a runner-written
file leaks the recording machine's layout and makes two recordings of one behaviour differ.
The runner replaces them at recording time (runner.normalize); this step proves none survived
— a bundle recorded before that existed, or by a runner that regressed, fails here. The
subject's own outputs (captured/, facts/) are digested evidence and are not scanned.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from skill_eval import config
from skill_eval.output import emit
from skill_eval.runner.normalize import NOT_SCANNED, check_evidence
from skill_eval.scorecard.runs import bundle_dirs

NAME = "local-paths"
HELP = "fail when a committed bundle (evidence/, calibration/) still holds a sandbox or home path"
TREES = ("evidence", "calibration")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", default=None, help="home directory to look for (default: $HOME of this machine)")


def home_hits(tree: Path, root: Path, home: str) -> list[str]:
    """`<bundle>/<file>: <home>` for every runner-written file naming `home` as a path prefix."""
    home = home.rstrip("/")
    if home.count("/") < 1 or len(home) < 3:  # "/" or "": would match every path
        return []
    needle = re.compile(re.escape(home.encode()) + rb"(?=/|\b)")
    out = []
    for bundle in bundle_dirs(tree):
        for path in sorted(p for p in bundle.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = path.relative_to(bundle)
            if rel.parts[0] not in NOT_SCANNED and needle.search(path.read_bytes()):
                out.append(f"{bundle.relative_to(root).as_posix()}/{rel.as_posix()}: {home} (the recording user's home; re-record)")
    return out


def run(args: argparse.Namespace) -> int:
    cfg = config.load(args.root)
    home = args.home if getattr(args, "home", None) is not None else os.environ.get("HOME", "")
    problems: list[str] = []
    scanned = 0
    for name in TREES:
        tree = cfg.evals_dir / name
        if not tree.is_dir():
            continue
        scanned += len(bundle_dirs(tree))
        problems += check_evidence(tree, cfg.root)
        problems += home_hits(tree, cfg.root, home)
    lines = [f"FAIL {p}" for p in problems]
    lines.append(f"local paths: {scanned} bundle(s) scanned, " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    emit(args, lines, {"passed": not problems, "scanned": scanned, "problems": problems})
    return 1 if problems else 0
