import subprocess

from skill_eval.cli import main


def test_init_then_pack_and_checks(tmp_path, capsys):
    repo = tmp_path / "host"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert main(["init", str(repo)]) == 0
    assert "init: ok" in capsys.readouterr().out
    for rel in ("skill-eval.toml", "noxfile.py", "Makefile", "skill-eval.mk", ".pre-commit-config.yaml",
                "skills/example-skill/SKILL.md", "agent-evals/skills/trigger_corpus.yaml",
                "agent-evals/skills/skill-eval-pack.json"):
        assert (repo / rel).is_file(), rel
    assert not (repo / ".agents").exists() and not (repo / ".claude").exists()  # never published into discovery dirs
    assert main(["pack", "--check", "--root", str(repo)]) == 0
    assert main(["check-skills", "--root", str(repo)]) == 0
    assert main(["check-triggers", "--root", str(repo)]) == 0
    capsys.readouterr()
    # the scaffolded repo gates like ours: a skill edit without regenerating the pack fails
    p = repo / "skills/example-skill/SKILL.md"
    p.write_text(p.read_text() + "\nmore\n")
    assert main(["pack", "--check", "--root", str(repo)]) == 1
    assert "skill:example-skill" in capsys.readouterr().out


def test_init_keeps_existing_files(tmp_path, capsys):
    repo = tmp_path / "host"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "Makefile").write_text("all:\n\techo hi\n")
    assert main(["init", str(repo)]) == 0
    text = (repo / "Makefile").read_text()
    assert text.startswith("all:") and "include skill-eval.mk" in text
    assert main(["init", str(repo)]) == 2  # config exists
    assert "already exists" in capsys.readouterr().err


def test_init_requires_git(tmp_path, capsys):
    assert main(["init", str(tmp_path)]) == 2
    assert "not inside a git repository" in capsys.readouterr().err


def test_init_writes_a_codeowners_entry_for_the_trust_files(tmp_path, capsys):
    """issue 34 item 10: the trust files (allowed_signers, the config, the gate's sessions, workflows and pin)
    need a code owner's review; an existing CODEOWNERS is appended to, once."""
    repo = tmp_path / "host"
    (repo / ".github").mkdir(parents=True)
    (repo / ".github/CODEOWNERS").write_text("* @someone\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert main(["init", str(repo)]) == 0
    text = (repo / ".github/CODEOWNERS").read_text()
    assert text.startswith("* @someone\n")
    for path in ("/agent-evals/skills/allowed_signers ", "/skill-eval.toml ", "/noxfile.py ", "/.github/workflows/ ",
                 "/pyproject.toml "):
        assert path in text, path
    assert "replace @your-org/skill-eval-maintainers" in capsys.readouterr().out
    assert main(["init", str(repo), "--force"]) == 0
    assert (repo / ".github/CODEOWNERS").read_text() == text  # not appended twice
