"""RunRecords -> the scorecard object (schemas/scorecard.schema.json). Pure: no disk, no clock.

Per (skill, agent, model) cell and per arm: outcome counts and the infra-error status, pass rate,
dimension pass rates, pass^k for the zero-tolerance dimensions, verdict accuracy, cost; then
lift for each arm pair (lift.lift, one vote per scenario), split into the main scenarios and
the holdout ones, calibrated by the cell's A/A recording when there is one; the cost-regression
gate; activation precision/recall per (agent, model) from trigger runs. The Markdown and HTML
renderers read only this object, so the three outputs cannot disagree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from skill_eval.reporting import lift
from skill_eval.reporting.scorecard.runs import AA, MAIN, RunRecord

SCORECARD_VERSION = 1
# (treatment, control): what each comparison asks. `released:*` pairs are added per released ref.
PAIRS = (("skill-agent", "baseline"), ("skill", "docs"), ("siblings", "skill-agent"))
DIMENSIONS = ("1", "2", "3", "4", "5", "6", "oracle")
PASS_K_DIMS = ("2", "6")


def _r(x: float | None) -> float | None:
    """6 significant digits: enough for rates, and a $0.0000123 run cost does not round to 0."""
    return None if x is None else float(f"{x:.6g}")


def _runs(records: Iterable[RunRecord]) -> list[lift.Run]:
    return [lift.Run(r.item, r.passed, r.passed is None, r.incomplete) for r in records]


def arm_summary(records: Sequence[RunRecord], settings: lift.Settings, k: int) -> dict[str, Any]:
    outcomes: dict[str, int] = defaultdict(int)
    for r in records:
        outcomes[r.outcome] += 1
    infra = lift.infra_error_rate(_runs(records))
    scored = [r for r in records if r.scored]
    unfinished: dict[str, int] = defaultdict(int)
    for r in scored:
        if r.incomplete:
            unfinished[r.incomplete] += 1
    dims: dict[str, dict[str, Any]] = {}
    for d in DIMENSIONS:
        statuses = [r.checks[d] for r in scored if r.checks.get(d, "not_applicable") != "not_applicable"]
        judged = [s for s in statuses if s in ("pass", "fail")]
        if statuses:
            passed = sum(1 for s in judged if s == "pass")
            dims[d] = {"passed": passed, "total": len(judged), "not_judged": len(statuses) - len(judged),
                       "rate": _r(passed / len(judged)) if judged else None}
    by_scn: dict[str, list[RunRecord]] = defaultdict(list)
    for r in scored:
        by_scn[r.item].append(r)
    pass_k = {}
    for d in PASS_K_DIMS:
        full = [runs for runs in by_scn.values()
                if len(runs) >= k and all(x.checks.get(d, "not_applicable") != "not_applicable" for x in runs)]
        if full:
            ok = sum(1 for runs in full if all(x.checks[d] == "pass" for x in runs))
            pass_k[d] = {"k": k, "passed": ok, "scenarios": len(full), "rate": _r(ok / len(full)),
                         "short": len(by_scn) - len(full)}
    judged_v = [r.verdict_correct for r in scored if r.verdict_correct is not None]
    resolved = sum(1 for r in scored if r.passed)
    costs = [r.cost_usd for r in scored if r.cost_usd is not None]
    sources = sorted({r.cost_source for r in scored})
    cost_known = len(costs) == len(scored) and bool(scored)

    def mean(xs: list[float]) -> float | None:
        return _r(sum(xs) / len(xs)) if xs else None

    return {
        "runs": len(records), "scenarios": len({r.item for r in records}), "outcomes": dict(sorted(outcomes.items())),
        "infra_error_rate": _r(infra), "status": "error" if infra > settings.max_infra_error_rate else "ok",
        "incomplete": {"runs": sum(unfinished.values()), "rate": _r(lift.incomplete_rate(_runs(records))),
                       "reasons": dict(sorted(unfinished.items()))},
        "scored": len(scored), "passed": resolved, "pass_rate": _r(resolved / len(scored)) if scored else None,
        "dimensions": dims, "pass_k": pass_k,
        "verdict_accuracy": {"correct": sum(judged_v), "total": len(judged_v),
                             "rate": _r(sum(judged_v) / len(judged_v)) if judged_v else None},
        "cost": {
            "source": sources[0] if len(sources) == 1 else "mixed" if sources else "unknown",
            "mean_usd_per_run": mean(costs) if cost_known else None,
            "total_usd": _r(sum(costs)) if cost_known else None,
            "resolved": resolved,
            "usd_per_resolved": _r(sum(costs) / resolved) if cost_known and resolved else None,
            "mean_tokens_in": mean([r.tokens_in for r in scored if r.tokens_in is not None]),
            "mean_tokens_out": mean([r.tokens_out for r in scored if r.tokens_out is not None]),
            "mean_turns": mean([r.turns for r in scored if r.turns is not None]),
            "mean_wall_clock_s": mean([r.wall_clock_s for r in scored if r.wall_clock_s is not None]),
            "why": _cost_why(scored, cost_known, resolved),
        },
        "contaminated": sorted({r.path for r in records if r.contamination}),
    }


def _cost_why(scored: list[Any], known: bool, resolved: int) -> str | None:
    """Why usd_per_resolved is missing (None when it is there): the runs' own reasons, or nothing resolved."""
    if not scored:
        return "no scored run"
    if not known:
        missing = [r for r in scored if r.cost_usd is None]
        reasons = sorted({r.cost_missing for r in missing if r.cost_missing})
        share = "" if len(missing) == len(scored) else f"{len(missing)} of {len(scored)} runs: "
        return share + ("; ".join(reasons) or "unknown")
    return None if resolved else "no run resolved the question"


