"""`skill-eval check-triggers`: the L1s static trigger check."""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval.checks import trigger_scoring, triggers
from skill_eval.commands import explain
from skill_eval.commands._ci_output import emit_findings, result_of
from skill_eval.commands._common import load_config
from skill_eval.commands._options import flag_or_config
from skill_eval.content import evals
from skill_eval.content.skills import discover
from skill_eval.core import ci_formats
from skill_eval.core.output import emit

FORMATS = ci_formats.FORMATS  # text, json, sarif, junit (--format)
FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)
DESCRIPTION = f"{triggers.__doc__}\n\n{explain.CORPUS_FORMAT}"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # keep the corpus example's lines
    p.add_argument("--verbose", action="store_true", help="print every prompt's scores, not only confusions")
    p.add_argument("--explain", action="store_true",
                   help="for every prompt: the prediction, why, and each top skill's matched terms with their weights")
    p.add_argument("--scorer", choices=("bm25", "fused"), default=None,
                   help="override [triggers] scorer: bm25 (lexical) or fused (BM25 + the packaged embedding model, "
                        "extra skill-eval[semantic])")


def _terms(terms: dict[str, float]) -> str:
    return ", ".join(f"{t} {w:.2f}" for t, w in sorted(terms.items(), key=lambda kv: (-kv[1], kv[0]))) or "no matched term"


def explain_lines(preds: list[triggers.Prediction]) -> list[str]:
    """Per prompt: expected -> predicted (ok/WRONG), the reason, the score and matched terms of each top skill
    and of the expected skill wherever it ranks, and the prompt's tokens when no term matched any skill."""
    lines = []
    for p in preds:
        mark = "ok" if p.correct else "WRONG"
        lines.append(f"  {p.prompt_id}: expected {p.expected or '(none)'}, predicted {p.predicted or '(none)'} [{mark}] — {p.reason}")
        ranked = sorted(p.scores, key=lambda n: (-p.scores[n], n))
        for skill, terms in p.matched.items():
            rank = ranked.index(skill) + 1
            label = f"{skill} (expected, rank {rank})" if skill == p.expected and rank > 1 else skill
            if p.semantic:  # fused: both halves of the score, and the words behind the semantic one
                part = p.parts.get(skill, {})
                raw = p.bm25.get(skill, 0.0)
                bm = f"bm25 {raw:.2f}{' not counted: too few terms' if raw > 0 and not part.get('bm25_counted', 1.0) else ''}"
                sem = f"semantic {p.semantic.get(skill, 0.0):.2f} = cosine {part.get('cosine', 0.0):+.2f} / tokens {part.get('tokens', 0.0):+.2f}"
                close = f"; closest words {', '.join(p.pairs[skill])}" if p.pairs.get(skill) else ""
                lines.append(f"      {label} fused {p.scores[skill]:.2f} ({bm}, {sem}): {_terms(terms)}{close}")
            else:
                lines.append(f"      {label} {p.scores[skill]:.2f}: {_terms(terms)}")
        if not any(v > 0 for v in (p.bm25 or p.scores).values()):  # no term of the prompt in any description
            lines.append(f"      prompt tokens: {', '.join(p.tokens) or '(none: only stop-words)'} — none is in any description")
    return lines


def _description_line(root: Path, skill_dir: str) -> tuple[str, int]:
    """The skill's SKILL.md (repository-relative) and the 1-based line of its frontmatter `description:` (0 if
    not found): where a description-gap finding points."""
    where = f"{skill_dir}/SKILL.md"
    try:
        text = (root / where).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return where, 0
    for i, line in enumerate(text.splitlines()[1:], start=2):
        if line.strip() == "---":
            break
        if line.startswith("description:"):
            return where, i
    return where, 0


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    skills = discover(cfg)
    prompts = evals.load_trigger_corpus(cfg, skills=set(skills))
    if not prompts:  # every prompt is still a draft written by `init`
        emit(args, [f"check-triggers: not applicable — {cfg.evals_root}/{evals.TRIGGER_CORPUS} holds only drafts; rewrite "
                    "them as your users would ask and delete their `draft: true` lines (`skill-eval explain corpus`)"],
             {"ok": True, "not_applicable": True, "problems": []})
        return 0
    descriptions = {n: str(s.frontmatter.get("description", "")) for n, s in skills.items()}
    method = flag_or_config(getattr(args, "scorer", None), cfg.triggers.scorer)
    preds = trigger_scoring.predict_corpus(cfg, descriptions, prompts, method)
    m = triggers.metrics(preds, sorted(skills))
    where = {n: _description_line(cfg.root, s.dir) for n, s in skills.items()}
    failed = triggers.gate_findings(cfg, m, where, f"{cfg.evals_root}/{evals.TRIGGER_CORPUS}")
    problems = [f.message for f in failed]
    gaps = triggers.description_gaps(triggers.Scorer.build(descriptions), preds, prompts, where)
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
    lines += [f"  {g}" for g in gaps]
    lines += [f"  FAIL: {p}" for p in problems]
    needed = triggers.min_terms(len(skills))
    how = (f"fused: BM25 + prior-corrected cosine and word match, semantic weight {cfg.triggers.semantic_weight}, "
           f"min score {cfg.triggers.fused_min_score}"
           if method == "fused" else f"bm25: a prediction needs {needed} matched term(s)")
    lines.append(f"check-triggers: {'FAIL' if problems else 'ok'} — {len(prompts)} prompts, accuracy {_fmt(m['accuracy'])} "
                 f"({len(skills)} skills; {how}; --explain shows the evidence)")
    payload = {"ok": not problems, "problems": problems, "metrics": m, "method": method,
               "min_terms": needed, "findings": [f.as_dict() for f in failed + gaps],
               "predictions": [p.__dict__ for p in preds]}
    results = [result_of(f.as_dict()) for f in failed + gaps]
    emit_findings(args, "skill-eval check-triggers", results, lines, payload,
                  checks=[ci_formats.CiCheck("trigger corpus", not problems, "; ".join(problems))])
    return 1 if problems else 0
