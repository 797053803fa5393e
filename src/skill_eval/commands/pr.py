"""`skill-eval pr`: every check the `pr` profile runs, with no model, credential or network.

Each step runs even when an earlier one failed, so one run reports every problem; the
exit code is 1 if any step failed, 2 if the configuration itself is unusable.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import sys
import time

from skill_eval.commands._common import load_config
from skill_eval.errors import SkillEvalError

NAME = "pr"
HELP = "run the whole pr profile: L0, surface drift, L1s, pack --check, content, golden (L4), freshness, evidence"

# (label, command module, argv-equivalent options)
STEPS: tuple[tuple[str, str, dict], ...] = (
    ("L0 structure", "check_skills", {"no_flags": False}),
    ("subject surface", "surface", {"write": False, "subject": None}),
    ("L1s triggers", "check_triggers", {"verbose": False}),
    ("pack", "pack", {"check": True}),
    ("golden (L4)", "golden", {}),
    ("freshness", "freshness", {"bundles": [], "evidence": None}),
    ("evidence", "evidence", {}),
    ("machine-local paths", "local_paths", {}),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--skip", action="append", default=[], metavar="STEP",
                   help="skip a step by module name (e.g. surface when the subject is not installed); reported as skipped")


def _namespace(module, base: argparse.Namespace, extra: dict) -> argparse.Namespace:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--root", default=None)
    parser.add_argument("--json", action="store_true")
    module.add_arguments(parser)
    ns = parser.parse_args([])
    ns.root = base.root
    ns.json = base.json
    for k, v in extra.items():
        setattr(ns, k, v)
    return ns


def run(args: argparse.Namespace) -> int:
    load_config(args)  # a broken config is a usage error for the whole profile (exit 2)
    results = []
    failed = False
    for label, mod_name, extra in STEPS:
        started = time.monotonic()
        if mod_name in args.skip:
            results.append({"step": label, "status": "skipped"})
            if not args.json:
                print(f"== {label}: SKIPPED (--skip {mod_name})")
            continue
        if not args.json:
            print(f"== {label}")
            sys.stdout.flush()
        buf = io.StringIO()
        try:
            module = importlib.import_module(f"skill_eval.commands.{mod_name}")
            ns = _namespace(module, args, extra)
            with contextlib.redirect_stdout(buf) if args.json else contextlib.nullcontext():
                rc = int(module.run(ns) or 0)
            detail = json.loads(buf.getvalue()) if args.json and buf.getvalue().strip() else None
        except ModuleNotFoundError as exc:
            rc, detail = 1, {"error": f"step not available: {exc}"}
            if not args.json:
                print(f"  FAIL: step not available ({exc})")
        except SkillEvalError as exc:
            rc, detail = 1, {"error": str(exc)}
            if not args.json:
                print(f"  FAIL: {exc}")
        seconds = round(time.monotonic() - started, 2)
        failed |= rc != 0
        results.append({"step": label, "status": "ok" if rc == 0 else "fail", "exit": rc, "seconds": seconds, "detail": detail})
    summary = ", ".join(f"{r['step']} {r['status']}" for r in results)
    if args.json:
        print(json.dumps({"ok": not failed, "steps": results}, indent=2, sort_keys=True))
    else:
        print(f"pr: {'FAIL' if failed else 'ok'} — {summary}")
    return 1 if failed else 0
