"""The recorder copies a produced output back into the agent's tree without following anything the
agent could have planted there (issue 24 items 1 and 8): every component is opened from a descriptor
of the work root with O_NOFOLLOW, and the final entry must be a regular file of its own. A FIFO is
refused at once (before the tool runs, and again at copy-back, never blocking)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from skill_eval.harness.runner import outputs
from skill_eval.harness.runner.outputs import CopyBackRefused
from skill_eval.harness.runner.recorder import _special


def _produced(tmp_path: Path, data: bytes = b'{"verdict": "NO_CHANGE"}') -> str:
    src = tmp_path / "store" / "captured" / "1.out.d" / "0" / "r.json"
    src.parent.mkdir(parents=True)
    src.write_bytes(data)
    return str(src)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def test_copies_and_makes_missing_directories(tmp_path: Path, work: Path):
    src = _produced(tmp_path)
    digest = outputs._copy_artifact(src, str(work), str(work / "out" / "deep" / "r.json"))
    assert (work / "out/deep/r.json").read_bytes() == b'{"verdict": "NO_CHANGE"}'
    assert len(digest) == 64
    (work / "r.json").write_bytes(b"a much longer old content that must be truncated")
    outputs._copy_artifact(src, str(work), str(work / "r.json"))
    assert (work / "r.json").read_bytes() == b'{"verdict": "NO_CHANGE"}'


def test_a_link_as_the_output_is_never_followed(tmp_path: Path, work: Path):
    outside = tmp_path / "outside" / "pwned"
    outside.parent.mkdir()
    (work / "r.json").symlink_to(outside)  # dangling: the runner would create it
    with pytest.raises(CopyBackRefused, match="r.json is a link or not a regular file"):
        outputs._copy_artifact(_produced(tmp_path), str(work), str(work / "r.json"))
    assert not outside.exists()
    outside.write_text("keep")  # existing: the runner would overwrite it
    with pytest.raises(CopyBackRefused):
        outputs._copy_artifact(_produced(tmp_path / "b"), str(work), str(work / "r.json"))
    assert outside.read_text() == "keep"


def test_a_link_on_the_way_is_never_followed(tmp_path: Path, work: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (work / "out").symlink_to(outside, target_is_directory=True)
    with pytest.raises(CopyBackRefused, match="out on the way to out/r.json is a link or not a directory"):
        outputs._copy_artifact(_produced(tmp_path), str(work), str(work / "out" / "r.json"))
    assert list(outside.iterdir()) == []


def test_a_fifo_is_refused_at_once_not_blocked_on(tmp_path: Path, work: Path):
    os.mkfifo(work / "r.json")
    assert _special(str(work / "r.json"))  # the recorder refuses it before the tool runs
    t = time.monotonic()
    with pytest.raises(CopyBackRefused):  # and the copy-back never blocks on one planted later
        outputs._copy_artifact(_produced(tmp_path), str(work), str(work / "r.json"))
    assert time.monotonic() - t < 2


def test_a_hard_link_is_refused(tmp_path: Path, work: Path):
    other = work / "other.txt"
    other.write_text("a file the agent linked")
    os.link(other, work / "r.json")
    with pytest.raises(CopyBackRefused, match="not a regular file of its own"):
        outputs._copy_artifact(_produced(tmp_path), str(work), str(work / "r.json"))
    assert other.read_text() == "a file the agent linked"


@pytest.mark.parametrize("target", ["../escape.json", "/abs/elsewhere.json"])
def test_outside_the_root_is_refused(tmp_path: Path, work: Path, target: str):
    with pytest.raises(CopyBackRefused, match="outside the sandbox work tree"):
        outputs._copy_artifact(_produced(tmp_path), str(work), os.path.normpath(os.path.join(work, target)))


def test_special_is_only_for_fifos_sockets_devices(tmp_path: Path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "f")
    assert not _special(str(tmp_path / "f")) and not _special(str(tmp_path)) and not _special(str(tmp_path / "l"))
    assert not _special(str(tmp_path / "missing"))
    assert _special("/dev/null")
