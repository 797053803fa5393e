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
from types import ModuleType
from typing import TYPE_CHECKING, Any

from skill_eval.commands._common import add_base_argument, load_config
from skill_eval.core.errors import SkillEvalError

if TYPE_CHECKING:
    from skill_eval.content.config import Config

NAME = "pr"
HELP = "run the whole pr profile: L0, surface drift, L1s, pack --check, content, golden (L4), freshness, evidence"
FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)

# (label, command module, argv-equivalent options)
STEPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
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
                   help="skip a step by name (e.g. surface when the subject is not installed); reported as skipped")
    p.add_argument("--only", action="append", default=[], metavar="STEP",
                   help="run only the named step(s); every other step is reported as skipped")
    add_base_argument(p)


def _step_names() -> list[str]:
    return [m for _, m, _ in STEPS]


def _canonical(name: str) -> str:
    return name.replace("-", "_")


def _validate_names(args: argparse.Namespace) -> None:
    """Unknown --skip/--only names are a usage error listing the valid ones (never silently ignored)."""
    valid = _step_names()
    for opt in ("skip", "only"):
        for name in getattr(args, opt, None) or []:
            if _canonical(name) not in valid:
                raise SkillEvalError(f"--{opt} {name}: no such pr step",
                                 fix=f"use one of {', '.join(n.replace('_', '-') for n in valid)}")


def not_applicable(cfg: Config, mod_name: str) -> str | None:
    """Why a step does not apply to this host (a one-line hint to turn it on), or None.

    The subject, scenarios, trigger corpus, golden corpus and evidence are features a host
    turns on (DESIGN §3 turn 2); a host that has not is not failed for lacking them.
    """
    from skill_eval.content import evals

    ev = cfg.evals_root
    if mod_name == "surface" and not (cfg.has_subject and cfg.subject.cli_reference):
        return ("no [subject] with a surface.cli_reference in the config — add one (then `skill-eval surface --write`) "
                "to check the subject CLI's commands and flags")
    if mod_name == "check_triggers" and not evals.present(cfg, evals.TRIGGER_CORPUS):
        return f"no {ev}/{evals.TRIGGER_CORPUS} — add labelled prompts (with negatives) to turn on L1s"
    if mod_name == "check_triggers" and evals.drafts_only(cfg):
        return (f"{ev}/{evals.TRIGGER_CORPUS} holds only drafts — rewrite the drafted prompts as your users would ask, "
                "delete their `draft: true` lines, and L1s is on (`skill-eval explain corpus` shows the format)")
    if mod_name == "golden" and not (cfg.evals_dir / "golden").exists():  # a golden/ without manifest fails in the step
        return f"no {ev}/golden/manifest.yaml — add golden good/bad bundles to turn on L4"
    if mod_name == "evidence" and not any(
        evals.present(cfg, n) for n in (evals.SCENARIOS, "evidence", "evidence-pending.yaml")
    ):
        return f"no {ev}/{evals.SCENARIOS} and no recorded evidence — add scenarios and `skill-eval run` to turn on the evidence gate"
    return None


def credential_free_checks(cfg: Config, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Run every step of the `pr` profile (no model, credential or network) and record pass/fail:
    the release stage's credential-free gates (it lives with the steps: only commands import commands).

    Gate names are the step modules' names. A skipped gate is recorded as skipped, which keeps a
    release incomplete: a gate nobody ran is not evidence. A step the pr profile itself declares
    not applicable to this host (when it can say so) is not a gate of this host and is omitted.
    """
    root = cfg.root
    results = []
    for _label, mod_name, extra in STEPS:
        if not_applicable(cfg, mod_name):
            continue
        if mod_name in skip:
            results.append({"gate": mod_name, "status": "skipped"})
            continue
        try:
            module = importlib.import_module(f"skill_eval.commands.{mod_name}")
            ns = _namespace(module, argparse.Namespace(root=root, json=True), extra)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                rc = int(module.run(ns) or 0)
        except (SkillEvalError, ModuleNotFoundError):
            rc = 1
        results.append({"gate": mod_name, "status": "pass" if rc == 0 else "fail"})
    return results


def _namespace(module: ModuleType, base: argparse.Namespace, extra: dict[str, Any]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--root", default=None)
    parser.add_argument("--json", action="store_true")
    module.add_arguments(parser)
    ns = parser.parse_args([])
    ns.root = base.root
    ns.json = base.json
    ns.trust_base = getattr(base, "base", None)  # pr --base: the trust policy's base only (steps select as always)
    for k, v in extra.items():
        setattr(ns, k, v)
    return ns


def run(args: argparse.Namespace) -> int:
    from skill_eval.grading import regrade

    _validate_names(args)
    cfg = load_config(args)  # a broken config is a usage error for the whole profile (exit 2)
    if not not_applicable(cfg, "evidence"):
        from skill_eval.content import trust

        trust.policy(cfg)  # no resolvable base under CI is a usage error too (exit 2), named before any step
    skip = {_canonical(n) for n in getattr(args, "skip", None) or []}
    only = {_canonical(n) for n in getattr(args, "only", None) or []}
    results: list[dict[str, Any]] = []
    failed = False
    # freshness and evidence read each bundle once, in one shared pass (text mode keeps slim grades)
    with regrade.sharing(passes=True, slim=not args.json):
        failed = _run_steps(args, results, cfg, skip, only)
        scripted, unsigned, graded = regrade.evidence_labels()
    summary = ", ".join(f"{r['step']} {r['status']}" for r in results)
    label = (f" [evidence: {scripted} of {graded} bundles recorded with SCRIPTED model turns or a LOCAL ENDPOINT — "
             "not a provider model's result]"
             if scripted else "")
    label += f" [UNSIGNED: {unsigned} of {graded} bundles carry no seal]" if unsigned else ""
    if args.json:
        # machines read `scripted` per bundle in the evidence step's grades
        print(json.dumps({"ok": not failed, "steps": results}, indent=2, sort_keys=True))
    else:
        print(f"pr: {'FAIL' if failed else 'ok'} — {summary}{label}")
    return 1 if failed else 0


def _run_steps(args: argparse.Namespace, results: list[dict[str, Any]], cfg: Any, skip: set[str], only: set[str]) -> bool:
    failed = False
    for label, mod_name, extra in STEPS:
        started = time.monotonic()
        if mod_name in skip or (only and mod_name not in only):
            why = f"--skip {mod_name}" if mod_name in skip else "not in --only"
            results.append({"step": label, "status": "skipped", "reason": why})
            if not args.json:
                print(f"== {label}: SKIPPED ({why})")
            continue
        hint = not_applicable(cfg, mod_name)
        if hint:
            results.append({"step": label, "status": "not_applicable", "hint": hint})
            if not args.json:
                print(f"== {label}: not applicable — {hint}")
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
    return failed
