"""The semantic trigger scorer (skill_eval.checks.semantic) and its fusion with BM25 (checks.triggers).

Needs the extra skill-eval[semantic] (part of the `test` extra); without it every test that loads the
model is skipped with the install command as its reason. The corpora under tests/data/triggers/ were
written from user tasks for four public skills repositories (see their README); trailofbits-skills was
written and measured before any tuning on it (the held-out corpus)."""

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
REPOS = ("anthropics-skills", "obra-superpowers", "openai-skills", "trailofbits-skills", "vercel-agent-skills",
         "getsentry-skills")  # issue 27's corpora (the fused scorer's targets)
NEW = ("hashicorp-agent-skills", "firebase-agent-skills", "mattpocock-skills", "astronomer-agents", "stitch-skills",
       "posit-skills")  # issue 36
needs_model = pytest.mark.skipif(semantic.unavailable() is not None, reason=str(semantic.unavailable()))


@pytest.fixture(scope="module")
def embed() -> semantic.Model:
    if semantic.unavailable():
        pytest.skip(str(semantic.unavailable()))
    return semantic.load_model()


def _corpus(repo: str) -> tuple[dict[str, str], list[TriggerPrompt]]:
    descs = json.loads((DATA / repo / "descriptions.json").read_text())
    raw = yaml.safe_load((DATA / repo / "corpus.yaml").read_text())["prompts"]
    return descs, [TriggerPrompt(p["id"], p["prompt"], p["expected_skill"]) for p in raw]


