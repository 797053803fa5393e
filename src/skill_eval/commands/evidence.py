"""`skill-eval evidence [check]`: the evidence gate — complete, fresh, re-graded, gated.

Derives the expected bundle set from the selection rule (risk suite by default, as in
`nox -s pr`; `--suite full` for release), rejects missing / extra / duplicated / stale /
unreadable bundles, re-grades every bundle and applies pass^k (2, 6), the baselines
(1, 3; + 4, 5 with --stage release) and the live-trigger thresholds. Every pending
entry of agent-evals/skills/evidence-pending.yaml is printed loudly.
`--write-pending REASON` (re)writes that file from the full expected set minus the
evidence present, for bootstrapping a repository with no evidence yet.
Its other verbs: `evidence merge DIR...` (sharded recording, then this gate), `evidence compact`
and `evidence expand` (how bundles lie on disk; no gate).
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from skill_eval.commands._common import load_config
from skill_eval.commands._options import add_base_argument, add_verbs
from skill_eval.content.config import Config
from skill_eval.core.output import emit

if TYPE_CHECKING:
    from skill_eval.grading.graders import Grade

STAGES = ("merge", "release")  # = graders.STAGES (tests/grading/test_perf_identity.py); literal so `--help` imports no grader
PENDING = "evidence-pending.yaml"  # = evidence.PENDING

FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from skill_eval.commands import evidence_merge

    verbs = add_verbs(p, default="check")
    check = verbs.add_parser("check", help="the evidence gate (what `skill-eval evidence` alone runs)",
                             description=__doc__)
    add_gate_arguments(check)
    check.add_argument("--write-pending", metavar="REASON", default=None,
                       help=f"write {PENDING} listing every expected item without evidence, with REASON (no gate runs)")
    merge = verbs.add_parser("merge", help="union the evidence directories of sharded runs (docs/SHARDS.md), then run the gate",
                             description=evidence_merge.__doc__)
    evidence_merge.add_arguments(merge)
    add_gate_arguments(merge)
    # compact/expand: storage only, no gate (commands/evidence_compact.py; its docstring is not imported here)
    verbs.add_parser("compact", help="gzip raw streams and keep identical captured artifacts once (<evidence>/.objects/; "
                                     "seals stay valid; docs/EVIDENCE_STORAGE.md)")
    verbs.add_parser("expand", help="the inverse of compact: every bundle file plain again, the store removed")


def add_gate_arguments(p: argparse.ArgumentParser) -> None:
    """What the gate demands (`check`, and `merge`, which runs the gate on the merged evidence)."""
    p.add_argument("--suite", choices=("risk", "full"), default="risk", help="expected set to demand (default: risk)")
    add_base_argument(p, also="and the pack the moved digests are computed against (without it: every skill's suite)")
    p.add_argument("--stage", choices=STAGES, default="merge", help="release also gates 4/5 and accepts no pending entries")
    p.add_argument("--verbose", action="store_true", help="list every stale/missing bundle, not only the per-skill summary")


def summarise(errors: list[str], verbose: bool) -> Iterator[str]:
    """Stale and missing bundles as one line per skill with the fix first; other errors as they are."""
    per: dict[str, dict[str, int]] = {}
    rest = []
    for e in errors:
        kind, _, tail = e.partition(": ")
        where = tail.split("expected at ", 1)[-1] if kind == "missing" else tail
        if kind in ("stale", "missing") and where.startswith("evidence/"):
            who = where.split("/", 2)[1]
            head = tail.split(" (expected at", 1)[0]
            label = f"missing in cell {head.split(' in cell ', 1)[1]}" if kind == "missing" and " in cell " in head else kind
            per.setdefault(who, {}).setdefault(label, 0)
            per[who][label] += 1
        else:
            rest.append(e)
    lines: list[str] = []
    if per:
        lines.append(f"fix: record the evidence of {', '.join(sorted(per))}: `make eval-risk` (skill-eval run --suite risk "
                     "--base <merge-base>) and commit it; while it is re-recorded, defer stale evidence for review with "
                     "`skill-eval freshness --defer REASON`, or list missing items with `skill-eval evidence --write-pending REASON`")
        lines += [f"  {who}: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items())) for who, c in sorted(per.items())]
    yield from lines
    yield from (f"FAIL {e}" for e in (errors if verbose else rest))  # streamed: one line per bad bundle
    if per and not verbose:
        yield "  (per-bundle detail: skill-eval evidence --verbose)"


def graded(grades: Iterable[Grade], verbose: bool) -> Iterator[str]:
    """One line per failing skill-agent bundle (with --verbose: per failing bundle of any arm), then a
    count per comparison arm: its bundles are lift evidence (`skill-eval scorecard`), not gated per
    bundle. Each grade's failures are asked once, and only when the text is printed."""
    controls: dict[str, int] = {}
    for g in grades:
        failures = g.failures()
        if not failures:
            continue
        if verbose or g.meta.get("arm") == "skill-agent":
            yield f"  graded {g.bundle}: failures {failures}"
        else:
            arm: str = g.meta["arm"]  # (a grade's meta has every key)
            controls[arm] = controls.get(arm, 0) + 1
    for arm, n in sorted(controls.items()):
        yield f"  {arm}: {n} bundle(s) fail some dimension (comparison evidence, not gated; --verbose lists them)"