def _pairs(arms: Iterable[str]) -> list[tuple[str, str]]:
    present = set(arms)
    # the main question (skill-agent vs baseline) is always asked; the others once their own arm exists
    out = [(t, c) for t, c in PAIRS if (t, c) == PAIRS[0] and t in present or ({t, c} - {"skill-agent"}) & present]
    out += [("skill-agent", a) for a in sorted(present) if a.startswith("released:")]
    return out


def cell_lifts(by_arm: dict[str, list[RunRecord]], calibrations: dict[str, lift.Calibration],
               settings: lift.Settings) -> list[dict[str, Any]]:
    out = []
    for t, c in _pairs(by_arm):
        # the treatment arm's own A/A when it is usable, else any usable A/A of the same cell
        usable = [x for x in calibrations.values() if x.status == "ok"]
        calib = next((x for x in usable if x.arm == t), usable[0] if usable else None)
        for split in ("main", "holdout"):
            want_holdout = split == "holdout"
            t_runs = [r for r in by_arm.get(t, []) if r.holdout == want_holdout]
            c_runs = [r for r in by_arm.get(c, []) if r.holdout == want_holdout]
            if want_holdout and not (t_runs or c_runs):
                continue
            missing = [a for a, rs in ((t, t_runs), (c, c_runs)) if not rs]
            dirty = sorted({p for r in t_runs + c_runs for p in r.contamination})
            if missing:
                result = lift.Lift(t, c, lift.INDETERMINATE, 0, reason=f"no {' / '.join(missing)} runs recorded",
                                    runs={t: len(t_runs), c: len(c_runs)})
            else:
                blocked = ""
                if dirty:
                    bad = sorted(r.path for r in t_runs + c_runs if r.contamination)
                    blocked = f"contaminated control bundle(s) {bad[:3]}: {dirty[0]}"
                result = lift.lift(t, c, _runs(t_runs), _runs(c_runs), settings, calibration=calib, blocked=blocked)
            entry = result.to_json()
            entry["split"] = split
            entry["calibration_arm"] = calib.arm if calib is not None and calib.status == "ok" else None
            out.append(entry)
    return out


def cost_gate(cell: dict[str, Any], threshold: float) -> list[str]:
    """Treatment cost per run more than `threshold` over its baseline/released control: a problem with the numbers."""
    problems = []
    arms = cell["arms"]
    for t, c in _pairs(arms):
        if not (c == "baseline" or c.startswith("released:")) or t not in arms or c not in arms:
            continue
        tc, cc = arms[t]["cost"]["mean_usd_per_run"], arms[c]["cost"]["mean_usd_per_run"]
        if tc is None or cc is None or cc <= 0:
            continue
        rise = tc / cc - 1
        if rise > threshold:
            tag = " [scripted]" if cell["scripted"] and cell["model"] != "scripted" else ""
            problems.append(f"cost regression: {cell['skill']} {cell['agent']}/{cell['model']}{tag}: {t} "
                            f"${tc:.4f}/run vs {c} ${cc:.4f}/run (+{rise:.1%} > {threshold:.0%}; "
                            f"sources {arms[t]['cost']['source']}/{arms[c]['cost']['source']})")
    return problems


