"""`skill-eval check-triggers`: the L1s static trigger check."""

from __future__ import annotations

import argparse

from skill_eval import content
from skill_eval.checks import triggers
from skill_eval.commands._common import load_config
from skill_eval.output import emit
from skill_eval.skills import discover

NAME = "check-triggers"
HELP = "L1s: BM25-score the labelled trigger corpus against skill descriptions; gate precision/recall"
DESCRIPTION = triggers.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true", help="print every prompt's scores, not only confusions")


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    skills = discover(cfg)
    prompts = content.load_trigger_corpus(cfg, skills=set(skills))
    descriptions = {n: str(s.frontmatter.get("description", "")) for n, s in skills.items()}
    scorer = triggers.Scorer.build(descriptions)
    t = cfg.thresholds
    preds = triggers.predict(scorer, prompts, t.trigger_min_score, t.trigger_min_margin)
    m = triggers.metrics(preds, sorted(skills))
    problems = triggers.gate(cfg, m)
    lines = []
    for skill, row in m["per_skill"].items():
        lines.append(f"  {skill}: precision {_fmt(row['precision'])}, recall {_fmt(row['recall'])} ({row['true_positives']}/{row['expected']})")
    lines.append(f"  negatives: {_fmt(m['negative_accuracy'])} correctly claimed by no skill ({m['negatives']} prompts)")
    for c in m["confusions"]:
        lines.append(f"  confusion: {c['prompt']}: expected {c['expected']}, predicted {c['predicted']} {c['scores']}")
    if args.verbose:
        for p in preds:
            lines.append(f"  {p.prompt_id}: -> {p.predicted} {p.scores}")
    lines += [f"  FAIL: {p}" for p in problems]
    lines.append(f"check-triggers: {'FAIL' if problems else 'ok'} — {len(prompts)} prompts, accuracy {_fmt(m['accuracy'])}")
    emit(args, lines, {"ok": not problems, "problems": problems, "metrics": m, "method": "bm25", "predictions": [p.__dict__ for p in preds]})
    return 1 if problems else 0
