#!/usr/bin/env python3
"""The pr profile composed from the standalone scripts: `nox -s pr` runs this with noxfile.PR_STEPS.

    python scripts/pipeline.py [--root ROOT] [--json] STEP [STEP ...]

A STEP is a script of scripts/ and its arguments, one shell word each: `check_skills`,
`"gen_pack --check"`, `check_evidence`. The steps run in the order given, each as
`python scripts/NAME.py ARGS --root ROOT` would run it (the script file itself, as `__main__`), but
in this one interpreter: Python starts and skill_eval is imported once, and the evidence-reading
steps (check_freshness, check_evidence) share one pass over the bundles, as inside `skill-eval pr`
(grading.regrade.sharing: an in-memory memo of this process, never written anywhere). A step that
may write (anything but the read-only checks below, e.g. `gen_pack` without --check) ends that
sharing: the steps after it read the evidence afresh.

Every step runs even when an earlier one failed, so one run reports every problem. A known step
that does not apply to the host (no trigger corpus, no golden corpus, no subject surface, no
evidence: `skill-eval pr`'s own rule) is reported as not applicable and not run. Exit 1 if any step
failed, 2 when the configuration is unusable, a step names no script or gives arguments its command
does not take (all found before any step runs). `skill-eval pr` is the same
profile in one fixed order; tests/commands/test_pipeline.py holds the two to the same verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import runpy
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS.parent / "src"))

# the read-only checks: script -> the `skill-eval pr` step (commands/pr.py STEPS module) it is
CHECKS = {"check_skills": "check_skills", "check_surface": "surface", "check_triggers": "check_triggers",
          "gen_pack": "pack", "check_golden": "golden", "check_freshness": "freshness", "check_evidence": "evidence",
          "check_local_paths": "local_paths"}
# every script that shells a `skill-eval` command -> that command (its arguments are parsed before any step runs)
COMMAND_OF = {**{s: m.replace("_", "-") for s, m in CHECKS.items()}, "grade_bundle": "grade", "run_skill_eval": "run",
              "select_suite": "select", "release": "release"}
# noxfile.PR_STEPS starts as this (the order of `skill-eval pr`); a host edits its own copy
PR_STEPS = ("check_skills", "check_surface", "check_triggers", "gen_pack --check", "check_golden", "check_freshness",
            "check_evidence", "check_local_paths")


@dataclass
class Step:
    name: str  # the STEP as given ("gen_pack --check")
    status: str  # ok | fail | not_applicable
    exit: int | None = None
    detail: Any = None
    hint: str | None = None


@dataclass
class Verdict:
    exit: int
    steps: list[Step] = field(default_factory=list)
    labels: tuple[int, int, int] = (0, 0, 0)  # scripted, unsigned, graded bundles of the last shared pass

    def statuses(self) -> dict[str, str]:
        return {s.name: s.status for s in self.steps}


def parse_step(step: str) -> tuple[str, list[str]]:
    """(script name, its arguments); a step naming no script of scripts/ is a usage error."""
    words = shlex.split(step)
    name = words[0].removesuffix(".py") if words else ""
    if not name or name == Path(__file__).stem or not (SCRIPTS / f"{name}.py").is_file():
        from skill_eval.core.errors import UsageError

        known = ", ".join(sorted(CHECKS))
        raise UsageError(f"step {step!r}: no script scripts/{name}.py", source="pipeline",
                         fix=f"name a script of scripts/ and its arguments, e.g. {known} or \"gen_pack --check\"")
    _check_arguments(step, name, words[1:])
    return name, words[1:]


def _check_arguments(step: str, name: str, args: list[str]) -> None:
    """A step's arguments as its command parses them: a typo is a usage error before any step runs."""
    if name not in COMMAND_OF:
        return
    from skill_eval import cli
    from skill_eval.core.errors import SkillEvalError, UsageError

    command = COMMAND_OF[name]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            cli.build_parser(command).parse_args([command, *args])
    except SystemExit:  # --help / --version: nothing wrong with the arguments
        return
    except SkillEvalError as exc:  # cli's parser raises UsageError for a bad argument
        raise UsageError(f"step {step!r}: {exc.message}", source="pipeline",
                         fix=f"see `python scripts/{name}.py --help`") from exc