def activation(records: Sequence[RunRecord], settings: lift.Settings) -> list[dict[str, Any]]:
    """Precision/recall per skill and overall, per (agent, model), from trigger runs (main replicate)."""
    groups: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for r in records:
        if r.kind == "trigger" and r.replicate == MAIN:
            groups[(r.agent, r.model)].append(r)
    out = []
    for (agent, model), runs in sorted(groups.items()):
        infra = lift.infra_error_rate(_runs(runs))
        scored = [r for r in runs if r.scored]
        skills = sorted({r.expected_skill for r in scored if r.expected_skill} | {s for r in scored for s in r.activated})
        per_skill, tot = {}, [0, 0, 0]
        for s in skills:
            tp = sum(1 for r in scored if r.expected_skill == s and s in r.activated)
            fp = sum(1 for r in scored if r.expected_skill != s and s in r.activated)
            fn = sum(1 for r in scored if r.expected_skill == s and s not in r.activated)
            tiers = sorted({r.activated[s] for r in scored if s in r.activated})
            per_skill[s] = {"tp": tp, "fp": fp, "fn": fn, "precision": _r(tp / (tp + fp)) if tp + fp else None,
                            "recall": _r(tp / (tp + fn)) if tp + fn else None, "tiers": tiers}
            tot = [tot[0] + tp, tot[1] + fp, tot[2] + fn]
        neg = [r for r in scored if r.expected_skill is None]
        tp, fp, fn = tot
        out.append({
            "agent": agent, "model": model, "scripted": any(r.scripted for r in runs),
            "adapter_tiers": sorted({r.adapter_tier for r in runs}), "runs": len(runs), "infra_error_rate": _r(infra),
            "status": "error" if infra > settings.max_infra_error_rate else "ok",
            "precision": _r(tp / (tp + fp)) if tp + fp else None, "recall": _r(tp / (tp + fn)) if tp + fn else None,
            "negatives": len(neg), "negatives_clean": sum(1 for r in neg if not r.activated),
            "per_skill": per_skill,
        })
    return out


def agreement(records: Sequence[RunRecord]) -> dict[str, Any]:
    """Cross-agent agreement: per (skill, arm, scenario) recorded in two or more agent/model cells, the
    cell's verdict (pass: every scored main run passed; fail: any failed; unscored: none scored), and
    the scenarios whose scored verdicts differ between cells (the matrix's disagreement list)."""
    by: dict[tuple[str, str, str], dict[str, list[bool | None]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.kind == "behavioral" and r.skill and r.replicate == MAIN:
            by[(r.skill, r.arm, r.item)][f"{r.agent}/{r.model}"].append(r.passed)
    compared, disagree = 0, []
    for (skill, arm, item), cells in sorted(by.items()):
        if len(cells) < 2:
            continue
        compared += 1
        verdicts = {c: "fail" if any(p is False for p in ps) else "pass" if ps and all(p is True for p in ps) else "unscored"
                    for c, ps in sorted(cells.items())}
        if len(set(verdicts.values()) - {"unscored"}) > 1:
            disagree.append({"skill": skill, "arm": arm, "scenario": item, "cells": verdicts})
    cells_seen = sorted({c for cells in by.values() for c in cells})
    return {"cells": cells_seen, "compared": compared, "disagree": disagree}


def build(records: Sequence[RunRecord], settings: lift.Settings, *, k: int, cost_regression: float,
          audit: dict[str, Any], problems: Sequence[str] = (), generated_by: str = "skill-eval") -> dict[str, Any]:
    cells_in: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for r in records:
        if r.kind == "behavioral" and r.skill:
            cells_in[(r.skill, r.agent, r.model)].append(r)
    cells: list[dict[str, Any]] = []
    gate: list[str] = []
    for (skill, agent, model), runs in sorted(cells_in.items()):
        main: dict[str, list[RunRecord]] = defaultdict(list)
        aa: dict[str, list[RunRecord]] = defaultdict(list)
        for r in runs:
            (aa if r.replicate == AA else main)[r.arm].append(r)
        calibrations = {arm: lift.calibrate(arm, _runs(main.get(arm, [])), _runs(aa_runs), settings)
                        for arm, aa_runs in sorted(aa.items())}
        cell: dict[str, Any] = {
            "skill": skill, "agent": agent, "model": model, "scripted": any(r.scripted for r in runs),
            "arms": {arm: arm_summary(rs, settings, k) for arm, rs in sorted(main.items())},
            "aa": [c.to_json() for c in calibrations.values()],
            "lift": cell_lifts(main, calibrations, settings),
        }
        cell["cost_gate"] = cost_gate(cell, cost_regression)
        gate += cell["cost_gate"]
        cells.append(cell)
    return {
        "schema_version": SCORECARD_VERSION,
        "generated_by": generated_by,
        "settings": {"bootstrap_samples": settings.bootstrap_samples, "min_paired_scenarios": settings.min_paired_scenarios,
                     "seed": settings.seed, "confidence": settings.confidence,
                     "max_infra_error_rate": settings.max_infra_error_rate,
                     "max_incomplete_rate": settings.max_incomplete_rate, "cost_regression": cost_regression, "k": k},
        "bundles": len(records) + len(problems),
        "scripted": any(r.scripted for r in records),
        "problems": list(problems),
        "contaminated": {r.path: list(r.contamination) for r in records if r.contamination},
        "cells": cells,
        "activation": activation(records, settings),
        "agreement": agreement(records),
        "audit": audit,
        "gates": {"cost_regression": {"passed": not gate, "threshold": cost_regression, "problems": gate}},
    }
