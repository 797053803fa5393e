"""improve.patch: the agent's copy read back through descriptors, changes checked, the patch proven by `git apply`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from skill_eval.improve import patch
from skill_eval.improve.patch import Change, FileState, ProposalRejected

SOURCES = ["skills-src"]


def _tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


# -- reading the copy ------------------------------------------------------------------------------


def test_read_copy_reads_files_and_the_executable_bit(tmp_path):
    _tree(tmp_path, {"skills-src/a/SKILL.md": b"x\n", "skills-src/a/scripts/run.sh": b"#!/bin/sh\n"})
    (tmp_path / "skills-src/a/scripts/run.sh").chmod(0o755)
    got = patch.read_copy(tmp_path)
    assert got == {"skills-src/a/SKILL.md": FileState(b"x\n"), "skills-src/a/scripts/run.sh": FileState(b"#!/bin/sh\n", True)}


@pytest.mark.parametrize("plant,needle", [
    (lambda d: os.symlink("/etc/passwd", d / "skills-src/a/link.md"), "holds a symlink, skills-src/a/link.md"),
    (lambda d: os.symlink("/etc", d / "skills-src/a/etc"), "holds a symlink, skills-src/a/etc"),
    (lambda d: os.symlink("SKILL.md", d / "skills-src/a/same.md"), "holds a symlink"),  # even inside the copy
    (lambda d: os.link(d / "skills-src/a/SKILL.md", d / "skills-src/a/alias.md"), "a hard link"),
    (lambda d: os.mkfifo(d / "skills-src/a/pipe"), "not a regular file"),
])
def test_read_copy_refuses_links_and_special_files(tmp_path, plant, needle):
    _tree(tmp_path, {"skills-src/a/SKILL.md": b"x\n"})
    plant(tmp_path)
    with pytest.raises(ProposalRejected) as exc:
        patch.read_copy(tmp_path)
    assert needle in exc.value.message and exc.value.exit_code == 1


def test_read_copy_refuses_a_file_over_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(patch, "MAX_FILE_BYTES", 10)
    _tree(tmp_path, {"skills-src/a/SKILL.md": b"x" * 11})
    with pytest.raises(ProposalRejected, match="over 10"):
        patch.read_copy(tmp_path)


# -- what may change -------------------------------------------------------------------------------


ORIGINAL = {"skills-src/a/SKILL.md": FileState(b"---\nname: a\n---\n")}


@pytest.mark.parametrize("path,data,needle", [
    ("evals/fixtures/case/old.w", b"x\n", "adds evals/fixtures/case/old.w, outside the skill sources"),
    ("README.md", b"x\n", "outside the skill sources"),
    ("skills-src-evil/a.md", b"x\n", "outside the skill sources"),  # a sibling whose name starts alike
    ("skills-src/published/a/SKILL.md", b"x\n", "under the protected skills-src/published"),
    ("skills-src/a/.git/config", b"x\n", "a name a patch cannot carry safely"),
    ("skills-src/a/we\"ird.md", b"x\n", "a name a patch cannot carry safely"),
    ("skills-src/a/tab\there.md", b"x\n", "a name a patch cannot carry safely"),
    ("skills-src/a/logo.png", b"\x89PNG\0\0", "not UTF-8 text"),
    ("skills-src/a/latin1.md", "café".encode("latin-1"), "not UTF-8 text"),
])
def test_changes_refuse_anything_but_text_in_the_skill_sources(path, data, needle):
    proposed = {**ORIGINAL, path: FileState(data)}
    with pytest.raises(ProposalRejected) as exc:
        patch.changes(ORIGINAL, proposed, allowed=SOURCES, protected=["skills-src/published", "evals"])
    assert needle in exc.value.message and exc.value.fix


def test_changes_refuse_a_deletion_outside_the_sources():
    original = {**ORIGINAL, "evals/scenarios.yaml": FileState(b"x\n")}
    with pytest.raises(ProposalRejected, match="deletes evals/scenarios.yaml"):
        patch.changes(original, dict(ORIGINAL), allowed=SOURCES, protected=["evals"])


def test_changes_list_only_what_differs():
    proposed = {"skills-src/a/SKILL.md": FileState(b"---\nname: a\ndescription: b\n---\n"), "skills-src/b/SKILL.md": FileState(b"n\n")}
    found = patch.changes({**ORIGINAL, "skills-src/c/x.md": FileState(b"gone\n")}, proposed, allowed=SOURCES, protected=[])
    assert [(c.path, c.status) for c in found] == [("skills-src/a/SKILL.md", "modified"), ("skills-src/b/SKILL.md", "added"),
                                                  ("skills-src/c/x.md", "deleted")]


# -- the rendered patch: proven by git apply, from a repository root -------------------------------


CASES = {
    "modified": (FileState(b"a\nb\nc\n"), FileState(b"a\nB\nc\n")),
    "no newline, old": (FileState(b"a\nb"), FileState(b"a\nb\n")),
    "no newline, new": (FileState(b"a\nb\n"), FileState(b"a\nc")),
    "no newline, both": (FileState(b"x\ny"), FileState(b"x\nz")),
    "added": (None, FileState(b"new\nfile\n")),
    "added empty": (None, FileState(b"")),
    "deleted": (FileState(b"old\n"), None),
    "deleted empty": (FileState(b""), None),
    "mode only": (FileState(b"#!/bin/sh\n"), FileState(b"#!/bin/sh\n", True)),
    "mode and content": (FileState(b"#!/bin/sh\n", True), FileState(b"#!/bin/sh\nexit 0\n")),
    "crlf and form feed": (FileState(b"a\r\nb\x0cc\r\n"), FileState(b"a\r\nb\x0cC\r\n")),
    "unicode": (FileState("naïve — ok\n".encode()), FileState("naïve — fine\n".encode())),
    "long file": (FileState(b"".join(b"%d\n" % i for i in range(200))),
                  FileState(b"".join(b"%d\n" % (i if i % 50 else -i) for i in range(200)))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_patches_apply_with_git_from_the_repository_root(tmp_path, name):
    old, new = CASES[name]
    change = Change("skills-src/a/file.md", old, new)
    text = patch.render([change])
    patch.verify(text, [change])  # applies it to a scratch copy and demands the proposed bytes back
    root = tmp_path / "repo"  # and from a real repository's root, as the maintainer will
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    if old is not None:
        _tree(root, {change.path: old.data})
        (root / change.path).chmod(0o755 if old.executable else 0o644)
    (tmp_path / "p.patch").write_text(text)
    subprocess.run(["git", "apply", str(tmp_path / "p.patch")], cwd=root, check=True)
    target = root / change.path
    if new is None:
        assert not target.exists()
    else:
        assert target.read_bytes() == new.data and bool(target.stat().st_mode & 0o100) == new.executable


def test_verify_refuses_a_patch_that_does_not_reproduce_the_proposal():
    change = Change("skills-src/a/file.md", FileState(b"a\n"), FileState(b"b\n"))
    wrong = patch.render([Change("skills-src/a/file.md", FileState(b"a\n"), FileState(b"c\n"))])
    with pytest.raises(ProposalRejected, match="does not reproduce skills-src/a/file.md"):
        patch.verify(wrong, [change])



def test_read_copy_refuses_a_folder_it_cannot_read(tmp_path, monkeypatch):
    """A folder the agent made unreadable (mode 000: root reads it anyway, so the error is injected)."""
    _tree(tmp_path, {"skills-src/a/SKILL.md": b"x\n"})

    def denied(fd: int) -> list[str]:
        raise PermissionError(13, "Permission denied", "skills-src")

    monkeypatch.setattr(patch.os, "listdir", denied)
    with pytest.raises(ProposalRejected, match="cannot be read at skills-src"):
        patch.read_copy(tmp_path)
