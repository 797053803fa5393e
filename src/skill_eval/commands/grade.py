"""`skill-eval grade BUNDLE...`: replay-grade recorded bundles (DESIGN §9).

Human output lists every check with its reasons; `--json` prints, for one bundle, its
grade object, and for several, `{"passed": bool, "bundles": [grade, ...]}`. A grade
object carries at least bundle, kind, dimensions (each with status, passed, reasons),
failed_dimensions and zero_tolerance_failed (sorted ints). Exit 0 when every gating
check passes (merge: 1, 2, 3, 6, oracles, activation, bundle integrity; release adds
4 and 5, where "not judged" is incomplete), 1 otherwise, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from skill_eval.commands._common import load_config
from skill_eval.commands._options import add_base_argument
from skill_eval.content.config import Config
from skill_eval.core.errors import EXIT_CHECK_FAILED, EXIT_OK, InputError
from skill_eval.core.output import emit
from skill_eval.grading.graders import STAGES, Catalog, Grade

FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundles", nargs="+", type=Path, metavar="BUNDLE", help="bundle directories (each holds meta.json)")
    p.add_argument("--stage", choices=STAGES, default="merge",
                   help="merge: gate on 1,2,3,6 (+oracles); release: also 4,5, with 'not judged' incomplete")
    add_base_argument(p)


def describe(g: Grade, stage: str) -> list[str]:
    head = "PASS" if g.passed(stage) else "FAIL"
    lines = [f"{head} {g.bundle} ({g.kind or 'unknown kind'}: {g.item or '?'})"]
    for name, c in sorted(g.checks.items(), key=lambda kv: (not kv[0].isdigit(), kv[0])):
        label = f"dimension {name}" if name.isdigit() else name
        lines.append(f"  {label}: {c.status}" + (f" ({c.note})" if c.note else ""))
        for r in c.reasons:
            if c.status in ("fail", "not_judged") or name in ("4", "5"):
                lines.append(f"    - {r}")
    if g.zero_tolerance_failed():
        lines.append(f"  zero-tolerance failures: {g.zero_tolerance_failed()}")
    return lines


def run(args: argparse.Namespace) -> int:
    for b in args.bundles:
        if not b.exists():
            raise InputError("no such bundle directory", source=b)
    cfg = load_config(args)
    catalog = Catalog(cfg)
    graded = [_grade(cfg, catalog, b, args.stage) for b in args.bundles]
    grades = [g for g, _line, _found in graded]
    seals = [_seal(cfg, b, args.stage) for b in args.bundles]
    seals = [(f"{line}\n{jline[0]}" if jline else line, bad or bool(jline and jline[1]), v)
             for (line, bad, v), (_g, jline, _found) in zip(seals, graded, strict=True)]
    ok = all(g.passed(args.stage) for g in grades) and not any(bad for _line, bad, _v in seals)
    lines = [line for g, (seal_line, _bad, _v) in zip(grades, seals, strict=True)
             for line in [*describe(g, args.stage), seal_line]]
    if len(grades) > 1:
        lines.append(f"{sum(g.passed(args.stage) for g in grades)}/{len(grades)} bundles pass ({args.stage} gate)")
        payload = {"passed": ok, "stage": args.stage, "bundles": [g.to_json(args.stage) for g in grades]}
        for entry, (_line, bad, v), (_g, _j, found) in zip(payload["bundles"], seals, graded, strict=True):
            entry["seal"] = {"state": v.state, "principal": v.principal, "reason": v.reason, "fails": bad}
            entry["judgments"] = {"state": found.state, "principal": found.principal, "reason": found.reason}
    else:
        payload = grades[0].to_json(args.stage)
        _line, bad, v = seals[0]
        payload["seal"] = {"state": v.state, "principal": v.principal, "reason": v.reason, "fails": bad}
        found = graded[0][2]
        payload["judgments"] = {"state": found.state, "principal": found.principal, "reason": found.reason}
        payload["passed"] = payload.get("passed", True) and not bad
    emit(args, lines, payload)
    for b, (g, jline, found) in zip(args.bundles, graded, strict=True):
        if not g.passed(args.stage) or (jline and jline[1]):
            _report_unreadable(b, cfg, found.reason if found.state == "invalid" else None)
    return EXIT_OK if ok else EXIT_CHECK_FAILED


def _grade(cfg: Config, catalog: Catalog, path: Path, stage: str) -> tuple[Grade, tuple[str, bool] | None, Any]:
    """The grade, counting only judgments that verify (grading/judgments.py), and the judgments line when a
    judgments.json is ignored (with whether it fails: under evals.signatures = "require" and at release)."""
    from skill_eval.content import trust
    from skill_eval.content.evals import GOLDEN_DIR
    from skill_eval.grading import judgments, regrade

    # the golden corpus (hand-written bundles that test the graders, never evidence) keeps its fixture judgments
    golden = path.resolve().is_relative_to((cfg.evals_dir / GOLDEN_DIR).resolve())
    g, found = judgments.graded(path, catalog, regrade.signers_of(cfg), fixture=golden)
    if not found.ignored:
        return g, None, found
    fails = trust.policy(cfg).signatures == "require" or stage == "release"
    return g, (f"  judgments: IGNORED — {found.reason}" + (" (fails: signatures required)" if fails else ""), fails), found


def _seal(cfg: Config, path: Path, stage: str) -> tuple[str, bool, Any]:
    """(the seal line, whether it fails the bundle, the verdict): a forged seal always fails; an unsigned
    bundle fails under evals.signatures = "require" and at the release stage (docs/SIGNING.md)."""
    from skill_eval.core import seal
    from skill_eval.grading import evidence, regrade

    root = evidence.evidence_dir(cfg).resolve()
    real = path.resolve()
    committed = real.is_relative_to(root)  # the policy governs the evidence tree, not golden or scratch bundles
    rel = real.relative_to(root).as_posix() if committed else "/".join(real.parts[-5:])
    v = seal.verify(path, rel, regrade.signers_of(cfg))
    if v.state == "signed":
        return f"  seal: signed by {v.principal}", False, v
    if v.state == "invalid":
        return f"  seal: FORGED — {v.reason}", True, v
    from skill_eval.content import trust

    why = trust.policy(cfg).unsigned_problem(rel, stage, v.reason) if committed else None
    note = f" ({v.reason})" if v.reason else ""
    return f"  seal: UNSIGNED{note}{f' (fails: {why})' if why else ''}", why is not None, v


def _report_unreadable(path: Path, cfg: Config, judgments: str | None = None) -> None:
    """One stderr line per failing bundle whose files could not be read strictly, naming the
    first such file: the grade (stdout) says which checks that poisons, stderr says what to fix.
    `judgments`: why its judgments.json could not be read (grading/judgments.py), if so."""
    from skill_eval.grading import bundle as bundle_mod

    problems: list[Any] = [*bundle_mod.load(path, max_bytes=cfg.max_bundle_file_bytes).problems,
                           *([judgments] if judgments else [])]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        first = " ".join(str(problems[0]).split())
        print(f"skill-eval: grade: {path}/{first}{more}", file=sys.stderr)
