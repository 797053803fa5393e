"""`skill-eval lift`: does the skill make the agent better, by how much, and is that more than noise?

Per (skill, agent, model) and arm pair (skill-agent vs baseline, skill vs docs, candidate vs
released, siblings vs skill-agent): one vote per scenario, seeded paired bootstrap CI, exact sign
test, A/A noise floor; INDETERMINATE below the configured minimum of paired scenarios, INCONCLUSIVE
over arms with too many unfinished runs, ERROR for infra-error-dominated or contaminated cells. A
report (exit 0: it prints no check as failed) unless --require-lift, which is a gate: every main-split
skill-agent vs baseline comparison must be LIFT, and each one that is not is printed as a FAIL line
and exits 1.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval.content import config
from skill_eval.core.output import emit
from skill_eval.reporting import scorecard as sc
from skill_eval.reporting.lift import LIFT


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--evidence", type=Path, default=None, help="evidence root (default: <evals root>/evidence)")
    p.add_argument("--skill", default=None, help="only this skill")
    p.add_argument("--require-lift", action="store_true",
                   help="exit 1 unless every main-split skill-agent vs baseline comparison is LIFT")


def run(args: argparse.Namespace) -> int:
    cfg = config.load(args.root)
    card = sc.compute(cfg, args.evidence).card
    rows, lines = [], []
    for cell in card["cells"]:
        if args.skill and cell["skill"] != args.skill:
            continue
        tag = " [scripted]" if cell["scripted"] else ""
        for e in cell["lift"]:
            rows.append({"skill": cell["skill"], "agent": cell["agent"], "model": cell["model"], "scripted": cell["scripted"], **e})
            fig = (f"{e['effect']:+.3f} CI [{e['ci'][0]:+.3f}, {e['ci'][1]:+.3f}] sign p={e['sign_test']['p']:.3g}"
                   if e["effect"] is not None else "")
            lines.append(f"{cell['skill']} {cell['agent']}/{cell['model']}{tag} {e['treatment']} vs {e['control']} "
                         f"[{e['split']}]: {e['verdict']} n={e['n_paired']} {fig} — {e['reason']}")
    if not lines:
        lines.append("lift: no behavioural evidence")
    wanted = [r for r in rows if r["split"] == "main" and (r["treatment"], r["control"]) == ("skill-agent", "baseline")]
    failed = args.require_lift and (not wanted or any(r["verdict"] != LIFT for r in wanted))
    if failed:
        lines += [f"FAIL --require-lift: {r['skill']} {r['agent']}/{r['model']} skill-agent vs baseline is {r['verdict']}"
                  for r in wanted if r["verdict"] != LIFT] or ["FAIL --require-lift: no main-split skill-agent vs baseline comparison"]
    emit(args, lines, {"lift": rows, "scripted": card["scripted"], "settings": card["settings"], "passed": not failed})
    return 1 if failed else 0
