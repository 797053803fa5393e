"""`skill-eval check-triggers`: the L1s static trigger check."""

from __future__ import annotations

import argparse

from skill_eval.checks import triggers
from skill_eval.commands._common import load_config
from skill_eval.content import evals
from skill_eval.content.skills import discover
from skill_eval.core.output import emit

NAME = "check-triggers"
HELP = "L1s: BM25-score the labelled trigger corpus against skill descriptions; gate precision/recall"
FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)
DESCRIPTION = triggers.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true", help="print every prompt's scores, not only confusions")
    p.add_argument("--explain", action="store_true",
                   help="for every prompt: the prediction, why, and each top skill's matched terms with their weights")


def _terms(terms: dict[str, float]) -> str:
    return ", ".join(f"{t} {w:.2f}" for t, w in sorted(terms.items(), key=lambda kv: (-kv[1], kv[0]))) or "no matched term"


def explain_lines(preds: list[triggers.Prediction]) -> list[str]:
    """Per prompt: expected -> predicted (ok/WRONG), the reason, and matched terms per top skill."""
    lines = []
    for p in preds:
        mark = "ok" if p.correct else "WRONG"
        lines.append(f"  {p.prompt_id}: expected {p.expected or '(none)'}, predicted {p.predicted or '(none)'} [{mark}] — {p.reason}")
        for skill, terms in p.matched.items():
            lines.append(f"      {skill} {p.scores[skill]:.2f}: {_terms(terms)}")
    return lines


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    skills = discover(cfg)
    prompts = evals.load_trigger_corpus(cfg, skills=set(skills))
    descriptions = {n: str(s.frontmatter.get("description", "")) for n, s in skills.items()}
    scorer = triggers.Scorer.build(descriptions)
    t = cfg.thresholds
    preds = triggers.predict(scorer, prompts, t.trigger_min_score, t.trigger_min_margin)
    m = triggers.metrics(preds, sorted(skills))
    problems = triggers.gate(cfg, m)
    lines = []
    for skill, row in m["per_skill"].items():
        prec = _fmt(row["precision"]) if row["predicted"] else "n/a (never predicted)"
        lines.append(f"  {skill}: precision {prec}, recall {_fmt(row['recall'])} ({row['true_positives']}/{row['expected']})")
    lines.append(f"  negatives: {_fmt(m['negative_accuracy'])} correctly claimed by no skill ({m['negatives']} prompts)")
    for c in m["confusions"]:
        best = next(iter(c["matched"].items()), None)
        why = f"; {best[0]} matched {_terms(best[1])}" if best else ""
        lines.append(f"  confusion: {c['prompt']}: expected {c['expected']}, predicted {c['predicted']} ({c['reason']}{why})")
    for pair in m["competing"]:
        lines.append(f"  competing descriptions: {' / '.join(pair['skills'])} ({pair['prompts']} prompt(s) confused or within 80%)")
    if args.verbose:
        for p in preds:
            lines.append(f"  {p.prompt_id}: -> {p.predicted} {p.scores}")
    if args.explain:
        lines += explain_lines(preds)
    lines += [f"  FAIL: {p}" for p in problems]
    needed = triggers.min_terms(len(skills))
    lines.append(f"check-triggers: {'FAIL' if problems else 'ok'} — {len(prompts)} prompts, accuracy {_fmt(m['accuracy'])} "
                 f"({len(skills)} skills: a prediction needs {needed} matched term(s); --explain shows them)")
    emit(args, lines, {"ok": not problems, "problems": problems, "metrics": m, "method": "bm25",
                       "min_terms": needed, "predictions": [p.__dict__ for p in preds]})
    return 1 if problems else 0
