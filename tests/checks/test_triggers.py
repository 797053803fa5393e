import json

from skill_eval.checks import triggers
from skill_eval.cli import main
from skill_eval.content import config


def test_mini_corpus_passes(mini_repo, capsys):
    rc = main(["check-triggers", "--root", str(mini_repo), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0, out
    assert out["metrics"]["per_skill"]["alpha"]["recall"] == 1.0
    assert out["metrics"]["negative_accuracy"] == 1.0


def test_description_claiming_everything_fails(mini_repo, capsys):
    p = mini_repo / "skills-src/beta/SKILL.md"
    greedy = "Use for everything, SQL migration orders table database widget gadget consumers library build breakage."
    p.write_text(p.read_text().replace("description: Explain which gadget consumers are affected by a gadget library change, using used-by scoping.", f"description: {greedy}"))
    rc = main(["check-triggers", "--root", str(mini_repo)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "negative accuracy 0.00" in out and "confusion: n-sql: expected None, predicted beta" in out


def test_skill_without_positive_prompt_fails_closed(mini_repo, capsys):
    p = mini_repo / "evals/trigger_corpus.yaml"
    p.write_text(p.read_text().replace("expected_skill: beta", "expected_skill: alpha"))
    assert main(["check-triggers", "--root", str(mini_repo)]) == 1
    assert "beta: the corpus has no positive prompt" in capsys.readouterr().out


def test_corpus_without_negatives_is_rejected(mini_repo, capsys):
    p = mini_repo / "evals/trigger_corpus.yaml"
    p.write_text("\n".join(line for line in p.read_text().splitlines() if "n-sql" not in line) + "\n")
    assert main(["check-triggers", "--root", str(mini_repo)]) == 2
    assert "no negative prompt" in capsys.readouterr().err


def test_tokenize_and_stem():
    assert triggers.tokenize("The Libraries were breaking, checks!") == ["library", "break", "check"]


def test_scores_prefer_specific_terms():
    s = triggers.Scorer.build({"a": "compare shared library binaries for abi breaks", "b": "review rest api openapi schemas"})
    scores = s.score("is the openapi schema change breaking?")
    assert scores["b"] > scores["a"]


def test_threshold_margin(mini_repo):
    cfg = config.load(mini_repo)
    s = triggers.Scorer.build({"a": "widget", "b": "widget"})
    preds = triggers.predict(s, [type("P", (), {"id": "x", "prompt": "widget", "expected_skill": "a"})()], cfg.thresholds.trigger_min_score, 0.1)
    assert preds[0].predicted is None  # a tie is not a prediction
