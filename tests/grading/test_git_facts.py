"""facts.json's git facts cannot be narrowed by what the agent controls (its .git, its HOME).

`git-worktree-clean` must fail when an action changed the work tree, whatever the agent did to
git beforehand: index flags (assume-unchanged, skip-worktree), excludes in `.git/info/exclude` or a
`~/.gitconfig` in the sandbox home, `core.worktree`, filters/textconv via a global attributes file,
a repository git cannot read (a constant error marker on both sides once read as "unchanged"), or
`.git` replaced by a symlink. The control shows the same action on an untampered repository failing
the same way, and a read-only action passing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from skill_eval.content.inputs import InputRecorder
from skill_eval.grading import oracles
from skill_eval.harness.runner import isolation
from skill_eval.harness.runner.sandbox import Sandbox, SandboxError

ID = ["-c", "user.name=f", "-c", "user.email=f@x"]
SETUP = [["git", "init", "-q"], ["git", *ID, "add", "-A"], ["git", *ID, "commit", "-q", "-m", "fixture"]]
LEVEL = "bwrap" if isolation.available() == "bwrap" else "none"


@pytest.fixture
def box(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "fixtures" / "case").mkdir(parents=True)
    (repo / "fixtures" / "case" / "CHANGELOG.md").write_text("# log\n")
    tool = tmp_path / "tools" / "tool"
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\necho "written by the action" >> CHANGELOG.md\necho new > NEWFILE\n')
    tool.chmod(0o755)
    profile = SimpleNamespace(name="tool", real_env="X", format_dest_options=("-o",), path_options=(),
                              directory_options=(), stdout_token="-")
    parent = tmp_path / "runs"
    b = Sandbox.create(parent, InputRecorder(repo), "fixtures/case", profile=profile, real=tool, setup=SETUP,
                       deny=isolation.hidden_roots(repo, parent), level=LEVEL)
    yield b
    b.cleanup()


def agent(box: Sandbox, *cmd: str) -> None:
    subprocess.run(list(cmd), cwd=box.work, env=box.env, check=True, capture_output=True)


def clean(box: Sandbox, action: list[str]) -> str | None:
    fact = box.run_actions([action]).facts["actions"][0]
    return oracles._git_worktree_clean(fact, {}, None)  # type: ignore[arg-type]


def _assume_unchanged(box: Sandbox) -> None:
    agent(box, "git", "update-index", "--assume-unchanged", "CHANGELOG.md")
    (box.home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/.ignore\n")
    (box.home / ".ignore").write_text("NEWFILE\n")


def _skip_worktree(box: Sandbox) -> None:
    agent(box, "git", "update-index", "--skip-worktree", "CHANGELOG.md")
    with open(box.work / ".git" / "info" / "exclude", "a") as fh:
        fh.write("NEWFILE\n")


def _core_worktree(box: Sandbox) -> None:
    shadow = box.home / "shadow"
    shutil.copytree(box.work, shadow, ignore=shutil.ignore_patterns(".git"))
    agent(box, "git", "config", "core.worktree", str(shadow))


def _global_filter(box: Sandbox) -> None:
    (box.home / ".gitconfig").write_text("[core]\n\tattributesFile = ~/.attrs\n\texcludesFile = ~/.ignore\n"
                                         "[diff \"same\"]\n\ttextconv = cat ~/.attrs\n")
    (box.home / ".attrs").write_text("CHANGELOG.md diff=same\n")
    (box.home / ".ignore").write_text("NEWFILE\n")


def _unreadable_repo(box: Sandbox) -> None:
    agent(box, "git", "config", "core.repositoryformatversion", "99")


ATTACKS: dict[str, Callable[[Sandbox], None]] = {
    "none (control)": lambda box: None, "assume-unchanged + excludes in ~/.gitconfig": _assume_unchanged,
    "skip-worktree + .git/info/exclude": _skip_worktree, "core.worktree elsewhere": _core_worktree,
    "textconv/excludes via ~/.gitconfig": _global_filter, "repository git cannot read": _unreadable_repo,
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_changing_action_never_reads_as_a_clean_worktree(box: Sandbox, attack: str):
    ATTACKS[attack](box)
    why = clean(box, ["tool"])
    assert why is not None, f"{attack}: git-worktree-clean passed although the action wrote CHANGELOG.md and NEWFILE"


def test_a_read_only_action_is_clean(box: Sandbox):
    assert clean(box, ["git", "status", "--short"]) is None


def test_a_dot_git_symlink_fails_closed(box: Sandbox):
    other = box.home / "realgit"
    shutil.move(str(box.work / ".git"), other)
    os.symlink(other, box.work / ".git")
    with pytest.raises(SandboxError, match=r"\.git is a symlink"):
        box.run_actions([["true"]])


def test_a_nested_dot_git_is_content(box: Sandbox):
    (box.work / "sub" / ".git").mkdir(parents=True)
    (box.work / "sub" / ".git" / "payload.md").write_text("written by the agent\n")
    fact = box.run_actions([["true"]]).facts["actions"][0]
    assert "sub/.git/payload.md" in fact["changed_paths"]


def _seeded(box: Sandbox) -> None:
    from skill_eval.harness.runner.sandbox import git_head

    box.seed_facts = {"commands": [], "files": {}, "tree_after": "x", "head": git_head(box.work, box.runner_env)}


def _head_check(box: Sandbox) -> str | None:
    result = box.run_actions([["git", "rev-parse", "--verify", "HEAD"]])
    bundle = SimpleNamespace(facts=result.facts)
    return oracles._git_head_unchanged(result.facts["actions"][0], {}, bundle)  # type: ignore[arg-type]


def test_git_head_unchanged_holds_without_a_commit(box: Sandbox):
    _seeded(box)
    (box.work / "CHANGELOG.md").write_text("edited, not committed\n")
    assert _head_check(box) is None


@pytest.mark.parametrize("cover", ["none", "move the tag", "move the branch"])
def test_a_commit_fails_git_head_unchanged_whatever_refs_the_agent_moves(box: Sandbox, cover: str):
    """The earlier oracle (`git merge-base --is-ancestor HEAD <seed tag>`) passed after `git tag -f`."""
    agent(box, "git", "tag", "skill-eval-seed")
    _seeded(box)
    (box.work / "CHANGELOG.md").write_text("committed by the agent\n")
    agent(box, "git", *ID, "commit", "-qam", "agent commit")
    if cover == "move the tag":
        agent(box, "git", "tag", "-f", "skill-eval-seed")
        old_oracle = box.run_actions([["git", "merge-base", "--is-ancestor", "HEAD", "skill-eval-seed"]])
        assert old_oracle.facts["actions"][0]["exit_code"] == 0, "the tag-based oracle is fooled (why it was replaced)"
    elif cover == "move the branch":
        agent(box, "git", "branch", "-f", "seeded-copy")
    why = _head_check(box)
    assert why is not None and "HEAD moved" in why


def test_git_head_unchanged_needs_a_seeded_head(box: Sandbox):
    result = box.run_actions([["true"]])
    assert "no HEAD was recorded after seeding" in oracles._git_head_unchanged(
        result.facts["actions"][0], {}, SimpleNamespace(facts=result.facts))  # type: ignore[arg-type,operator]


@pytest.mark.parametrize(("path", "glob", "ok"), [
    ("changes/1.md", "changes/*.md", True), ("changes/a/b.md", "changes/*.md", False),
    ("changes/a/b.md", "changes/**/*.md", True), ("changes/b.md", "changes/**/*.md", True),
    ("CHANGELOG.md", "CHANGELOG.md", True), ("CHANGELOG.mdx", "CHANGELOG.md", False),
    ("a.w", "*.w", True), ("sub/a.w", "*.w", False), ("x/1.md", "x/?.md", True), ("x/12.md", "x/?.md", False),
])
def test_managed_path_globs_stay_in_their_segment(path: str, glob: str, ok: bool):
    assert oracles._glob_match(path, glob) is ok


@pytest.mark.parametrize("kind", ["tree", "blob"])
def test_a_head_that_names_no_commit_fails_the_digest_closed(box: Sandbox, kind: str):
    """HEAD rewritten to a tree or a blob id: git status still answers, but with no commit to diff
    against a second edit of a modified file would not move the digest; it is None instead."""
    from skill_eval.harness.runner.sandbox import git_digest, git_head

    assert git_digest(box.work, box.runner_env) is not None, "control: an ordinary repository has a digest"
    spec = "HEAD^{tree}" if kind == "tree" else "HEAD:CHANGELOG.md"
    oid = subprocess.run(["git", "rev-parse", spec], cwd=box.work, check=True, capture_output=True, text=True).stdout.strip()
    (box.work / ".git" / "HEAD").write_text(oid + "\n")
    assert git_digest(box.work, box.runner_env) is None
    assert git_head(box.work, box.runner_env) is None
    assert clean(box, ["git", "status", "--short"]) is not None, "git-worktree-clean fails closed"
