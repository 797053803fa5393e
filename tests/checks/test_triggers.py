import json

from skill_eval.checks import triggers
from skill_eval.cli import main
from skill_eval.content import config
from skill_eval.content.config import Triggers
from skill_eval.content.evals import TriggerPrompt


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
    assert triggers.tokenize("The Libraries were breaking, checks!") == ["librari", "break", "check"]


def test_scores_prefer_specific_terms():
    s = triggers.Scorer.build({"a": "compare shared library binaries for abi breaks", "b": "review rest api openapi schemas"})
    scores = s.score("is the openapi schema change breaking?")
    assert scores["b"] > scores["a"]


def test_threshold_margin(mini_repo):
    cfg = config.load(mini_repo)
    s = triggers.Scorer.build({"a": "widget", "b": "widget"})
    preds = triggers.predict(s, [type("P", (), {"id": "x", "prompt": "widget", "expected_skill": "a"})()], cfg.thresholds.trigger_min_score, 0.1)
    assert preds[0].predicted is None  # a tie is not a prediction


def test_stemmer_gives_a_word_and_its_inflections_one_stem():
    """One consistent stemmer: the split the issue found (image -> image, images -> imag) is gone."""
    families = [("image", "images", "imaging", "imaged"), ("merge", "merges", "merging", "merged"),
                ("library", "libraries"), ("branch", "branches"), ("cache", "caches", "cached", "caching"),
                ("test", "tests", "testing", "tested"), ("policy", "policies"), ("string", "strings"),
                ("setting", "settings"), ("plan", "plans"), ("planning", "plannings"), ("process", "processes"),
                ("add", "adds", "adding", "added"), ("embed", "embeds"), ("status", "statuses"), ("copy", "copies", "copied")]
    for family in families:
        assert len({triggers.stem(w) for w in family}) == 1, {w: triggers.stem(w) for w in family}
    assert triggers.stem("pdf") == "pdf" and triggers.stem("analysis") == "analysis" and triggers.stem("need") == "need"
    s = triggers.Scorer.build({"img": "resize and crop images", "b": "bake bread", "c": "brew coffee",
                               "d": "deploy the server", "e": "edit video clips"})
    assert s.contributions("crop this image and resize it")["img"].keys() >= {"crop", triggers.stem("image")}


def test_name_shortcut_only_for_distinctive_names():
    """One matched word predicts a skill only when it is a distinctive word of its name ("pdf", "crashlytics"):
    a common word in a name ("action", "git", "finish") is no evidence alone."""
    descs = {"agentic-actions-auditor": "audit CI workflow permissions for prompt injection",
             "finishing-a-development-branch": "decide how to integrate completed work",
             "git-commit-helper": "write conventional commit messages",
             "firebase-crashlytics": "set up crash reporting for mobile apps",
             "e": "bake bread", "f": "brew coffee"}
    s = triggers.Scorer.build(descs)
    prompts = [TriggerPrompt("n1", "What did the city council decide about the action plan for parks?", None),
               TriggerPrompt("n2", "I finished the novel last night, what should I read next?", None),
               TriggerPrompt("n3", "How do I undo my last git push to the wrong remote?", None),
               TriggerPrompt("p1", "Add Crashlytics to the Android build", "firebase-crashlytics")]
    got = {p.prompt_id: p for p in triggers.predict(s, prompts, 1.0, 0.0)}
    assert got["n1"].predicted is None and got["n2"].predicted is None and got["n3"].predicted is None
    assert "a prediction needs 2" in got["n1"].reason
    assert got["p1"].predicted == "firebase-crashlytics"
    assert got["p1"].reason == "1 matched term, 'crashlytic', names firebase-crashlytics and no other skill"
    assert not s.names_only(triggers.stem("action"), "agentic-actions-auditor")
    assert not s.names_only("git", "git-commit-helper") and not s.names_only("finish", "finishing-a-development-branch")


def test_exact_tie_is_worded_as_a_tie():
    s = triggers.Scorer.build({"a": "widget", "b": "widget"})
    [p] = triggers.predict(s, [TriggerPrompt("x", "widget", "a")], 1.0, 0.0)
    assert p.predicted is None
    assert p.reason.startswith("tie: a, b score the same") and "do not separate" in p.reason and "margin" not in p.reason
    [near] = triggers.predict(triggers.Scorer.build({"a": "widget gadget", "b": "widget"}),
                              [TriggerPrompt("y", "widget gadget", "a")], 1.0, 100.0)
    assert "trigger_min_margin 100.0" in near.reason and not near.reason.startswith("tie")  # a margin stays a margin
    fused = triggers.predict_fused(s, [{"a": 0.5, "b": 0.5}], [TriggerPrompt("x", "widget", "a")], Triggers())[0]
    assert fused.predicted is None and fused.reason.startswith("tie: a, b")


def test_negated_clause_claims_nothing():
    """'Don't use for Firestore ...' must not make a skill claim the Firestore prompts."""
    kept = triggers.in_scope("Deploys sites. Don't use for Firestore or Auth. Use for hosting.")
    assert "Firestore" not in kept and "Auth" not in kept and "Deploys sites." in kept and "Use for hosting." in kept
    s = triggers.Scorer.build({"hosting": "Deploys static sites. Don't use for Firestore queries or rules.",
                               "firestore": "Cloud database: collections and documents"})
    assert "firestor" not in s.contributions("write a Firestore query")["hosting"]


