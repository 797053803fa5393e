"""`skill-eval propose`: let an agent draft a skill-source patch for failing cases; a human applies it.

The release contract's step 5 (docs/PROPOSE.md):

  1. propose   the failing cases (--from-check triggers: what `check-triggers` mispredicts; --case ID:
               trigger prompt or scenario ids) go to an agent (any adapter, sandboxed like `run`)
               that edits a copy of the [skills] source folders only. The runner diffs the copy,
               refuses any change outside the skill sources (fixtures, scenarios, golden, evidence,
               published copies are never the agent's) and any symlink, and writes
               <out>/proposal.patch + <out>/proposal.json. The working tree is not touched.
  2. review    a human reads proposal.patch (and proposal.json: the cases it addresses, the agent's
               summary).
  3. apply     `git apply <out>/proposal.patch` from the repository root (then `skill-eval generate`
               for the published copies).
  4. re-run    the checks the cases failed (`skill-eval check-triggers`, `skill-eval run ID`), then
               the untouched final case set before a release.

Exit codes: 0 a proposal was written (or no case fails: nothing to propose), 1 no patch could be
produced or it was refused, 2 usage or configuration.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from skill_eval.commands._common import load_config
from skill_eval.commands._options import add_agent_arguments, agent_options
from skill_eval.core.errors import EXIT_OK, ConfigError, UsageError
from skill_eval.core.output import emit
from skill_eval.harness.runner.execute import RunOptions
from skill_eval.improve import cases as cases_mod
from skill_eval.improve import propose as lib

DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the flow's lines
    p.add_argument("--from-check", choices=cases_mod.CHECKS, default=None,
                   help="take the failing cases of this check (triggers: the prompts `check-triggers` mispredicts)")
    p.add_argument("--case", dest="cases", nargs="+", action="extend", default=[], metavar="ID",
                   help="a failing case by id: a trigger prompt id or a (non-holdout) scenario id")
    add_agent_arguments(p, "agent", "agent-binary", "model", "model-server", "base-url", "no-auth", "max-turns", "timeout",
                        "max-total-tokens")
    p.add_argument("--out", type=Path, default=Path(lib.DEFAULT_OUT),
                   help=f"where proposal.patch and proposal.json go; a relative one is taken from --root (default: "
                        f"{lib.DEFAULT_OUT}); never inside the skill sources or the evals root")


def run(args: argparse.Namespace) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as `run`: an interrupt kills the agent's group
    if not args.from_check and not args.cases:
        raise UsageError("name the failing cases", fix="pass --from-check triggers and/or --case ID ...")
    if args.model_server and not args.model_server.startswith("scripted:"):
        raise ConfigError(f"--model-server {args.model_server!r}: only scripted:FILE is supported", field="--model-server",
                          fix="pass --model-server scripted:FILE, or drop it to use the agent's real model")
    cfg = load_config(args)
    problems: list[str] = []
    found: list[cases_mod.FailingCase] = []
    if args.from_check:
        found, problems = cases_mod.from_check(cfg, args.from_check)
    found = cases_mod.dedupe(found + cases_mod.named(cfg, args.cases))
    if not found:
        emit(args, [f"propose: nothing to propose — no case of {args.from_check} fails"],
             {"ok": True, "proposal": None, "cases": [], "check_problems": problems})
        return EXIT_OK
    opts = RunOptions(**agent_options(args, cfg))
    agent = opts.adapter
    out = args.out if args.out.is_absolute() else cfg.root / args.out
    if not args.json:
        print(f"propose: {len(found)} failing case(s) -> agent {agent}, sandboxed on a copy of "
              f"{', '.join(lib.source_folders(cfg))}", file=sys.stderr, flush=True)
    result = lib.propose(cfg, opts, found, out, problems)
    rec = result.record
    lines = [f"  {c['status']}: {c['path']}" for c in rec["patch"]["changes"]]
    lines += [f"  case: {c.id} ({c.kind}): {c.observed}" for c in found]
    lines.append(f"propose: wrote {result.patch_path} and {result.record_path.name} "
                 f"({len(rec['patch']['changes'])} file(s)) — next:")
    lines += [f"  {step}" for step in rec["next"]]
    emit(args, lines, {"ok": True, "proposal": {"patch": str(result.patch_path), "record": str(result.record_path)},
                       **{k: rec[k] for k in ("patch", "cases", "agent", "base", "next", "check_problems")}})
    return EXIT_OK
