"""The agent steering the recorder while a call runs (issue 24 items 1 and 2), at the recorder itself.

A fake subject signals when it has started, the test (standing in for the agent's background process)
changes the live work tree, and the subject then reads its operand. Each test states what the old
recorder did (read the live tree, walk it by path after the call) so it can fail with the fix reverted.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from skill_eval.harness.runner import recorder as recorder_mod
from skill_eval.harness.runner.recorder import Recorder, record_call

PROFILE = SimpleNamespace(name="abicheck", format_dest_options=("-o",), path_options=(), directory_options=(),
                          stdout_token="-")


def _tool(tmp: Path, body: str) -> Path:
    """A subject that touches `started`, waits for `go` (both outside the sandbox), then runs body."""
    path = tmp / "tool" / "abicheck"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable} -I\nimport os, sys, time\n"
                    f"open({str(tmp / 'started')!r}, 'w').close()\n"
                    f"while not os.path.exists({str(tmp / 'go')!r}):\n    time.sleep(0.01)\n" + body)
    path.chmod(0o755)
    return path


def _during_call(tmp: Path, action) -> None:
    """Wait for the subject to start, run the agent's action, let the subject go on."""
    deadline = time.monotonic() + 20
    while not (tmp / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    action()
    (tmp / "go").touch()


def test_swap_and_restore_of_an_input_during_the_call_never_reaches_the_subject(tmp_path: Path):
    """The agent swaps new.so for other bytes once the call runs and puts it back before the call ends:
    the digests before and after match, so reading the live tree the subject compared bytes no record
    shows. On its own snapshot the subject reads exactly the bytes the record's digest describes."""
    box = tmp_path / "work"
    box.mkdir()
    (box / "new.so").write_bytes(b"GENUINE")
    tool = _tool(tmp_path, "sys.stdout.write(open(sys.argv[1], 'rb').read().decode())\n"
                           f"open({str(tmp_path / 'read')!r}, 'w').close()\n"
                           f"while not os.path.exists({str(tmp_path / 'restored')!r}):\n    time.sleep(0.01)\n")
    rec = Recorder(tmp_path / "store", PROFILE, tool, box, env={"PATH": "/usr/bin:/bin"})

    def agent() -> None:
        _during_call(tmp_path, lambda: (box / "new.so").write_bytes(b"SWAPPED"))
        deadline = time.monotonic() + 20
        while not (tmp_path / "read").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        (box / "new.so").write_bytes(b"GENUINE")  # restored before the call ends
        (tmp_path / "restored").touch()

    t = threading.Thread(target=agent)
    t.start()
    try:
        record, out, _ = record_call(rec, ["abicheck", "new.so"], box)
    finally:
        t.join()
        rec.close()
    (entry,) = record["inputs"]
    assert entry["sha256"] == hashlib.sha256(b"GENUINE").hexdigest() and entry["stable"] is True
    assert out == b"GENUINE", "the subject read bytes the record's digest does not describe"


def test_directory_operand_swapped_for_a_link_is_never_walked(tmp_path: Path, monkeypatch):
    """After the call the recorder checks its operands again. The agent has replaced the directory
    operand `lib` by a link to a directory outside the sandbox: the old recorder walked it by path (the
    runner opened files there). Now every open is beneath the work root with O_NOFOLLOW: nothing outside
    is opened and the operand reads as unstable."""
    box, outside = tmp_path / "work", tmp_path / "outside"
    (box / "lib").mkdir(parents=True)
    (box / "lib" / "a.so").write_bytes(b"A")
    outside.mkdir()
    (outside / "secret.so").write_bytes(b"runner-side file")
    tool = _tool(tmp_path, "print(sorted(os.listdir(sys.argv[1])))\n")
    rec = Recorder(tmp_path / "store", PROFILE, tool, box, env={"PATH": "/usr/bin:/bin"})
    opened: list[str] = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        opened.append(os.readlink(f"/proc/self/fd/{fd}"))
        return fd

    def swap() -> None:
        os.rename(box / "lib", tmp_path / "lib.moved")
        os.symlink(outside, box / "lib")

    t = threading.Thread(target=_during_call, args=(tmp_path, swap))
    t.start()
    monkeypatch.setattr(recorder_mod.fdtree.os, "open", spy)
    try:
        record, out, _ = record_call(rec, ["abicheck", "lib"], box)
    finally:
        t.join()
        monkeypatch.undo()
        rec.close()
    (entry,) = record["inputs"]
    assert entry["kind"] == "dir" and entry["stable"] is False
    assert out == b"['a.so']\n", "the subject saw its snapshot of lib/"
    assert not [p for p in opened if p.startswith(str(outside))], f"the runner opened {opened}"


def test_an_operand_holding_a_link_is_refused(tmp_path: Path):
    """A link inside a directory operand would let the subject (outside the agent's view) follow it to a
    file no digest covers: refused before anything runs."""
    box = tmp_path / "work"
    (box / "lib").mkdir(parents=True)
    os.symlink("/etc/hostname", box / "lib" / "x.so")
    tool = _tool(tmp_path, "print('ran')\n")
    (tmp_path / "go").touch()
    rec = Recorder(tmp_path / "store", PROFILE, tool, box, env={"PATH": "/usr/bin:/bin"})
    try:
        record, _out, err = record_call(rec, ["abicheck", "lib"], box)
    finally:
        rec.close()
    assert record["status"] == "spawn_failed" and not (tmp_path / "started").exists()
    assert b"holds a symbolic link (lib/x.so)" in err


def test_an_undeclared_write_by_the_subject_never_reaches_the_work_tree(tmp_path: Path):
    """The subject runs on a read-only snapshot: only declared outputs are copied back."""
    box = tmp_path / "work"
    box.mkdir()
    (box / "in.so").write_bytes(b"x")
    tool = _tool(tmp_path, "open('stray.txt', 'w').write('x')\n")
    (tmp_path / "go").touch()
    rec = Recorder(tmp_path / "store", PROFILE, tool, box, env={"PATH": "/usr/bin:/bin"})
    try:
        record_call(rec, ["abicheck", "in.so"], box)
    finally:
        rec.close()
    assert sorted(p.name for p in box.iterdir()) == ["in.so"]


def test_a_relative_operand_above_the_work_root_is_refused(tmp_path: Path):
    """From the snapshot (record/snap/N) `../../calls/1.json` names the runner's own record: refused, not
    recorded as a harmless `missing` input (review finding; the absolute form is refused by the deny list)."""
    box = tmp_path / "work"
    box.mkdir()
    tool = _tool(tmp_path, "print(open(sys.argv[1]).read())\n")
    (tmp_path / "go").touch()
    rec = Recorder(tmp_path / "store", PROFILE, tool, box, env={"PATH": "/usr/bin:/bin"})
    try:
        record, out, err = record_call(rec, ["abicheck", "../store/calls/1.json"], box)
        second, out2, err2 = record_call(rec, ["abicheck", "../../calls/1.json"], box)
    finally:
        rec.close()
    for r, o, e in ((record, out, err), (second, out2, err2)):
        assert r["status"] == "spawn_failed" and o == b"" and b"leaves the work tree" in e, (r, e)
    assert not (tmp_path / "started").exists()


def test_a_missing_operand_is_recorded_as_the_agent_named_it(tmp_path: Path):
    """The agent sees /work; a typo'd absolute operand is recorded as /work/..., never the host path."""
    box = tmp_path / "sandbox-1-abcdefgh" / "work"
    box.mkdir(parents=True)
    tool = _tool(tmp_path, "print('ran')\n")
    (tmp_path / "go").touch()
    rec = Recorder(tmp_path / "store", PROFILE, tool, box, env={"PATH": "/usr/bin:/bin"}, seen_root="/work")
    try:
        reply = rec.run_call(["abicheck", "/work/old/libfoo.so"], "/work", {},
                             os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_WRONLY), os.open(os.devnull, os.O_WRONLY))
    finally:
        rec.close()
    assert reply == b"X0\n"
    (call,) = rec.calls()
    assert call["inputs"] == [{"arg": 1, "path": "/work/old/libfoo.so", "kind": "missing", "sha256": None, "stable": True}]
    assert str(box) not in json.dumps(call)


def test_an_unreadable_operand_is_the_agents_refusal_not_an_infrastructure_error(tmp_path: Path, monkeypatch):
    """A PermissionError while copying (chmod 000 by the agent; as root, simulated) refuses the call:
    a recording failure would make the run an unscored infra_error the agent chose."""
    box = tmp_path / "work"
    box.mkdir()
    (box / "old.so").write_bytes(b"x")
    tool = _tool(tmp_path, "print('ran')\n")
    (tmp_path / "go").touch()

    def denied(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("skill_eval.harness.runner.fdtree.snapshot", denied)
    rec = Recorder(tmp_path / "store", PROFILE, tool, box, env={"PATH": "/usr/bin:/bin"})
    try:
        record, _out, err = record_call(rec, ["abicheck", "old.so"], box)
    finally:
        rec.close()
    assert record["status"] == "spawn_failed" and b"cannot be read (Permission denied)" in err and rec.failures == []
