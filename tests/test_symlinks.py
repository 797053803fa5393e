"""Symlinks cannot turn a write into a write outside the repository, nor a read into a read from outside.

Every writer (generate, pack, baseline update, the run's bundle writer and retire, init) and every
reader of a configured tree (skills-src/ and its shared/ folder, published trees, fixtures/,
evidence/, golden/) is given a symlink leading outside the repository. Each must refuse with a
one-line message naming the link (exit 2 through the CLI) and leave the outside directory exactly
as it was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.content import config
from skill_eval.content.inputs import InputRecorder
from skill_eval.core import fsio
from skill_eval.core.errors import InputError
from skill_eval.grading import baselines
from skill_eval.grading.graders import Check, Grade
from skill_eval.harness.runner.bundle_writer import BundleWriter


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the repository, with a file the attacks would overwrite or delete."""
    d = tmp_path / "outside"
    (d / "skills" / "victim").mkdir(parents=True)
    (d / "skills" / "victim" / "SKILL.md").write_text("precious\n")
    (d / "precious.txt").write_text("do not touch\n")
    return d


def snapshot(root: Path) -> dict[str, str]:
    """Every path below root with its type and content digest (what 'untouched' means)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            out[rel] = "dir" if p.is_dir() and not p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "other"
    return out


def refused(capsys, argv: list[str], *names: str) -> str:
    """Run the CLI; assert exit 2 and one line naming each of names; return the line."""
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1, err
    assert "internal error" not in err and "Traceback" not in err
    for name in names:
        assert name in err, (name, err)
    return err


def link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


# ----------------------------------------------------------------------------- writers


def test_generate_refuses_a_symlinked_published_parent(mini_repo, outside, capsys):
    """The reported attack: `.agents -> outside`; generate used to delete outside/skills."""
    shutil.rmtree(mini_repo / ".agents")
    link(mini_repo / ".agents", outside)
    before = snapshot(outside)
    refused(capsys, ["generate", "--root", str(mini_repo)], ".agents", "symlink")
    assert snapshot(outside) == before


def test_generate_refuses_a_symlinked_published_root(mini_repo, outside, capsys):
    link(mini_repo / ".claude" / "skills", outside / "skills")
    before = snapshot(outside)
    refused(capsys, ["generate", "--root", str(mini_repo)], ".claude/skills")
    assert snapshot(outside) == before


def test_pack_refuses_a_dangling_symlink_at_the_pack_path(mini_repo, outside, capsys):
    link(mini_repo / "evals" / "skill-eval-pack.json", outside / "pack.json")
    before = snapshot(outside)
    refused(capsys, ["pack", "--root", str(mini_repo)], "skill-eval-pack.json", "symlink")
    assert snapshot(outside) == before and not (outside / "pack.json").exists()


def test_pack_write_never_follows_a_link_even_inside_the_repo(mini_repo, capsys):
    cfg = config.load(mini_repo)
    target = mini_repo / "elsewhere.json"
    link(mini_repo / "evals" / "skill-eval-pack.json", target)  # stays inside: reading is fine, writing is not
    with pytest.raises(InputError, match="symlink") as err:
        from skill_eval.content import pack

        pack.write(cfg)
    assert "skill-eval-pack.json" in str(err.value) and len(str(err.value).splitlines()) == 1
    assert not target.exists()


def _grade() -> Grade:
    checks = {str(d): Check(str(d), "pass") for d in (1, 3)}
    return Grade("b", "behavioral", "alpha-break", {"skill": "alpha", "agent": "scripted", "model": "m", "arm": "skill-agent"},
                 checks)


@pytest.mark.parametrize("where", ["file", "dir"])
def test_baseline_update_refuses_symlinks(mini_repo, outside, where):
    cfg = config.load(mini_repo)
    grade = _grade()
    path = baselines.path_for(cfg, baselines.triple_of(grade))
    if where == "file":  # the reported attack: a dangling link at the baseline's path
        link(path, outside / "new-baseline.json")
    else:
        link(path.parent, outside)
    before = snapshot(outside)
    with pytest.raises(InputError) as err:
        baselines.update(cfg, [grade], [])
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and "symlink" in msg
    assert (path.name if where == "file" else "baselines") in msg
    assert snapshot(outside) == before


def test_baseline_update_through_the_cli_is_exit_2(mini_repo, outside, capsys, monkeypatch):
    from skill_eval.commands import baseline as command

    monkeypatch.setattr(command, "_grades", lambda cfg: ([_grade()], type("C", (), {"rubric": None})()))
    monkeypatch.setattr(command.gates, "pass_k", lambda *a, **k: [])  # graded evidence is not what is tested here
    link(mini_repo / "evals" / "baselines", outside)
    before = snapshot(outside)
    refused(capsys, ["baseline", "update", "--root", str(mini_repo)], "baselines", "symlink")
    assert snapshot(outside) == before


@pytest.mark.parametrize("component", ["evidence", "evidence/alpha", "evidence/alpha/skill-agent/run/alpha-break/0"])
def test_the_run_bundle_writer_refuses_symlinks_in_the_evidence_tree(mini_repo, outside, component):
    evidence = mini_repo / "evals" / "evidence"
    dest = evidence / "alpha" / "skill-agent" / "run" / "alpha-break" / "0"
    link(mini_repo / "evals" / component, outside)
    before = snapshot(outside)
    with pytest.raises(InputError, match="symlink") as err:
        BundleWriter(dest, {}, root=mini_repo)
    assert component.split("/")[-1] in str(err.value) and len(str(err.value).splitlines()) == 1
    assert snapshot(outside) == before


def test_retire_never_deletes_through_a_symlinked_bundle(mini_repo, outside):
    from skill_eval.harness.runner import plan

    cfg = config.load(mini_repo)
    item = plan.build(cfg, ids=["alpha-break"], run_id="r", k=1)[0]
    path = plan.bundle_path(cfg, item)
    link(path, outside / "skills")
    before = snapshot(outside)
    with pytest.raises(InputError, match="symlink"):
        plan.retire(cfg, item)
    assert snapshot(outside) == before


def _git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "host"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


@pytest.mark.parametrize("planted", ["Makefile", "noxfile.py", "skills", "agent-evals"])
def test_init_refuses_to_write_through_symlinks(tmp_path, outside, capsys, planted):
    repo = _git_repo(tmp_path)
    target = {"Makefile": outside / "precious.txt", "noxfile.py": outside / "new-noxfile.py"}.get(planted, outside)
    (repo / planted).symlink_to(target)
    before = snapshot(outside)
    refused(capsys, ["init", str(repo)], planted, "symlink")
    assert snapshot(outside) == before


# ----------------------------------------------------------------------------- readers


def _move_out(repo: Path, rel: str, outside: Path) -> None:
    """Move a configured tree outside the repository and leave a symlink in its place."""
    dest = outside / rel.replace("/", "_")
    shutil.move(str(repo / rel), dest)
    (repo / rel).symlink_to(dest)


@pytest.mark.parametrize("command", [["check-skills"], ["generate", "--check"], ["pack", "--check"]])
def test_a_symlinked_skills_source_is_refused(mini_repo, outside, capsys, command):
    _move_out(mini_repo, "skills-src", outside)
    before = snapshot(outside)
    refused(capsys, [*command, "--root", str(mini_repo)], "skills-src", "outside the repository")
    assert snapshot(outside) == before


def test_a_symlinked_folder_in_shared_is_refused_not_copied(mini_repo, outside, capsys):
    """The reported attack: shared/ext -> outside, cited by a skill; its files were published and pack --check stayed green."""
    (outside / "ext").mkdir()
    (outside / "ext" / "leak.md").write_text("outside content\n")
    (mini_repo / "skills-src" / "shared" / "ext").symlink_to(outside / "ext")
    skill = mini_repo / "skills-src" / "alpha" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nAlso [ext](../shared/ext/leak.md).\n")
    before = snapshot(outside)
    for command in (["generate"], ["pack"], ["pack", "--check"], ["generate", "--check"]):
        refused(capsys, [*command, "--root", str(mini_repo)], "skills-src/shared/ext", "outside the repository")
    assert not list(mini_repo.glob(".*/skills/alpha/references/shared/ext/leak.md"))
    assert snapshot(outside) == before


@pytest.mark.parametrize("rel", ["evals/fixtures", "evals/fixtures/case-one"])
def test_symlinked_fixtures_are_refused(mini_repo, outside, capsys, rel):
    _move_out(mini_repo, rel, outside)
    refused(capsys, ["pack", "--check", "--root", str(mini_repo)], rel.split("/")[-1], "symlink")


def test_the_runner_input_accessor_refuses_a_link_out(mini_repo, outside):
    _move_out(mini_repo, "evals/fixtures", outside)
    with pytest.raises(InputError, match="outside the repository") as err:
        InputRecorder(mini_repo).read_tree("evals/fixtures/case-one")
    assert "evals/fixtures" in str(err.value)


@pytest.mark.parametrize("rel", [".claude/skills", ".agents"])
def test_a_symlinked_published_tree_is_refused_when_read(mini_repo, outside, capsys, rel):
    _move_out(mini_repo, rel, outside)
    refused(capsys, ["generate", "--check", "--root", str(mini_repo)], rel, "outside the repository")


@pytest.mark.parametrize("command", [["evidence"], ["freshness"], ["scorecard", "--out", "OUT"], ["lift"]])
@pytest.mark.parametrize("linked", ["evals/evidence", "evals/evidence/alpha"])
def test_symlinked_evidence_is_refused(mini_repo, outside, capsys, linked, command, tmp_path):
    """Every command that reads the evidence tree refuses one leading outside the repository (issue 24
    item 7: freshness and scorecard used to read it)."""
    (mini_repo / "evals" / "evidence").mkdir(exist_ok=True)
    (outside / "bundles").mkdir()
    link(mini_repo / linked, outside / "bundles")
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in command]
    refused(capsys, [argv[0], "--root", str(mini_repo), *argv[1:]], linked.split("/", 1)[1], "outside the repository")


def test_named_evidence_inside_the_repository_gets_the_same_check(mini_repo, outside, capsys):
    (outside / "bundles").mkdir()
    link(mini_repo / "evals" / "other-evidence", outside / "bundles")
    refused(capsys, ["freshness", "--root", str(mini_repo), "--evidence", str(mini_repo / "evals" / "other-evidence")],
            "other-evidence", "outside the repository")


def test_scorecard_writes_below_root_never_through_a_link(mini_repo, outside, capsys, monkeypatch, tmp_path):
    """The default --out is taken from --root, not the working directory; a symlinked build/ (or any
    component) inside the repository is refused, and nothing is written outside."""
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["scorecard", "--root", str(mini_repo)]) == 0
    assert (mini_repo / "build" / "scorecard" / "scorecard.json").is_file()
    assert not (elsewhere / "build").exists()
    capsys.readouterr()
    link(mini_repo / "build", outside)
    before = snapshot(outside)
    refused(capsys, ["scorecard", "--root", str(mini_repo)], "build", "symlink")
    assert snapshot(outside) == before
    assert main(["scorecard", "--root", str(mini_repo), "--out", str(tmp_path / "explicit")]) == 0  # outside: as named
    assert (tmp_path / "explicit" / "scorecard.html").is_file()


@pytest.mark.parametrize("linked", ["evals/golden", "evals/golden/some-bundle"])
def test_symlinked_golden_is_refused(mini_repo, outside, capsys, linked):
    (mini_repo / "evals" / "golden").mkdir(exist_ok=True)
    (outside / "g").mkdir()
    link(mini_repo / linked, outside / "g")
    refused(capsys, ["golden", "--root", str(mini_repo)], linked.split("/", 1)[1], "outside the repository")


def test_a_symlink_that_stays_inside_the_repository_may_be_read(mini_repo):
    (mini_repo / "docs").mkdir()
    (mini_repo / "docs" / "x.md").write_text("x\n")
    (mini_repo / "alias").symlink_to(mini_repo / "docs")
    assert fsio.repo_path(mini_repo, "alias/x.md").read_text() == "x\n"
    with pytest.raises(InputError, match="leaves the repository"):
        fsio.repo_path(mini_repo, "docs/../../etc/passwd")


# ----------------------------------------------------------------------------- the helper itself


def test_write_file_is_atomic_and_stays_inside(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    p = fsio.write_file(root, "a/b/c.txt", "one", mode=0o600)
    assert p.read_text() == "one" and (p.stat().st_mode & 0o777) == 0o600
    fsio.write_file(root, root / "a/b/c.txt", b"two")
    assert p.read_text() == "two" and sorted(x.name for x in p.parent.iterdir()) == ["c.txt"], "no temp file left"
    for bad in ("../x", "/etc/passwd", "a/../../x", ""):
        with pytest.raises(InputError):
            fsio.write_file(root, bad, "x")
    (root / "a" / "dir").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        fsio.write_file(root, "a/dir", "x")


def test_replace_dir_swaps_whole_trees_and_remove_tree_never_follows(tmp_path, outside):
    root = tmp_path / "repo"
    root.mkdir()
    fsio.replace_dir(root, "pub/skills", {"x/SKILL.md": b"1", "x/run.sh": (b"#!/bin/sh\n", fsio.EXEC_MODE)})
    fsio.replace_dir(root, "pub/skills", {"y/SKILL.md": b"2"})
    assert sorted(p.relative_to(root).as_posix() for p in (root / "pub").rglob("*")) == ["pub/skills", "pub/skills/y",
                                                                                         "pub/skills/y/SKILL.md"]
    (root / "pub" / "link").symlink_to(outside)
    before = snapshot(outside)
    with pytest.raises(InputError, match="symlink"):
        fsio.remove_tree(root, "pub/link")
    with pytest.raises(InputError, match="symlink"):
        fsio.remove_tree(root, "pub/link/skills")
    assert fsio.remove_tree(root, "pub/skills") and not (root / "pub/skills").exists()
    assert fsio.remove_tree(root, "pub/absent") is False
    assert snapshot(outside) == before


def test_output_files_are_atomic_and_never_written_through_a_link(tmp_path, outside):
    """`--out` files (release stage/report, scorecard) go through fsio.write_output."""
    out = tmp_path / "out" / "report.json"
    fsio.write_output(out, b"{}\n")
    assert out.read_bytes() == b"{}\n"
    assert [p.name for p in out.parent.iterdir()] == ["report.json"]  # no temp file left
    fsio.write_output(out, "second\n")
    assert out.read_text() == "second\n"
    victim = outside / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "out" / "scorecard.md"
    link.symlink_to(victim)
    with pytest.raises(InputError, match="symlink"):
        fsio.write_output(link, "evil")
    assert victim.read_text() == "keep"
