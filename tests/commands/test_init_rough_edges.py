"""Rough edges of adopting skill-eval (issue 27 item 5) and a corpus a user can write (item 3)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from skill_eval.cli import main
from skill_eval.commands import init

ROOT = Path(__file__).resolve().parents[2]


def _repo(tmp_path: Path, skills=("alpha", "beta")) -> Path:
    repo = tmp_path / "host"
    for name in skills:
        p = repo / "skills" / name / "SKILL.md"
        p.parent.mkdir(parents=True)
        p.write_text(f"---\nname: {name}\ndescription: Handles {name} work. Use for {name} tasks.\n---\n\nDo {name}.\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.fixture
def adopted(tmp_path, capsys):
    repo = _repo(tmp_path)
    assert main(["init", str(repo)]) == 0
    capsys.readouterr()
    return repo


def test_surface_without_a_subject_is_not_applicable(adopted, capsys):
    assert main(["surface", "--root", str(adopted)]) == 0
    out = capsys.readouterr().out
    assert "surface: not applicable — no [subject]" in out and "pip install ," not in out
    assert main(["surface", "--root", str(adopted), "--write"]) == 2
    err = capsys.readouterr().err
    assert "no [subject]" in err and "fix: add a [subject] table" in err


@pytest.mark.parametrize("command", ["scorecard", "golden", "evidence", "lift"])
def test_missing_scenarios_is_not_applicable_until_something_is_recorded(adopted, capsys, command):
    assert main([command, "--root", str(adopted)]) == 0
    err = capsys.readouterr().err
    assert "scenarios.yaml: not applicable" in err and "fix: add agent-evals/skills/scenarios.yaml" in err
    (adopted / "agent-evals/skills/evidence").mkdir()  # once bundles exist, they are graded against it
    assert main([command, "--root", str(adopted)]) == 2
    err = capsys.readouterr().err
    assert "evidence or golden bundles exist" in err and "fix: add agent-evals/skills/scenarios.yaml" in err


def test_readme_wheel_one_liner_installs_the_wheel_it_builds():
    line = next(ln for ln in (ROOT / "README.md").read_text().splitlines() if "python -m build" in ln)
    outdir = re.search(r"--outdir (\S+)", line)
    assert outdir, line  # without --outdir, build writes into the checkout's dist/, not ./dist
    assert f"pip install {outdir.group(1)}/skill_eval-" in line


@pytest.mark.parametrize("direct_url", [
    {"url": "file:///home/me/skill-eval", "vcs_info": {"vcs": "git", "commit_id": "a" * 40}},
    {"url": "file:///home/me/skill-eval", "dir_info": {"editable": True}},
    {"url": "file:///tmp/dist/skill_eval-0.1-py3-none-any.whl", "archive_info": {}},
])
def test_init_never_writes_a_machine_local_url(monkeypatch, direct_url):
    class Dist:
        def read_text(self, name):
            return json.dumps(direct_url)

    monkeypatch.setattr(init.metadata, "distribution", lambda name: Dist())
    spec = init.install_spec()
    assert spec[0] is None
    nox = init.render_snippets("skills", [], spec)["noxfile_snippet.txt"]
    assert "file://" not in nox and "/home/me" not in nox and "/tmp/dist" not in nox
    assert 'os.environ.get("SKILL_EVAL_SPEC", None)' in nox


def test_init_keeps_a_portable_git_url(monkeypatch):
    class Dist:
        def read_text(self, name):
            return json.dumps({"url": "https://example.org/skill-eval.git", "vcs_info": {"vcs": "git", "commit_id": "b" * 40}})

    monkeypatch.setattr(init.metadata, "distribution", lambda name: Dist())
    assert init.install_spec()[0] == f"skill-eval @ git+https://example.org/skill-eval.git@{'b' * 40}"


def test_init_drafts_a_corpus_that_l1s_does_not_count_until_edited(adopted, capsys):
    corpus_path = adopted / "agent-evals/skills/trigger_corpus.yaml"
    text = corpus_path.read_text()
    assert text.startswith("# Labelled trigger prompts") and "skill-eval explain corpus" in text
    doc = yaml.safe_load(text)
    assert {p["expected_skill"] for p in doc["prompts"]} == {"alpha", "beta", None}
    assert all(p["draft"] is True for p in doc["prompts"])
    assert main(["check-triggers", "--root", str(adopted)]) == 0
    assert "holds only drafts" in capsys.readouterr().out
    assert main(["pr", "--root", str(adopted), "--json"]) == 0
    steps = {s["step"]: s for s in json.loads(capsys.readouterr().out)["steps"]}
    assert steps["L1s triggers"]["status"] == "not_applicable" and "only drafts" in steps["L1s triggers"]["hint"]
    # The user rewrites some prompts and drops their draft lines: those, and only those, count.
    doc["prompts"] = [
        {"id": "alpha-1", "prompt": "I need alpha work done on the handles", "expected_skill": "alpha"},
        {"id": "no-skill", "prompt": "What is the capital of France?", "expected_skill": None},
        *doc["prompts"],
    ]
    corpus_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    main(["check-triggers", "--root", str(adopted), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert [p["prompt_id"] for p in out["predictions"]] == ["alpha-1", "no-skill"]


def test_the_corpus_format_is_discoverable(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["check-triggers", "--help"])
    help_text = capsys.readouterr().out
    assert "corpus format" in help_text and "      expected_skill: null" in help_text
    assert main(["explain", "corpus"]) == 0
    assert "draft: true" in capsys.readouterr().out
    # a missing corpus names its fix
    repo = _repo(tmp_path)
    (repo / "skill-eval.toml").write_text('schema_version = 1\n[skills]\nsource = "skills"\npublished = []\n'
                                          '[evals]\nroot = "agent-evals/skills"\n')
    assert main(["check-triggers", "--root", str(repo), "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["fix"] and "skill-eval explain corpus" in err["fix"]


def test_import_reads_openai_evaluation_files(adopted, capsys):
    ev = adopted / "skills/alpha/evaluations"
    ev.mkdir()
    (ev / "decision-record.json").write_text(json.dumps({
        "name": "Create Decision Record", "skills": ["alpha"],
        "query": "Document our decision to use PostgreSQL instead of MongoDB",
        "context": "The user explained the trade-offs",
        "expected_behavior": ["Uses the decision structure"], "success_criteria": ["Decision is clearly stated"],
    }))
    assert main(["import", "evals-json", str(adopted / "skills/alpha"), "--root", str(adopted)]) == 0
    assert "draft scenario alpha-eval-create-decision-record" in capsys.readouterr().out
    corpus = yaml.safe_load((adopted / "agent-evals/skills/trigger_corpus.yaml").read_text())
    assert {"id": "alpha-query-create-decision-record", "prompt": "Document our decision to use PostgreSQL instead of MongoDB",
            "expected_skill": "alpha"} in corpus["prompts"]
    staged = yaml.safe_load((adopted / "agent-evals/skills/imported-scenarios.yaml").read_text())["scenarios"]
    assert staged[0]["human_review_questions"] == ["Uses the decision structure", "Decision is clearly stated"]
    assert staged[0]["imported"]["format"] == "openai-evaluation"
    assert staged[0]["prompt"].endswith("Context: The user explained the trade-offs")
    bad = ev / "broken.json"
    bad.write_text(json.dumps({"query": "", "expected_behavior": []}))
    assert main(["import", "evals-json", str(bad), "--root", str(adopted)]) == 2


@pytest.mark.parametrize("script", ["check_skills.py", "check_triggers.py", "gen_pack.py", "select_suite.py"])
def test_scripts_print_an_install_hint_without_the_package(script, tmp_path):
    # -I -S: no site-packages, so skill-eval's dependencies are not importable
    r = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "scripts" / script), "--help"], capture_output=True,
                       text=True, cwd=tmp_path, check=False)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "skill-eval is not installed" in lines[0] and "pip install" in lines[0], r.stderr
