"""The committed local-model calibration (agent-evals/skills/calibration/) on the scorecard.

Why a tree of its own: an A/A pair recorded with a real, stochastic model (SmolLM2-135M over
llama.cpp, `make calibrate-local`) is what shows how noisy two recordings of the *same* arm
really are — scripted evidence cannot, its turns are identical by construction. Those bundles
are not evidence for the merge gate (wrong model for shipping decisions), so they live outside
evidence/, and the gate never sees them.

What the scorecard shows from it, per (skill, agent, model) cell of the calibration:
- the A/A calibration (`lift.calibrate`): paired scenarios, false-difference rate, noise floor;
- the false-difference rate per check (dimension 1..6, oracle): on how many paired scenarios
  the two recordings disagree about a check's pass rate — the noise a real model puts into each
  dimension even when the overall pass rate is flat;
- INCONCLUSIVE (the section's status `inconclusive`) when more than `[stats] max_incomplete_rate`
  of a replicate's runs never finished (budget_stop, no final answer, no subject call and no claim):
  a 0 % false-difference rate between two recordings that both stopped before the question is an
  artefact of the budget, not a measured floor (issue 28: the first committed calibration was that);
- `lift_on_aa`: `lift.lift` run on the A/A pair itself (A as treatment, A' as control) with
  `SEEDS` bootstrap seeds: any LIFT / REGRESSION / significant call there is a false positive
  of the statistics, and the count is shown (a test asserts it is 0 on the committed data).

The floor is not applied to other models' lift: a 135M model's sampling noise is not Claude's.
It is a measured reference, labelled with its model. Staleness is shown, never an error: the
harness (runner, adapters, prompts) moves after a calibration is recorded, and every bundle
whose digests no longer match the current content makes the section say "stale calibration"
(re-record with `make calibrate-local`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skill_eval.content import freshness
from skill_eval.content.config import Config
from skill_eval.core import schemas, strict
from skill_eval.core.errors import SkillEvalError, message_of
from skill_eval.grading import bundle as bundle_mod
from skill_eval.grading.graders import Catalog
from skill_eval.reporting import lift
from skill_eval.reporting.scorecard.runs import AA, MAIN, RunRecord, bundle_dirs, collect

TREE = "calibration"
MANIFEST = "manifest.json"
KIND = "local-calibration"
SEEDS = 20  # bootstrap seeds lift_on_aa tries
CHECKS = ("1", "2", "3", "4", "5", "6", "oracle")
STALE = "stale calibration"
INCONCLUSIVE = "inconclusive"  # some cell's A/A is over runs that mostly never finished: it measures nothing


def _runs(records: Sequence[RunRecord]) -> list[lift.Run]:
    return [lift.Run(r.item, r.passed, r.passed is None, r.incomplete) for r in records]


def check_rates(records: Sequence[RunRecord], check: str) -> dict[str, float]:
    """Per scenario: share of scored runs whose `check` passed (runs where it was judged)."""
    tally: dict[str, list[int]] = {}
    for r in records:
        status = r.checks.get(check)
        if r.scored and status in ("pass", "fail"):
            t = tally.setdefault(r.item, [0, 0])
            t[0] += status == "pass"
            t[1] += 1
    return {s: p / n for s, (p, n) in tally.items() if n}


def check_noise(main: Sequence[RunRecord], aa: Sequence[RunRecord]) -> dict[str, dict[str, Any]]:
    out = {}
    for check in CHECKS:
        diffs = lift.paired_differences(check_rates(main, check), check_rates(aa, check))
        if diffs:
            flips = sum(1 for d in diffs.values() if d != 0)
            out[check] = {"n_paired": len(diffs), "false_difference_rate": round(flips / len(diffs), 6),
                          "max_abs_difference": round(max(abs(d) for d in diffs.values()), 6)}
    return out


def _check_runs(records: Sequence[RunRecord], check: str) -> list[lift.Run]:
    """Runs scored on one check alone (pass/fail where it was judged)."""
    return [lift.Run(r.item, r.checks[check] == "pass", incomplete=r.incomplete)
            for r in records if r.scored and r.checks.get(check) in ("pass", "fail")]


def lift_on_aa(arm: str, main: Sequence[RunRecord], aa: Sequence[RunRecord], settings: lift.Settings,
               seeds: int = SEEDS) -> dict[str, Any]:
    """The lift statistics on data with no effect by construction, over `seeds` bootstrap seeds.

    Asked of the overall pass (merge) and of every check on its own: a 135M model fails the
    overall bar almost always, so the per-check outcomes are where its noise shows.
    """
    outcomes = {"overall": (_runs(main), _runs(aa))}
    outcomes.update({f"check {c}": (_check_runs(main, c), _check_runs(aa, c)) for c in CHECKS})
    verdicts: dict[str, int] = defaultdict(int)
    called: list[str] = []
    for name, (a, b) in outcomes.items():
        if not a or not b:
            continue
        for i in range(seeds):
            v = lift.lift(arm, f"{arm} (A/A)", a, b, dataclasses.replace(settings, seed=settings.seed + i)).verdict
            verdicts[v] += 1
            # with no calibration a significant effect is UNCALIBRATED: on A/A data that is a false call too
            if v in (lift.LIFT, lift.REGRESSION, lift.UNCALIBRATED):
                called.append(f"{name} seed {settings.seed + i}: {v}")
    return {"seeds": seeds, "questions": sorted(n for n, (a, b) in outcomes.items() if a and b),
            "verdicts": dict(sorted(verdicts.items())), "false_calls": len(called), "examples": called[:5]}


def _stale(cfg: Config, tree: Path, cur: freshness.Current) -> list[str]:
    out = []
    for path in bundle_dirs(tree):
        try:
            meta = strict.load_json(bundle_mod.safe_path(path, "meta.json"), max_bytes=cfg.max_bundle_file_bytes)
        except SkillEvalError as exc:
            out.append(f"{path.relative_to(tree).as_posix()}: {message_of(exc)}")
            continue
        problems = freshness.check_bundle_freshness(cfg, meta, cur) if isinstance(meta, dict) else ["meta.json is not an object"]
        if problems:
            out.append(f"{path.relative_to(tree).as_posix()}: {problems[0]}")
    return out


def read(cfg: Config, settings: lift.Settings, *, catalog: Catalog | None = None, tree: Path | None = None,
         cur: freshness.Current | None = None) -> dict[str, Any] | None:
    """The calibration section of the scorecard, or None when no calibration tree is committed."""
    tree = tree if tree is not None else cfg.evals_dir / TREE
    if not tree.is_dir():
        return None
    problems: list[str] = []
    manifest: dict[str, Any] = {}
    try:
        manifest = schemas.validate(strict.load_json(bundle_mod.safe_path(tree, MANIFEST)), "calibration_manifest",
                                    tree / MANIFEST)
    except SkillEvalError as exc:
        problems.append(f"{TREE}/{MANIFEST}: {message_of(exc)}")
    records, unreadable = collect(cfg, tree, catalog=catalog or Catalog(cfg))
    problems += [p.replace("evidence/", f"{TREE}/", 1) for p in unreadable]
    if manifest:
        wrong = sorted({r.path for r in records if r.model != manifest["model"] or r.scripted})
        problems += [f"{TREE}/{p}: not a {manifest['model']} recording with a real model (manifest labels)" for p in wrong[:5]]
    stale = _stale(cfg, tree, cur or freshness.current(cfg))
    cells_in: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for r in records:
        if r.kind == "behavioral" and r.skill:
            cells_in[(r.skill, r.agent, r.model)].append(r)
    cells = []
    hollow = False
    for (skill, agent, model), runs in sorted(cells_in.items()):
        by: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
        for r in runs:
            by[(r.arm, r.replicate)].append(r)
        for arm in sorted({a for a, _ in by}):
            main, aa = by.get((arm, MAIN), []), by.get((arm, AA), [])
            calib = lift.calibrate(arm, _runs(main), _runs(aa), settings)
            hollow |= calib.status == lift.INCONCLUSIVE
            secs = [r.wall_clock_s for r in runs if r.arm == arm and r.wall_clock_s is not None]
            cells.append({
                "skill": skill, "agent": agent, "model": model, "arm": arm, "runs": {MAIN: len(main), AA: len(aa)},
                "outcomes": dict(sorted(_count(r.outcome for r in main + aa).items())),
                "pass_rate": {MAIN: _rate(main), AA: _rate(aa)},
                # over runs that never finished, per-check agreement is as hollow as the overall floor: not shown
                "calibration": calib.to_json(), "checks": {} if calib.status == lift.INCONCLUSIVE else check_noise(main, aa),
                "lift_on_aa": lift_on_aa(arm, main, aa, settings) if main and aa else None,
                "mean_wall_clock_s": round(sum(secs) / len(secs), 2) if secs else None,
            })
    status = "invalid" if problems else INCONCLUSIVE if hollow else STALE if stale else "ok"
    return {
        "status": status, "kind": manifest.get("kind", KIND), "model": manifest.get("model"),
        "scripted": manifest.get("scripted"), "recorded_at": manifest.get("recorded_at"),
        "command": manifest.get("command", "make calibrate-local"), "bundles": len(records),
        "stale": {"bundles": len(stale), "examples": stale[:3]}, "problems": problems, "cells": cells,
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in values:
        out[v] += 1
    return out


def _rate(records: Sequence[RunRecord]) -> float | None:
    scored = [r for r in records if r.scored]
    return round(sum(1 for r in scored if r.passed) / len(scored), 6) if scored else None
