"""One scoring path for a trigger corpus: `check-triggers` and `propose --from-check triggers` both call
`predict_corpus`, so the method they judge by cannot drift apart (BM25 in checks.triggers; the fused
scorer's embedding model in checks.semantic, imported only when configured)."""

from __future__ import annotations

from collections.abc import Mapping

from skill_eval.checks.triggers import Prediction, Scorer, predict, predict_fused
from skill_eval.content.config import Config
from skill_eval.content.evals import TriggerPrompt


def predict_corpus(cfg: Config, descriptions: Mapping[str, str], prompts: list[TriggerPrompt],
                   method: str | None = None) -> list[Prediction]:
    """Every corpus prompt scored against the descriptions by `method` (default: [triggers] scorer) — the
    one scoring path of `check-triggers` and of `propose --from-check triggers`."""
    scorer = Scorer.build(dict(descriptions))
    if (method or cfg.triggers.scorer) == "fused":
        from skill_eval.checks import semantic  # the optional extra: imported only when configured

        sem = semantic.SemanticScorer.build(dict(descriptions), semantic.load_model(), semantic.EmbeddingCache(cfg.root))
        return predict_fused(scorer, sem.score_many([p.prompt for p in prompts]), prompts, cfg.triggers)
    return predict(scorer, prompts, cfg.thresholds.trigger_min_score, cfg.thresholds.trigger_min_margin)
