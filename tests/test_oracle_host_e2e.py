"""A verdict-free host end to end: record with the scripted adapter, `pr` green, then a broken assertion.

The synthetic host (tests/oracle_host.py) drives a tiny stand-in CLI (`notes-tool`, a shell
script given as the real subject). Recording runs each fixture's seed.json, the agent's scripted
turns, then the actions; `pr` grades dimensions 2/3/6 not applicable and gates on the oracle. An
added assertion whose action exits 1 makes `pr` fail naming the case and the assertion — through
the baseline rule for a normal assertion and through pass^k for a zero-tolerance one.
"""

import subprocess

import yaml
from conftest import git_commit_all
from oracle_host import SKILLS, TOML, make_host

from skill_eval.cli import main

TOOL = """#!/bin/sh
case "$1" in
  add) shift; echo "$*" >> NOTES.md ;;
  check) grep -q hello NOTES.md ;;
  *) echo "usage: notes-tool add TEXT | check" >&2; exit 64 ;;
esac
"""
SCRIPT = """schema_version: 1
description: add hello with the tool and commit
turns:
  - tools:
      - skill: {skill}
  - tools:
      - shell: notes-tool add hello && git commit -qam note
  - final: Added the note and committed it.
"""


def git(root, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True, capture_output=True)


def host(tmp_path, monkeypatch):
    toml = TOML.replace("k = 3", 'k = 1\nharness = ["evals/prompts"]')
    cfg = make_host(tmp_path, toml=toml)
    root = cfg.root
    tool = root / "tools" / "notes-tool"
    tool.parent.mkdir()
    tool.write_text(TOOL)
    tool.chmod(0o755)
    monkeypatch.setenv("SKILL_EVAL_REAL", str(tool))
    (root / "evals" / "prompts").mkdir()
    (root / "evals" / "prompts" / "behavioral.md").write_text("{prompt}\n")
    scripts = root / "evals" / "model-scripts"
    scripts.mkdir()
    for skill in SKILLS:
        for mode in ("committed", "local"):
            (scripts / f"{skill}-{mode}.yaml").write_text(SCRIPT.format(skill=skill))
    git(root, "init", "-q")
    assert main(["generate", "--root", str(root)]) == 0
    assert main(["pack", "--root", str(root)]) == 0
    git(root, "add", "-A")
    git(root, "commit", "-qm", "host")
    return root


def record(root, *ids):
    assert main(["run", "--root", str(root), "--suite", "full", "--agent", "scripted", "--model-server",
                 "scripted:evals/model-scripts", "--no-trigger", *ids]) == 0


def add_assertion(root, zero_tolerance: bool):
    path = root / "evals" / "scenarios.yaml"
    data = yaml.safe_load(path.read_text())
    sc = data["scenarios"][0]
    if ["git", "diff", "--quiet", "HEAD~1"] not in sc["actions"]:  # once: an action no assertion uses is refused
        sc["actions"].append(["git", "diff", "--quiet", "HEAD~1"])  # the agent's commit changed NOTES.md: exits 1
    sc["oracle"]["nothing-changed"] = {"predicate": "command-exit-zero", "action": 2, "zero_tolerance": zero_tolerance}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["pack", "--root", str(root)]) == 0


def test_verdict_free_host_pr_is_green_then_a_broken_assertion_fails(tmp_path, monkeypatch, capsys):
    root = host(tmp_path, monkeypatch)
    record(root)
    assert main(["baseline", "update", "--root", str(root)]) == 0
    capsys.readouterr()
    assert main(["pr", "--root", str(root)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["grade", "--root", str(root), *map(str, (root / "evals" / "evidence").glob("*/*/*/*/0"))]) == 0
    assert "dimension 6: not_applicable (scenario" in capsys.readouterr().out

    add_assertion(root, zero_tolerance=False)
    record(root, "notes-add-committed")  # the changed scenario's evidence is re-recorded (stale otherwise)
    capsys.readouterr()
    assert main(["pr", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "dimension oracle pass rate 1/2 is below the baseline 1.00; failed: notes-add-committed 'nothing-changed' k=[0]" in out

    add_assertion(root, zero_tolerance=True)
    record(root, "notes-add-committed")
    capsys.readouterr()
    assert main(["pr", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "pass^k: notes-add-committed [skill-agent] fails zero-tolerance oracle assertion 'nothing-changed' in run(s) k=[0]" in out


def test_a_host_without_subject_records_and_passes(tmp_path, capsys):
    """No [subject] at all: no shim is installed, the seed may run git only, oracles grade the runs."""
    toml = TOML.split("[subject]")[0].replace("k = 3", 'k = 1\nharness = ["evals/prompts"]')
    cfg = make_host(tmp_path, toml=toml)
    root = cfg.root
    assert not cfg.has_subject
    (root / "evals" / "prompts").mkdir()
    (root / "evals" / "prompts" / "behavioral.md").write_text("{prompt}\n")
    scripts = root / "evals" / "model-scripts"
    scripts.mkdir()
    for skill in SKILLS:
        for mode in ("committed", "local"):
            (scripts / f"{skill}-{mode}.yaml").write_text(
                SCRIPT.format(skill=skill).replace("notes-tool add hello", "echo hello >> NOTES.md"))
    git(root, "init", "-q")
    assert main(["generate", "--root", str(root)]) == 0
    assert main(["pack", "--root", str(root)]) == 0
    git_commit_all(root, "host")  # the trust policy is read at a commit (under CI=true a repository without one is exit 2)
    record(root)
    assert main(["baseline", "update", "--root", str(root)]) == 0
    capsys.readouterr()
    assert main(["pr", "--root", str(root)]) == 0, capsys.readouterr().out