def read_only(name: str, args: list[str]) -> bool:
    return name in CHECKS and (name != "gen_pack" or "--check" in args)


def run_script(name: str, args: list[str]) -> int:
    """`python scripts/NAME.py ARGS` in this interpreter: its exit code (a script ends in sys.exit)."""
    path = SCRIPTS / f"{name}.py"
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(path), *args]
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)  # a message (the script's "skill-eval is not installed" hint)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return 0


def compose(root: Path, steps: list[str] | tuple[str, ...], *, as_json: bool = False) -> Verdict:
    """Run `steps` on the host at `root`; the verdict (exit code, each step's status). Raises a
    SkillEvalError (exit 2) for an unknown step or an unusable configuration, before any step runs."""
    from skill_eval.commands._common import load_config
    from skill_eval.commands.pr import not_applicable

    parsed = [(step, *parse_step(step)) for step in steps]
    cfg = load_config(argparse.Namespace(root=root))
    verdict = Verdict(exit=0)
    with contextlib.ExitStack() as sharing:
        _share(sharing, as_json)
        for step, name, args in parsed:
            hint = not_applicable(cfg, CHECKS[name]) if name in CHECKS else None
            if hint:
                verdict.steps.append(Step(step, "not_applicable", hint=hint))
                if not as_json:
                    print(f"== {step}: not applicable — {hint}")
                continue
            verdict.steps.append(_run_step(step, name, [*args, "--root", str(root), *(["--json"] if as_json else [])], as_json))
            if not read_only(name, args):  # it may have written content: later steps read it afresh
                sharing.close()
                _share(sharing, as_json)
        from skill_eval.grading import regrade

        verdict.labels = regrade.evidence_labels()
    verdict.exit = 1 if any(s.status == "fail" for s in verdict.steps) else 0
    return verdict


def _share(stack: contextlib.ExitStack, as_json: bool) -> None:
    from skill_eval.grading import regrade

    stack.enter_context(regrade.sharing(passes=True, slim=not as_json))


def _run_step(step: str, name: str, argv: list[str], as_json: bool) -> Step:
    if not as_json:
        print(f"== {step}", flush=True)
        rc = run_script(name, argv)
        return Step(step, "ok" if rc == 0 else "fail", exit=rc)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = run_script(name, argv)
    try:
        detail = json.loads(buf.getvalue()) if buf.getvalue().strip() else None
    except json.JSONDecodeError:
        detail = buf.getvalue()
    return Step(step, "ok" if rc == 0 else "fail", exit=rc, detail=detail)


def evidence_label(verdict: Verdict) -> str:
    """What `skill-eval pr` says of scripted and unsigned evidence, from the last shared pass."""
    scripted, unsigned, graded = verdict.labels
    label = (f" [evidence: {scripted} of {graded} bundles recorded with SCRIPTED model turns or a LOCAL ENDPOINT — "
             "not a provider model's result]" if scripted else "")
    return label + (f" [UNSIGNED: {unsigned} of {graded} bundles carry no seal]" if unsigned else "")


def main(argv: list[str]) -> int:
    from skill_eval.core.errors import SkillEvalError

    ap = argparse.ArgumentParser(prog="pipeline.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="the host repository (default: .)")
    ap.add_argument("--json", action="store_true", help="one JSON object: ok and every step's status, exit and output")
    ap.add_argument("steps", nargs="*", metavar="STEP", help=f"scripts and their arguments (default: {', '.join(PR_STEPS)})")
    args = ap.parse_args(argv)
    try:
        verdict = compose(args.root, args.steps or PR_STEPS, as_json=args.json)
    except SkillEvalError as exc:
        if args.json:
            print(json.dumps({"error": exc.as_dict()}, indent=2, sort_keys=True))
        else:
            print(exc.render(), file=sys.stderr)
        return exc.exit_code
    if args.json:
        print(json.dumps({"ok": verdict.exit == 0, "steps": [s.__dict__ for s in verdict.steps]}, indent=2, sort_keys=True))
    else:
        summary = ", ".join(f"{s.name} {s.status}" for s in verdict.steps)
        print(f"pipeline: {'FAIL' if verdict.exit else 'ok'} — {summary}{evidence_label(verdict)}")
    return verdict.exit


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
