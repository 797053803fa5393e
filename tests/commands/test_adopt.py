"""Adopting skill-eval in a repository shaped like a public skills repo (issue 11).

`init` must fit what is there (no subject, skills under skills/, a template folder), and
`pr` right after it must run only the checks that apply and report exactly the real
findings of the skills — nothing the user cannot fix.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.content import config


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _write(root: Path, rel: str, data: str | bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data.encode() if isinstance(data, str) else data)


def public_skills_repo(root: Path) -> Path:
    """Six skills under skills/ (one real broken scripts/ path, one CRLF, one %20 link), a template/."""
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, "README.md", "# Our skills\n")
    _write(root, "skills/README.md", "Skills live here.\n")
    _write(root, "skills/pdf-tools/SKILL.md",
           "---\nname: pdf-tools\ndescription: Extract text and tables from PDF files. Use when asked to read a PDF.\n"
           "license: Apache-2.0\nallowed-tools: Read Bash(python:*)\nmetadata:\n  author: someone\n---\n\n"
           "# PDF\n\nRun `python scripts/extract.py input.pdf`; forms are in [forms](references/FORMS.md).\n")
    _write(root, "skills/pdf-tools/scripts/extract.py", "print('text')\n")
    _write(root, "skills/pdf-tools/references/FORMS.md", "# Forms\n")
    _write(root, "skills/weekly-report/SKILL.md",
           "---\nname: weekly-report\ndescription: Build a weekly report from CSV exports. Use for weekly reporting.\n---\n\n"
           "# Report\n\n```bash\npython scripts/run_report.py data.csv\n```\n")  # the real finding: no such script
    _write(root, "skills/weekly-report/scripts/report.py", "print('report')\n")
    _write(root, "skills/sql-format/SKILL.md",
           b"---\r\nname: sql-format\r\ndescription: Format SQL queries. Use when asked to format SQL.\r\n---\r\n\r\n"
           b"# SQL\r\n\r\nSee [rules](references/rules.md).\r\n")
    _write(root, "skills/sql-format/references/rules.md", "Uppercase keywords.\n")
    _write(root, "skills/onboarding/SKILL.md",
           "---\nname: onboarding\ndescription: Write onboarding guides for new engineers. Use for onboarding docs.\n---\n\n"
           "See [the guide](references/user%20guide.md) and `references/user guide.md`.\n")
    _write(root, "skills/onboarding/references/user guide.md", "guide\n")
    _write(root, "skills/brand-logo/SKILL.md",
           "---\nname: brand-logo\ndescription: Design brand logos. Use for logo work.\ncompatibility: Needs network access\n---\n\n"
           'See [the logo][logo] and <img src="assets/logo.png" alt="logo">.\n\n[logo]: assets/logo.png\n')
    _write(root, "skills/brand-logo/assets/logo.png", b"\x89PNG\r\n")
    _write(root, "skills/changelog/SKILL.md",
           "---\nname: changelog\ndescription: Write changelog entries. Use when asked for release notes.\n"
           "disable-model-invocation: true\n---\n\nGroup by Added/Changed/Fixed.\n")
    _write(root, "skills/template/SKILL.md",
           "---\nname: template-skill\ndescription: Replace with description of the skill and when Claude should use it.\n---\n\n"
           "# Insert instructions below\n")
    _git(root, "add", "-A")
    return root


def test_init_then_pr_reports_exactly_the_real_findings(tmp_path, capsys):
    repo = public_skills_repo(tmp_path / "skills-repo")
    assert main(["init", str(repo), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "found 6 skill(s) in skills/" in out and "dry run" in out
    assert not (repo / "skill-eval.toml").exists()  # a dry run writes nothing

    assert main(["init", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "published copies: none" in out
    cfg = config.load(repo)
    assert cfg.skills_source == "skills" and cfg.published == () and not cfg.has_subject
    for d in (".claude", ".agents"):
        assert not (repo / d).exists()  # nothing published into an agent's discovery folder
    hooks = (repo / ".pre-commit-config.yaml").read_text()
    assert "files: ^(skills/|" in hooks  # hooks fire on the real source path

    assert main(["pr", "--root", str(repo), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    status = {s["step"]: s["status"] for s in report["steps"]}
    assert status == {"L0 structure": "fail", "subject surface": "not_applicable", "L1s triggers": "not_applicable",
                      "pack": "ok", "golden (L4)": "not_applicable", "freshness": "ok", "evidence": "not_applicable",
                      "machine-local paths": "ok"}
    hints = [s["hint"] for s in report["steps"] if s["status"] == "not_applicable"]
    assert all(h and "\n" not in h for h in hints)
    l0 = report["steps"][0]["detail"]
    assert [(e["where"], e["message"]) for e in l0["errors"]] == [
        ("skills/weekly-report/SKILL.md", "names 'scripts/run_report.py', which does not exist in the skill"),
    ]
    assert [w["where"] for w in l0["warnings"]] == ["skills/changelog/SKILL.md"]  # a client key: warned, not failed
    assert [s["where"] for s in l0["skipped"]] == ["skills/template"]
    assert sorted(l0["skills"]) == ["brand-logo", "changelog", "onboarding", "pdf-tools", "sql-format", "weekly-report"]

    # Fix the real finding and refresh the pack: pr is green.
    p = repo / "skills/weekly-report/SKILL.md"
    p.write_text(p.read_text().replace("run_report.py", "report.py"))
    assert main(["pr", "--root", str(repo)]) == 1
    assert "run `skill-eval pack`" in capsys.readouterr().out
    assert main(["pack", "--root", str(repo)]) == 0
    capsys.readouterr()
    assert main(["pr", "--root", str(repo)]) == 0
    assert "pr: ok" in capsys.readouterr().out


def test_init_keeps_existing_copies_published_and_detects_claude_layout(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    body = "---\nname: alpha\ndescription: Alpha things. Use for alpha.\n---\n\nDo alpha.\n"
    _write(repo, "skills-src/alpha/SKILL.md", body)
    _write(repo, ".claude/skills/alpha/SKILL.md", body)
    _write(repo, ".agents/skills/other/SKILL.md", body.replace("alpha", "other"))
    assert main(["init", str(repo)]) == 0
    out = capsys.readouterr().out
    cfg = config.load(repo)
    assert cfg.skills_source == "skills-src" and cfg.published == (".claude/skills",)
    # .agents/skills/ holds a skill of its own (not a copy): every source is adopted, and init says so
    assert [(s.path, s.published) for s in cfg.sources] == [("skills-src", (".claude/skills",)), (".agents/skills", ())]
    assert "sources: skills-src/, .agents/skills/ (every one adopted, [[skills.sources]])" in out
    assert main(["check-skills", "--root", str(repo)]) == 0


def test_init_on_a_discovery_folder_only_repo(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo, ".claude/skills/alpha/SKILL.md", "---\nname: alpha\ndescription: Alpha. Use for alpha.\n---\nx\n")
    assert main(["init", str(repo), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["source"] == ".claude/skills" and plan["published"] == []
    assert main(["pr", "--root", str(repo)]) == 0


def test_init_on_an_empty_repo_scaffolds_an_unpublished_example(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    assert main(["init", str(repo)]) == 0
    assert (repo / "skills/example-skill/SKILL.md").is_file()
    assert not (repo / ".claude").exists() and not (repo / ".agents").exists()
    text = (repo / "skills/example-skill/SKILL.md").read_text()
    assert "abicheck" not in text
    capsys.readouterr()
    assert main(["pr", "--root", str(repo)]) == 0, capsys.readouterr().out


def test_init_source_override_and_snippets_follow_config(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo, "plugins/p/skills/alpha/SKILL.md", "---\nname: alpha\ndescription: Alpha. Use for alpha.\n---\nx\n")
    _write(repo, "Makefile", "all:\n\techo hi\n")
    assert main(["init", str(repo), "--source", "plugins/p/skills", "--published", "none"]) == 0
    assert "include skill-eval.mk" in (repo / "Makefile").read_text()
    assert (repo / "Makefile").read_text().startswith("all:")
    assert "files: ^(plugins/p/skills/|" in (repo / ".pre-commit-config.yaml").read_text()
    assert "generate" not in (repo / "skill-eval.mk").read_text().split("skill-eval-pack:")[1].split("\n")[1]
    assert main(["init", str(repo)]) == 2  # config exists
    assert "already exists" in capsys.readouterr().err


def test_pr_rejects_unknown_step_names(mini_repo, capsys):
    assert main(["pr", "--root", str(mini_repo), "--skip", "surfac"]) == 2
    err = capsys.readouterr().err
    assert "--skip surfac: no such pr step" in err and "check-skills" in err and "evidence" in err
    assert main(["pr", "--root", str(mini_repo), "--only", "nope"]) == 2


def test_pr_only_runs_the_named_step(mini_repo, capsys):
    assert main(["pr", "--root", str(mini_repo), "--only", "check-skills", "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert [s["status"] for s in steps].count("skipped") == len(steps) - 1


@pytest.mark.parametrize("table", ["", "[agent]\nadapter = \"scripted\"\n"])
def test_config_without_subject_loads(tmp_path, table):
    (tmp_path / "skill-eval.toml").write_text(
        'schema_version = 1\n[skills]\nsource = "s"\npublished = []\n[evals]\nroot = "e"\n' + table)
    cfg = config.load(tmp_path)
    assert not cfg.has_subject and cfg.subject.surface_files == () and cfg.subject.invocation_classes == {}


def test_init_does_not_append_hooks_into_the_wrong_pre_commit_key(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo, "skills/alpha/SKILL.md", "---\nname: alpha\ndescription: Alpha. Use for alpha.\n---\nx\n")
    original = "repos:\n  - repo: local\n    hooks: []\nci:\n  autofix_prs: false\n"
    _write(repo, ".pre-commit-config.yaml", original)
    assert main(["init", str(repo)]) == 0
    assert (repo / ".pre-commit-config.yaml").read_text() == original
    assert "not its last top-level key" in capsys.readouterr().out


def test_generated_make_targets_find_skill_eval_or_say_how(tmp_path):
    repo = public_skills_repo(tmp_path / "r")
    assert main(["init", str(repo)]) == 0
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run(["make", "-s", "skill-eval-pack"], cwd=repo, env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "skill-eval not found: install it" in r.stderr, r.stderr
    exe = f"{sys.executable} -m skill_eval"
    r = subprocess.run(["make", "-s", "skill-eval-pack", f"SKILL_EVAL={exe}"], cwd=repo, capture_output=True, text=True,
                       env={**env, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wrote agent-evals/skills/skill-eval-pack.json" in r.stdout


def test_init_with_a_broken_skill_still_adopts_and_pr_names_it(tmp_path, capsys):
    repo = public_skills_repo(tmp_path / "r")
    p = repo / "skills/changelog/SKILL.md"
    p.write_text(p.read_text().replace("name: changelog", "name: changelog\nname: changelog"))
    assert main(["init", str(repo)]) == 1  # adopted, but not ok: the pack waits for the fix
    out = capsys.readouterr().out
    assert "init: FAIL" in out and "was not: " in out and "duplicate key 'name'" in out and "init: ok" not in out
    assert main(["pr", "--root", str(repo), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    l0 = report["steps"][0]["detail"]
    assert ("skills/changelog/SKILL.md", "invalid YAML at line 3 column 1: duplicate key 'name'") in [
        (e["where"], e["message"]) for e in l0["errors"]]
    assert len(l0["skills"]) == 5  # the other skills are still checked


def test_init_generates_an_explicitly_requested_published_copy(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo, "skills/alpha/SKILL.md", "---\nname: alpha\ndescription: Alpha. Use for alpha.\n---\nx\n")
    assert main(["init", str(repo), "--published", ".agents/skills"]) == 0
    assert (repo / ".agents/skills/alpha/SKILL.md").read_text() == (repo / "skills/alpha/SKILL.md").read_text()
    capsys.readouterr()
    assert main(["pr", "--root", str(repo)]) == 0, capsys.readouterr().out


def test_init_refuses_a_pyproject_config(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _write(repo, "pyproject.toml", '[tool.skill-eval]\nschema_version = 1\n')
    assert main(["init", str(repo)]) == 2
    assert "already has a [tool.skill-eval] table" in capsys.readouterr().err


def test_published_hooks_fire_on_common_skill_layouts():
    import re

    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((Path(__file__).parents[2] / ".pre-commit-hooks.yaml").read_text())}
    for hook in ("skill-eval-pack", "skill-eval-check-skills"):
        pat = re.compile(hooks[hook]["files"])
        for path in ("skills/pdf/SKILL.md", "skills-src/a/scripts/x.py", ".claude/skills/a/SKILL.md",
                     "plugins/p/skills/a/references/r.md", "skill-eval.toml"):
            assert pat.search(path), (hook, path)
        assert not pat.search("src/app/main.py")