def _fused(embed: semantic.Model, descs: dict[str, str], prompts: list[TriggerPrompt],
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
    model = semantic.load_model()  # a fresh load: weights and tokenizer from the installed wheel only
    bug, crash, cake = model.embed(["my program crashes with an exception", "the app fails with an error", "bake a cake"])
    assert len(bug) == 256
    assert semantic.cosine(bug, crash) > semantic.cosine(bug, cake)
    merge, merging, tarot = model.word_vectors(["merge", "merging", "tarot"])
    assert semantic.cosine(merge, merging) > 0.6 > semantic.cosine(merge, tarot)  # what BM25's stemmer misses
    assert model.embed([""]) == [[0.0] * 256]  # nothing to pool: a zero vector, not NaN


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
def test_fused_ranks_paraphrases(embed):
    descs, prompts = _corpus("anthropics-skills")
    by_id = {p.id: p for p in prompts}
    picked = [by_id[i] for i in ("frontend-1", "pdf-1")]
    bm25 = {p.prompt_id: p.predicted for p in triggers.predict(triggers.Scorer.build(descs), picked, 1.0, 0.0)}
    fused = {p.prompt_id: p for p in _fused(embed, descs, picked)}
    # BM25 missed both before 1cee610b ("page ... template" -> docx; one shared term for pdf); the prompt that
    # says "pdf" now counts the name as a term, and "landing page" no longer loses to docx
    assert bm25 == {"frontend-1": "frontend-design", "pdf-1": "pdf"}
    assert fused["frontend-1"].predicted == "frontend-design" and fused["pdf-1"].predicted == "pdf"
    ranked = sorted(fused["frontend-1"].scores.items(), key=lambda kv: -kv[1])
    assert ranked[0][0] == "frontend-design" and fused["frontend-1"].semantic["frontend-design"] > fused["frontend-1"].semantic["docx"]


def _accuracy(preds: list[triggers.Prediction]) -> float:
    return sum(p.correct for p in preds) / len(preds)


# Measured with the default [triggers] settings (tests/data/triggers/README.md has the table): a
# regression guard per corpus, BM25 alone and fused. trailofbits-skills is the held-out corpus: written
# from user tasks, scored before any tuning (0.75 with the previous fused defaults, and 0.75 with this
# method's first settings chosen on the other corpora), then included in the final fit.
# vercel-agent-skills (7 skills, 14 prompts) was written after the settings were final and scored once:
# a second held-out figure, and the one corpus where fused (11/14) is below BM25 alone (12/14).
# getsentry-skills (27 skills, 28 prompts, written from the skill names only) was added 2026-12-04 and scored
# once with these defaults: a third held-out figure, and again below BM25 alone (fused 22/28, BM25 25/28).
# BM25 figures since 1cee610b (the consistent stemmer, the name term, the coincidence rule: issue 36 item 5);
# fused figures unchanged on issue 27's corpora. The six issue-36 corpora: fused is below BM25 on five, equal on posit.
MEASURED = {"anthropics-skills": (23, 25), "obra-superpowers": (13, 17), "openai-skills": (20, 24),
            "trailofbits-skills": (21, 21), "vercel-agent-skills": (12, 11), "getsentry-skills": (26, 22),
            "hashicorp-agent-skills": (24, 18), "firebase-agent-skills": (20, 18), "mattpocock-skills": (33, 24),
            "astronomer-agents": (24, 23), "stitch-skills": (19, 16), "posit-skills": (15, 15)}  # correct prompts: (BM25 alone, fused)
TARGET = {"anthropics-skills": 0.90, "obra-superpowers": 0.90, "openai-skills": 0.90, "trailofbits-skills": 0.85,
          "vercel-agent-skills": 0.85, "getsentry-skills": 0.85}
FUSED_FITTED = ("anthropics-skills", "obra-superpowers", "openai-skills")  # where fused beats BM25
MISSED = {  # corpora where the target is not reached (strict xfail: reaching it fails the test, to be updated)
    "obra-superpowers": "fused 17/24 = 0.71 — obra/superpowers' skills are processes (\"before proposing fixes\", "
                        "\"before merging\") whose descriptions share neither words nor topic with the requests that "
                        "need them, and WordLlama's static word vectors do not bridge that",
    "vercel-agent-skills": "fused 11/14 = 0.79 held out: \"ship this Next.js site\" goes to the React skill (Next.js), "
                           "\"morph smoothly\" is not close enough to \"animations\" / \"view transitions\"",
    "getsentry-skills": "fused 22/28 = 0.79 held out (BM25 alone 25/28 = 0.89): \"open a pull request ... title and "
                        "description\" and \"code review of the changes on my branch\" go to create-branch, whose "
                        "description is close to any branch request",
}


@needs_model
@pytest.mark.parametrize("repo", REPOS + NEW)
def test_measured_accuracy_per_corpus(embed, repo):
    descs, prompts = _corpus(repo)
    bm25 = triggers.predict(triggers.Scorer.build(descs), prompts, 1.0, 0.0)
    fused = _fused(embed, descs, prompts)
    want_bm25, want_fused = MEASURED[repo]
    assert sum(p.correct for p in bm25) >= want_bm25 and sum(p.correct for p in fused) >= want_fused
    if repo in FUSED_FITTED:
        assert _accuracy(fused) > _accuracy(bm25)


@needs_model
@pytest.mark.parametrize("repo", [
    pytest.param(r, marks=pytest.mark.xfail(strict=True, reason=f"not reached: {MISSED[r]}") if r in MISSED else ())
    for r in REPOS])
def test_accuracy_target_per_corpus(embed, repo):
    """Issue 27 item 4's target: >= 0.90 on each of the three first corpora, >= 0.85 on the fourth (whose true
    held-out figure, before it was used for tuning, was 0.75: tests/data/triggers/README.md)."""
    descs, prompts = _corpus(repo)
    assert _accuracy(_fused(embed, descs, prompts)) >= TARGET[repo]


@needs_model
def test_no_negative_claimed_on_the_small_corpora(embed):
    for repo in ("anthropics-skills", "obra-superpowers", "openai-skills"):
        descs, prompts = _corpus(repo)
        assert [p.prompt_id for p in _fused(embed, descs, prompts) if p.expected is None and p.predicted] == [], repo


@needs_model
def test_soft_word_match_and_background_prior(embed):
    """The two parts the fused scorer adds to a plain cosine, each checked on what it exists for."""
    descs = {"finishing-a-development-branch": "Use when implementation is complete and you need to decide how to integrate the work",
             "requesting-code-review": "Use before merging to verify work meets requirements",
             "using-superpowers": "Use when starting any conversation - establishes how to find and use skills"}
    sem = semantic.SemanticScorer.build(descs, embed, semantic.EmbeddingCache(None))
    row = sem.score_many(["get someone to look over the diff before I merge"])[0]
    # "merge" shares no BM25 term with "merging" (stems merge / merg) but its word vector is close
    assert any(pair.startswith("merging~merge ") for pair in row["requesting-code-review"].pairs)
    assert row["requesting-code-review"].tokens > row["finishing-a-development-branch"].tokens
    # the prior: a generic description is close to every ordinary request, and that closeness is subtracted
    generic = sem.entries["using-superpowers"]
    raw = semantic.cosine(embed.embed(["What is the capital of Australia?"])[0], generic.vector)
    assert sem.score_many(["What is the capital of Australia?"])[0]["using-superpowers"].cosine == pytest.approx(
        raw - generic.prior_cosine, abs=1e-3)
    assert generic.prior_cosine > 0


def test_fused_counts_bm25_only_on_enough_terms():
    """With >= 5 skills, one shared word is no BM25 evidence in the fused score either (the min-terms rule)."""
    descs = {"time-skill": "constant time testing of crypto code", "b": "bake bread", "c": "brew coffee",
             "d": "build docker images", "e": "edit video clips"}
    s = triggers.Scorer.build(descs)
    t = Triggers()
    zero = {n: triggers.Semantic(0.0, 0.0) for n in descs}
    one = triggers.predict_fused(s, [zero], [TriggerPrompt("n", "what time zone is Tokyo in", "time-skill")], t)[0]
    assert one.bm25["time-skill"] > 0 and one.parts["time-skill"]["bm25_counted"] == 0.0
    assert one.scores["time-skill"] == 0.0 and one.predicted is None
    two = triggers.predict_fused(s, [zero], [TriggerPrompt("p", "constant time testing for my crypto", "time-skill")],
                                 Triggers(fused_min_score=0.05))[0]
    assert two.parts["time-skill"]["bm25_counted"] == 1.0 and two.predicted == "time-skill"
    # the semantic score: (1 - token_weight) * cosine + token_weight * tokens
    assert triggers.combine(triggers.Semantic(0.2, 0.4), Triggers(token_weight=0.25)) == pytest.approx(0.25)


class _FakeModel:
    """Deterministic stand-in for the cache test (no model needed): a 2-d vector from the text length."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    @staticmethod
    def word_vectors(words):
        return [[float(len(w)), 1.0] for w in words]


def test_cache_keyed_by_description_digest(tmp_path):
    pytest.importorskip("numpy", reason="the semantic scorer's arrays: numpy comes with pip install 'skill-eval[semantic]'")
    fake = _FakeModel()
    model = semantic.Model(fake.embed, fake.word_vectors)
    descs = {"a-skill": "Use for alpha work", "b": "Use for beta work"}
    cache = semantic.EmbeddingCache(tmp_path)
    first = semantic.SemanticScorer.build(descs, model, cache)
    docs = ["a skill: Use for alpha work", "b: Use for beta work"]
    assert fake.calls[0] == docs and cache.misses == 2  # then the background requests, for the priors
    assert fake.calls[1] == list(triggers.BACKGROUND)
    files = sorted(p.name for p in (tmp_path / semantic.CACHE_DIR).iterdir())
    assert files == sorted(f"{semantic.digest(semantic.document(n, d), semantic.cache_id())}.json" for n, d in descs.items())
    n_calls = len(fake.calls)
    again = semantic.EmbeddingCache(tmp_path)
    assert semantic.SemanticScorer.build(descs, model, again).entries == first.entries
    assert len(fake.calls) == n_calls and again.hits == 2  # unchanged descriptions: nothing embedded
    semantic.SemanticScorer.build({**descs, "b": "Use for gamma work"}, model, semantic.EmbeddingCache(tmp_path))
    assert fake.calls[-2] == ["b: Use for gamma work"]  # only the edited description (then the background)
    (tmp_path / semantic.CACHE_DIR / files[0]).write_text("{not json")
    semantic.SemanticScorer.build(descs, model, semantic.EmbeddingCache(tmp_path))
    assert len(fake.calls[-2]) == 1  # a corrupt entry is recomputed, not trusted
    other = semantic.EmbeddingCache(tmp_path, model_id="another-model")
    semantic.SemanticScorer.build(descs, model, other)
    assert other.misses == 2  # the model id is part of the key
    assert semantic.digest("x") != semantic.digest("x", "another-model")
    assert semantic.METHOD in semantic.cache_id()  # so is the method (the priors depend on it)


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
    expected = [line for line in lines if "receiving-code-review" in line and "fused" in line and "(bm25 0.00, semantic" in line]
    assert expected, lines  # shown although BM25 matched no term of it ...
    assert "cosine +" in expected[0] and "/ tokens " in expected[0] and "closest words " in expected[0]  # ... with its evidence
    assert any(line.strip().startswith("prompt tokens: 12, comments") for line in lines), lines
    missed = [p for p in _fused(embed, descs, prompts) if p.prompt_id == "brainstorm-1"]  # ranked below the top
    text = "\n".join(check_triggers.explain_lines(missed))
    assert "brainstorming (expected, rank" in text and "closest words" in text


@needs_model
def test_check_triggers_fused_end_to_end_caches_under_the_root(mini_repo, capsys):
    toml = mini_repo / "skill-eval.toml"
    toml.write_text(toml.read_text() + '\n[triggers]\nscorer = "fused"\nfused_min_score = 0.2\ntoken_weight = 0.6\n')
    assert config.load(mini_repo).triggers.scorer == "fused" and config.load(mini_repo).triggers.token_weight == 0.6
    rc = main(["check-triggers", "--root", str(mini_repo), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "fused" and rc == 0, out
    assert len(list((mini_repo / semantic.CACHE_DIR).glob("*.json"))) == 2  # one per description
    assert main(["check-triggers", "--root", str(mini_repo), "--scorer", "bm25", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "bm25"


def test_triggers_defaults_are_the_documented_ones():
    t = Triggers()
    assert (t.scorer, t.semantic_weight, t.token_weight, t.bm25_saturation, t.fused_min_score, t.fused_min_margin) == (
        "bm25", 0.85, 0.7, 16.0, 0.08, 0.0)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "TRIGGERS.md").read_text(encoding="utf-8")
    for key, value in (("semantic_weight", "0.85"), ("token_weight", "0.7"), ("bm25_saturation", "16"),
                       ("fused_min_score", "0.08"), ("fused_min_margin", "0.0")):
        assert f"| `{key}` | {value} |" in doc, key


def test_config_rejects_an_unknown_scorer(mini_repo, capsys):
    toml = mini_repo / "skill-eval.toml"
    toml.write_text(toml.read_text() + '\n[triggers]\nscorer = "neural"\n')
    assert main(["check-triggers", "--root", str(mini_repo)]) == 2
    assert "triggers" in capsys.readouterr().err
