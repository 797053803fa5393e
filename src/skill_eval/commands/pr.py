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
import re
import sys
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any

from skill_eval.commands._ci_output import ci_format, emit_findings, results_of
from skill_eval.commands._common import load_config
from skill_eval.commands._options import add_base_argument, defaults
from skill_eval.core.errors import SkillEvalError

if TYPE_CHECKING:
    from skill_eval.content.config import Config

FORMATS = ("text", "json", "sarif", "junit")  # core.ci_formats.FORMATS (not imported here: --help stays light)
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


def _aliases() -> dict[str, str]:
    """Every name a step answers to: its module (check_skills, check-skills) and the words of the label `pr`
    prints ("L1s triggers": triggers, l1s, l1s-triggers; "golden (L4)": golden, l4)."""
    out: dict[str, str] = {}
    for label, mod, _ in STEPS:
        words = re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", label.lower())
        for alias in (mod, *words, "_".join(words), *(w.split("-")[-1] for w in words)):
            out.setdefault(alias.replace("-", "_"), mod)
    return out


def _canonical(name: str) -> str:
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    return _aliases().get(key, key)


def _validate_names(args: argparse.Namespace) -> None:
    """Unknown --skip/--only names are a usage error listing the valid ones (never silently ignored)."""
    valid = _step_names()
    for opt in ("skip", "only"):
        for name in getattr(args, opt, None) or []:
            if _canonical(name) not in valid:
                raise SkillEvalError(f"--{opt} {name}: no such pr step",
                                 fix=f"use one of {', '.join(_short(label) for label, _, _ in STEPS)} (or the module "
                                     f"names {', '.join(n.replace('_', '-') for n in valid)})")


def _short(label: str) -> str:
    """The name to --skip a step by, as its label reads ("L1s triggers" -> triggers)."""
    short = re.sub(r"\s*\(.*\)", "", label).split()[-1].lower()
    return "local-paths" if short == "paths" else short


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
            if mod_name == "check_skills":
                results.append({"gate": SECURITY_GATE, "status": "skipped"})
            continue
        out = io.StringIO()
        try:
            module = importlib.import_module(f"skill_eval.commands.{mod_name}")
            ns = _namespace(module, argparse.Namespace(root=root, json=True), extra)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                rc = int(module.run(ns) or 0)
        except (SkillEvalError, ModuleNotFoundError):
            rc = 1
        results.append({"gate": mod_name, "status": "pass" if rc == 0 else "fail"})
        if mod_name == "check_skills":  # the security rules' own gate, from the same run's findings
            results.append({"gate": SECURITY_GATE, "status": _security_status(out.getvalue())})
    return results


SECURITY_GATE = "security_rules"


def _security_status(report: str) -> str:
    """pass when check-skills' JSON report lists no error-level security finding; fail otherwise, and
    when there is no report to read (the check did not run to the end: nothing shows the skills clean)."""
    from skill_eval.checks import security

    try:
        errors = json.loads(report)["errors"]
    except (ValueError, KeyError, TypeError):
        return "fail"
    return "fail" if any(security.is_security(e.get("rule", "")) for e in errors) else "pass"


def _namespace(module: ModuleType, base: argparse.Namespace, extra: dict[str, Any]) -> argparse.Namespace:
    fmt = getattr(base, "output_format", None) or ("json" if base.json else "text")
    ns = defaults(module, root=base.root, output_format=fmt, **extra)
    ns.trust_base = getattr(base, "base", None)  # pr --base: the trust policy's base only (steps select as always)
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
    fmt = ci_format(args)  # SARIF / JUnit: the steps print JSON, read back into findings
    step_args = argparse.Namespace(**{**vars(args), "json": True, "output_format": "json"}) if fmt else args
    # freshness and evidence read each bundle once, in one shared pass (text mode keeps slim grades)
    with regrade.sharing(passes=True, slim=not step_args.json):
        failed = _run_steps(step_args, results, cfg, skip, only)
        scripted, unsigned, graded = regrade.evidence_labels()
    if fmt:
        labels = [f"{scripted} of {graded} evidence bundles were recorded with SCRIPTED model turns or a LOCAL ENDPOINT: "
                  "not a provider model's result"] if scripted else []
        labels += [f"{unsigned} of {graded} evidence bundles carry no seal (UNSIGNED)"] if unsigned else []
        _emit_ci(args, results, failed, labels)
        return 1 if failed else 0
    summary = ", ".join(f"{r['step']} {r['status']}" for r in results)
    label = (f" [evidence: {scripted} of {graded} bundles recorded with SCRIPTED model turns or a LOCAL ENDPOINT — "
             "not a provider model's result]"
             if scripted else "")
    label += f" [UNSIGNED: {unsigned} of {graded} bundles carry no seal]" if unsigned else ""
    label += _pack_hint(cfg, results)
    if args.json:
        # machines read `scripted` per bundle in the evidence step's grades
        print(json.dumps({"ok": not failed, "steps": results}, indent=2, sort_keys=True))
    else:
        print(f"pr: {'FAIL' if failed else 'ok'} — {summary}{label}")
    return 1 if failed else 0


def _emit_ci(args: argparse.Namespace, results: list[dict[str, Any]], failed: bool, labels: list[str]) -> None:
    """SARIF / JUnit for the whole profile: every step's findings (L0, triggers), one error for a step that
    failed without any (pack, freshness, evidence: its own text says what), one JUnit case per step, and the
    evidence labels (scripted, unsigned) as notes so no reader of the report misses them."""
    from skill_eval.core.ci_formats import CiCheck, CiResult

    findings: list[CiResult] = []
    checks = []
    for r in results:
        step = r["step"]
        found = results_of(r.get("detail"))
        findings += found
        if r["status"] == "fail" and not any(f.level == "error" for f in found):
            detail = r.get("detail")
            why = detail.get("error") if isinstance(detail, dict) else None
            hint = f": {why}" if why else f" (`skill-eval pr --only {_short(step)}` shows why)"
            findings.append(CiResult(f"pr:{_short(step)}", "error", f"pr step '{step}' failed{hint}"))
        summary = f"{step} failed" if r["status"] == "fail" else str(r.get("reason") or r.get("hint") or r["status"])
        checks.append(CiCheck(step, r["status"] != "fail", summary, skipped=r["status"] in ("skipped", "not_applicable")))
    findings += [CiResult("pr:evidence-label", "note", text) for text in labels]
    emit_findings(args, "skill-eval pr", findings, [], {"ok": not failed, "steps": results}, checks=checks)


def _pack_hint(cfg: Config, results: list[dict[str, Any]]) -> str:
    """The one command for a stale pack (after editing a skill the pack is out of date until it is
    regenerated: a derived file, like a lockfile), said once at the end where the maintainer looks."""
    if not any(r["step"] == "pack" and r["status"] == "fail" for r in results):
        return ""
    from skill_eval.content import pack

    rel = pack.pack_path(cfg).relative_to(cfg.root).as_posix()
    alone = all(r["status"] != "fail" for r in results if r["step"] != "pack")
    return (f" — {'only ' if alone else ''}the evaluation pack is stale: run `skill-eval pack`, "
            f"then commit {rel}")


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
