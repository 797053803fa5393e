"""`skill-eval evidence`: the evidence gate — complete, fresh, re-graded, gated.

Derives the expected bundle set from the selection rule (risk suite by default, as in
`nox -s pr`; `--suite full` for release), rejects missing / extra / duplicated / stale /
unreadable bundles, re-grades every bundle and applies pass^k (2, 6), the baselines
(1, 3; + 4, 5 with --stage release) and the live-trigger thresholds. Every pending
entry of agent-evals/skills/evidence-pending.yaml is printed loudly.
`--write-pending REASON` (re)writes that file from the full expected set minus the
evidence present, for bootstrapping a repository with no evidence yet.
"""

from __future__ import annotations

import argparse

from skill_eval import evidence, strict
from skill_eval.commands._common import load_config
from skill_eval.graders import STAGES
from skill_eval.output import emit

NAME = "evidence"
HELP = "check that committed evidence is complete, fresh and passes the gates (re-grades every bundle)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", choices=("risk", "full"), default="risk", help="expected set to demand (default: risk)")
    p.add_argument("--base", default=None, help="git ref whose pack the moved digests are computed against")
    p.add_argument("--stage", choices=STAGES, default="merge", help="release also gates 4/5 and accepts no pending entries")
    p.add_argument("--write-pending", metavar="REASON", default=None,
                   help=f"write {evidence.PENDING} listing every expected item without evidence, with REASON")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if args.write_pending is not None:
        body = evidence.pending_from_expected(cfg, args.write_pending)
        head = ("# Expected evidence not recorded yet (schemas/evidence_pending.schema.json).\n"
                "# `skill-eval evidence` prints every entry; an entry that gains evidence must be removed.\n")
        import yaml

        text = head + yaml.safe_dump(body, sort_keys=False, width=120)
        strict.loads_yaml(text, evidence.PENDING)
        (cfg.evals_dir / evidence.PENDING).write_text(text)
        emit(args, [f"wrote {evidence.PENDING} ({len(body['pending'])} pending)"], {"pending": body["pending"]})
        return 0
    r = evidence.check(cfg, args.suite, args.base, args.stage)
    lines = [f"evidence: {r.found} bundle(s) found, {r.expected} expected ({r.suite} suite, {r.stage} stage)"]
    if r.pending:
        bar = "!" * 72
        lines += [bar, f"!! {len(r.pending)} expected item(s) have NO evidence yet (evidence-pending.yaml):"]
        lines += [f"!!   {p}" for p in r.pending]
        lines.append(bar)
    lines += [f"FAIL {e}" for e in r.errors]
    failing = [g for g in r.grades if g.failures()]
    for g in failing:
        lines.append(f"  graded {g.bundle}: failures {g.failures()}")
    lines.append("evidence: ok" if r.passed else f"evidence: {len(r.errors)} problem(s)")
    payload = {"passed": r.passed, "suite": r.suite, "stage": r.stage, "expected": r.expected, "found": r.found,
               "errors": r.errors, "pending": r.pending, "grades": [g.to_json(r.stage) for g in r.grades]}
    emit(args, lines, payload)
    return 0 if r.passed else 1
