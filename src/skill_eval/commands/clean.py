"""`skill-eval clean`: remove what killed runs left behind (issue 24 item 5).

A run killed with SIGKILL cannot clean up after itself: its sandboxes (the agent's work tree and
raw streams, which may hold unredacted output) stay in the runner's sandbox directory
(`$SKILL_EVAL_SANDBOX_DIR`, default `<tmp>/skill-eval-sandboxes-<uid>`), and half-written bundles
(`.tmp-*` beside their destination) stay in the evidence tree. `run` removes both when it starts;
`clean` does it on demand. Whatever belongs to a run that is still alive (its pid is in the name)
is kept.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval.commands._common import load_config, plural
from skill_eval.core.errors import EXIT_OK
from skill_eval.core.output import emit
from skill_eval.harness.runner import isolation, plan

DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sandbox-dir", type=Path, default=None,
                   help=f"the runner's sandbox directory (default: ${isolation.SANDBOX_DIR_ENV}, else <tmp>/skill-eval-sandboxes-<uid>)")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    partials = plan.discard_partials(cfg)
    boxes = isolation.discard_stale(args.sandbox_dir)
    lines = [f"  removed {p}" for p in [*boxes, *partials]]
    lines.append(f"clean: removed {plural(len(boxes), 'sandbox directory')} of dead runs and {plural(len(partials), 'partial bundle')}")
    emit(args, lines, {"sandboxes": [str(p) for p in boxes],
                       "partial_bundles": [str(p.relative_to(cfg.root)) if p.is_relative_to(cfg.root) else str(p)
                                           for p in partials]})
    return EXIT_OK
