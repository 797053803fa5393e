"""Interop (issue 11): skill-creator evals in and back out, and `explain` (Harbor: test_harbor.py)."""

import json

import pytest

from skill_eval.cli import main

# skill-creator's documented evals.json example (references/schemas.md) and trigger-eval set (Format A).
EVALS = {"skill_name": "example-skill",
         "evals": [{"id": 1, "prompt": "User's example prompt", "expected_output": "Description of expected result",
                    "files": ["evals/files/sample1.pdf"], "expectations": ["The output includes X", "The skill used script Y"]}]}
TRIGGERS = [{"query": "Create a skill for PDF extraction", "should_trigger": True},
            {"query": "What's the weather tomorrow?", "should_trigger": False}]


@pytest.fixture
def host(tmp_path):
    root = tmp_path / "r"
    skill = root / "skills" / "example-skill"
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: example-skill\ndescription: Create skills for PDF extraction. "
                                    "Use when asked to create a skill.\n---\nx\n")
    (skill / "evals" / "evals.json").write_text(json.dumps(EVALS))
    (skill / "evals" / "trigger-eval.json").write_text(json.dumps(TRIGGERS))
    (skill / "evals" / "files" / "sample1.pdf").write_bytes(b"%PDF-1.4\n")
    (root / "skill-eval.toml").write_text(
        'schema_version = 1\n[skills]\nsource = "skills"\npublished = []\n[evals]\nroot = "evals"\n')
    return root


def test_import_evals_json_round_trips_the_documented_example(host, capsys):
    skill = host / "skills" / "example-skill"
    assert main(["import", "evals-json", str(skill), "--root", str(host), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trigger_prompts_added"] == 2 and out["scenarios_staged"] == 1
    unmapped = " ".join(out["unmapped"])
    assert "expected_output is judged prose" in unmapped and "2 expectation(s) are judged free text" in unmapped
    assert "should_trigger: false became expected_skill: null" in unmapped
    corpus = (host / "evals" / "trigger_corpus.yaml").read_text()
    assert "expected_skill: example-skill" in corpus and "expected_skill: null" in corpus
    assert (host / "evals/fixtures/example-skill-eval-1/sample1.pdf").read_bytes() == b"%PDF-1.4\n"
    # idempotent: a second import adds nothing
    assert main(["import", "evals-json", str(skill), "--root", str(host), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trigger_prompts_added"] == 0
    # the round trip: staged drafts give back skill-creator's evals.json
    back = host / "back.json"
    assert main(["export", "evals-json", str(back), "--skill", "example-skill", "--root", str(host)]) == 0
    assert json.loads(back.read_text()) == EVALS
    # the imported corpus turns L1s on and passes
    capsys.readouterr()
    assert main(["check-triggers", "--root", str(host)]) == 0, capsys.readouterr().out


def test_import_refuses_to_overwrite_a_different_entry(host, capsys):
    skill = host / "skills" / "example-skill"
    assert main(["import", "evals-json", str(skill), "--root", str(host)]) == 0
    changed = [dict(TRIGGERS[0], query="Something else entirely"), TRIGGERS[1]]
    (skill / "evals" / "trigger-eval.json").write_text(json.dumps(changed))
    capsys.readouterr()
    assert main(["import", "evals-json", str(skill), "--root", str(host)]) == 2
    assert "already exists with different content" in capsys.readouterr().err


@pytest.mark.parametrize("doc,needle", [
    ({"evals": []}, "has no `skill_name`"),
    ({"skill_name": "s", "evals": [{"id": 1}]}, "has no non-empty `prompt`"),
    ([1, 2], "is not a skill-creator evals.json"),
])
def test_import_rejects_malformed_evals_json(host, capsys, doc, needle):
    p = host / "bad" / "evals.json"
    p.parent.mkdir()
    p.write_text(json.dumps(doc))
    assert main(["import", "evals-json", str(p), "--root", str(host)]) == 2
    assert needle in capsys.readouterr().err


def test_explain_terms_and_help_epilog(capsys):
    assert main(["explain", "L4"]) == 0
    assert capsys.readouterr().out.startswith("L4: meta check (`golden`)")
    assert main(["explain", "dimension", "--json"]) == 0
    assert "zero tolerance" in json.loads(capsys.readouterr().out)["text"]
    assert main(["explain", "l1"]) == 2
    assert "ambiguous: L1s, L1l" in capsys.readouterr().err
    # --help is handled by cli.main (usage errors are UsageError, exit 2; help is a success, exit 0)
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "skill-eval explain TERM" in out and "arm" in out