def test_two_ordinary_words_outside_the_name_are_coincidence():
    descs = {"stacks": "deploy components to each environment from config files", "b": "bake bread",
             "c": "brew coffee", "d": "edit video clips", "e": "tune guitars"}
    s = triggers.Scorer.build(descs)
    [p] = triggers.predict(s, [TriggerPrompt("n", "set up a file for my development environment", None)], 1.0, 0.0)
    assert p.predicted is None and "coincidence" in p.reason
    [q] = triggers.predict(s, [TriggerPrompt("p", "deploy the components to the staging environment", "stacks")], 1.0, 0.0)
    assert q.predicted == "stacks"  # "components" is no background word


def test_prompt_naming_a_skill_adds_the_name_as_a_term():
    descs = {"grill-me": "A relentless interview to sharpen a plan", "batch-grill-me": "asks every question at once",
             "c": "brew coffee", "d": "edit video clips", "e": "tune guitars"}
    [p] = triggers.predict(triggers.Scorer.build(descs), [TriggerPrompt("g", "Grill me about my plan", "grill-me")], 1.0, 0.0)
    assert p.predicted == "grill-me" and "named:grill-me" in p.matched["grill-me"]
    assert "named:batch-grill-me" not in p.matched.get("batch-grill-me", {})  # "batch" is not said


def test_description_gap_finding_names_skill_and_missing_words():
    """A missed positive whose words the expected description lacks is a finding at that description's line,
    naming the prompt's missing words; a miss between two descriptions that both have the words is not."""
    descs = {"diagnosing-bugs": "Diagnosis loop for hard bugs. Use when something is broken or failing.",
             "obsidian-vault": "Search and create notes in the Obsidian vault", "c": "brew coffee",
             "d": "edit video clips", "e": "tune guitars", "f": "edit audio clips"}
    s = triggers.Scorer.build(descs)
    prompts = [TriggerPrompt("bug-1", "The export job silently drops rows now and then", "diagnosing-bugs"),
               TriggerPrompt("clip-1", "edit the clips", "f"), TriggerPrompt("n", "bake a cake", None)]
    preds = triggers.predict(s, prompts, 1.0, 0.0)
    gaps = triggers.description_gaps(s, preds, prompts, {"diagnosing-bugs": ("skills/diagnosing-bugs/SKILL.md", 3)})
    assert [g.subject for g in gaps] == ["diagnosing-bugs:bug-1"]  # clip-1 is a tie, not a gap
    g = gaps[0]
    assert (g.rule, g.level, g.where, g.line) == ("trigger-description-gap", "warning", "skills/diagnosing-bugs/SKILL.md", 3)
    assert "Missing: " in g.message and all(w in g.message for w in ("export", "silently", "drops", "rows"))
    assert "no description uses them" in g.message
    assert g.as_dict()["id"] == "trigger-description-gap:skills/diagnosing-bugs/SKILL.md:diagnosing-bugs:bug-1"
    assert str(g).startswith("warning: skills/diagnosing-bugs/SKILL.md:3: diagnosing-bugs: its description does not cover")


def test_check_triggers_reports_the_gap_with_file_and_line(mini_repo, capsys):
    p = mini_repo / "evals/trigger_corpus.yaml"
    p.write_text(p.read_text().rstrip("\n") + '\n  - {id: gap-1, prompt: "quantum teleportation of llamas", expected_skill: beta}\n')
    main(["check-triggers", "--root", str(mini_repo), "--json"])  # the gate may pass (recall 0.5): a finding still names the gap
    out = json.loads(capsys.readouterr().out)
    [f] = [f for f in out["findings"] if f["id"].endswith(":beta:gap-1")]
    assert f["rule"] == "trigger-description-gap" and f["where"].endswith("beta/SKILL.md") and f["line"] >= 2
    assert "llamas" in f["message"] and "quantum" in f["message"]
    main(["check-triggers", "--root", str(mini_repo)])
    assert "trigger-description-gap:" in capsys.readouterr().out


def test_gate_failures_are_findings_with_rule_file_and_line(mini_repo, capsys):
    """What a SARIF result needs, for every threshold failure: rule id, level, file, line where one exists."""
    p = mini_repo / "skills-src/beta/SKILL.md"
    greedy = "Use for everything, SQL migration orders table database widget gadget consumers library build breakage."
    p.write_text(p.read_text().replace("description: Explain which gadget consumers are affected by a gadget library change, using used-by scoping.", f"description: {greedy}"))
    assert main(["check-triggers", "--root", str(mini_repo), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    errors = [f for f in out["findings"] if f["level"] == "error"]
    assert [f["message"] for f in errors] == out["problems"]  # one finding per gate failure, same words
    neg = next(f for f in errors if f["rule"] == "trigger-negative-accuracy")
    assert neg["where"] == "evals/trigger_corpus.yaml" and "line" not in neg
    p.write_text(p.read_text().replace(f"description: {greedy}", "description: Bake sourdough bread."))
    assert main(["check-triggers", "--root", str(mini_repo), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    recall = next(f for f in out["findings"] if f["rule"] == "trigger-recall")
    lines = (mini_repo / recall["where"]).read_text().splitlines()
    assert recall["where"].endswith("beta/SKILL.md") and lines[recall["line"] - 1].startswith("description:")
    assert recall["level"] == "error" and recall["id"] == f"trigger-recall:{recall['where']}:beta"