def seal_lines(r: Any) -> list[str]:
    """Who sealed the evidence, and a loud label on unsigned bundles the `warn` policy let through."""
    lines = []
    if r.signers:
        lines.append("  sealed by: " + ", ".join(f"{who} ({n})" for who, n in sorted(r.signers.items())))
    if r.unsigned:
        lines.append(f"  UNSIGNED: {r.unsigned} bundle(s) carry no seal (evals.signatures = \"warn\"): nothing proves "
                     "the runner made them (docs/SIGNING.md)")
    lines += [f"  IGNORED {line}" for line in getattr(r, "ignored_judgments", ())]  # named, never counted (warn)
    return lines


def trust_lines(cfg: Config, lines: list[str]) -> dict[str, Any]:
    """Where the trust policy came from, and every edit of it the change makes (in force once merged)."""
    from skill_eval.content import trust

    pol = trust.policy(cfg)
    lines.append(f"  trust policy from {pol.label}: signatures = {pol.signatures!r}, "
                 f"{len(pol.signers)} allowed signer(s)" + ("" if pol.signers else f" — {pol.no_root_reason()}"))
    lines += [f"  TRUST CHANGE (takes effect once merged, not in this check): {f}" for f in pol.findings]
    return {"base": pol.base.ref if pol.base else None, "commit": pol.base.commit if pol.base else None,
            "label": pol.label, "signatures": pol.signatures, "signers": len(pol.signers), "findings": list(pol.findings)}


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if getattr(args, "action", None) in ("compact", "expand"):  # storage only: no gate (core.stored)
        from skill_eval.commands import evidence_compact

        return evidence_compact.compact(args, cfg)
    if getattr(args, "action", None) == "merge":  # union the shards' evidence, then this gate runs on it
        from skill_eval.commands import evidence_merge

        refused = evidence_merge.merge(args, cfg)
        if refused is not None:
            return refused
    if getattr(args, "write_pending", None) is not None:  # (`check` only)
        return _write_pending(args, cfg)
    from skill_eval.grading import evidence

    r = evidence.check(cfg, args.suite, args.base, args.stage, keep_reasons=args.json)
    lines = [f"evidence: {r.found} bundle(s) found, {r.expected} expected ({r.suite} suite, {r.stage} stage)"]
    lines += seal_lines(r)
    trust_info = trust_lines(cfg, lines)
    if r.pending:
        bar = "!" * 72
        lines += [bar, f"!! {len(r.pending)} expected item(s) have NO evidence yet (evidence-pending.yaml) "
                       "or stale evidence being re-recorded (evidence-rerecord.yaml):"]
        lines += [f"!!   {p}" for p in r.pending]
        lines.append(bar)
    # streamed, not listed: thousands of bundles make thousands of lines (memory stays flat)
    out_lines = itertools.chain(lines, summarise(r.errors, args.verbose), graded(r.grades, args.verbose),
                                ["evidence: ok" if r.passed else f"evidence: {len(r.errors)} problem(s)"])
    payload = {"passed": r.passed, "suite": r.suite, "stage": r.stage, "expected": r.expected, "found": r.found,
               "errors": r.errors, "pending": r.pending, "unsigned": r.unsigned, "signers": r.signers, "trust": trust_info,
               "ignored_judgments": r.ignored_judgments,
               # built only for --json: text output never shows it, and it is O(bundles) in memory
               "grades": [g.to_json(r.stage) for g in r.grades] if args.json else []}
    if getattr(args, "merge_report", None) is not None:
        payload["merge"] = args.merge_report
    emit(args, out_lines, payload)
    return 0 if r.passed else 1


def _write_pending(args: argparse.Namespace, cfg: Config) -> int:
    from skill_eval.core import fsio, strict
    from skill_eval.grading import evidence

    body = evidence.pending_from_expected(cfg, args.write_pending)
    head = ("# Expected evidence not recorded yet (schemas/evidence_pending.schema.json).\n"
            "# `skill-eval evidence` prints every entry; an entry that gains evidence must be removed.\n")
    import yaml

    text = head + yaml.safe_dump(body, sort_keys=False, width=120)
    strict.loads_yaml(text, evidence.PENDING)
    fsio.write_file(cfg.root, f"{cfg.evals_root}/{evidence.PENDING}", text)
    emit(args, [f"wrote {evidence.PENDING} ({len(body['pending'])} pending)"], {"pending": body["pending"]})
    return 0
