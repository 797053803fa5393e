"""fdtree: descriptor-only, read-once snapshots of the subject's operands (runner/fdtree.py).

The agent is an adversary running concurrently with the runner: symlinks anywhere, special files,
oversized inputs and swaps during the copy must never make the runner read outside the work root,
block, leak a descriptor or record a digest of bytes other than the ones the subject gets.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import random
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from skill_eval.harness.runner import fdtree
from skill_eval.harness.runner.fdtree import Snap, Unsafe, digest, digest_path, discard, open_beneath, snapshot

MARKER = b"OUTSIDE-THE-ROOT-MARKER-7f3a"


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def no_fd_leak():
    before = fd_count()
    yield
    assert fd_count() == before, "a descriptor leaked"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "work"
    r.mkdir()
    return r


@pytest.fixture
def root_fd(root: Path):
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY)
    yield fd
    os.close(fd)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the root holding the marker the runner must never copy."""
    o = tmp_path / "outside"
    o.mkdir()
    (o / "secret.txt").write_bytes(MARKER)
    (o / "data.bin").write_bytes(MARKER)
    return o


def independent_tree_digest(path: Path) -> str:
    """The tree digest computed by path (trusted test directory), independently of fdtree."""
    rows = []
    for dirpath, dirnames, filenames in os.walk(path):
        for name in filenames + dirnames:
            full = os.path.join(dirpath, name)
            rel = os.fsencode(os.path.relpath(full, path))
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                rows.append((rel, b"l", hashlib.sha256(os.fsencode(os.readlink(full))).hexdigest()))
            elif stat.S_ISREG(st.st_mode):
                kind = b"x" if st.st_mode & 0o100 else b"f"
                rows.append((rel, kind, hashlib.sha256(Path(full).read_bytes()).hexdigest()))
    h = hashlib.sha256(b"skill-eval-input-tree-v1\0")
    for rel, kind, hexd in sorted(rows):
        h.update(rel + b"\0" + kind + b"\0" + hexd.encode() + b"\0")
    return h.hexdigest()


def regular_bytes(path: Path) -> list[bytes]:
    """Contents of every regular file under path, links never followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if stat.S_ISREG(os.lstat(full).st_mode):
                out.append(Path(full).read_bytes())
    return out


def make_tree(base: Path) -> None:
    (base / "sub" / "deeper").mkdir(parents=True)
    (base / "empty").mkdir()
    (base / "a.txt").write_bytes(b"alpha\n")
    (base / "a-b.txt").write_bytes(b"alpha-beta\n")
    (base / "sub-x.txt").write_bytes(b"sorts before sub/ by bytes, after it by name\n")
    (base / "sub" / "tool.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (base / "sub" / "tool.sh").chmod(0o755)
    (base / "sub" / "deeper" / "big.bin").write_bytes(os.urandom(3 * (1 << 20) + 17))  # several 1 MiB chunks
    (base / "sub" / "rel-link").symlink_to("../a.txt")
    (base / "caf\xe9-\udcff.txt").write_bytes(b"non-utf8 name\n")


def run_with_timeout(fn, seconds: float = 1.0):
    result: dict = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            result["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    return t.is_alive(), result


# ---------------------------------------------------------------- copies and digests


def test_file_snapshot_is_byte_identical_read_only_and_digested(root: Path, root_fd: int, tmp_path: Path):
    data = os.urandom((1 << 20) * 2 + 5)
    (root / "lib.so").write_bytes(data)
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    (root / "run.sh").chmod(0o744)
    snap = snapshot(root_fd, "lib.so", str(tmp_path / "s1"))
    assert snap == Snap("file", hashlib.sha256(data).hexdigest(), 1, len(data))
    assert (tmp_path / "s1").read_bytes() == data
    assert stat.S_IMODE(os.lstat(tmp_path / "s1").st_mode) == 0o444
    exe = snapshot(root_fd, "./run.sh", str(tmp_path / "s2"))
    assert stat.S_IMODE(os.lstat(tmp_path / "s2").st_mode) == 0o555
    assert digest(root_fd, "lib.so") == ("file", snap.sha256)
    assert digest_path(str(tmp_path / "s1")) == ("file", snap.sha256)
    assert digest_path(str(tmp_path / "s2")) == ("file", exe.sha256)


def test_dir_snapshot_is_identical_read_only_and_digested(root: Path, root_fd: int, tmp_path: Path):
    make_tree(root / "op")
    dest = tmp_path / "snap"
    snap = snapshot(root_fd, "op", str(dest))
    expected = independent_tree_digest(root / "op")
    assert snap.kind == "dir" and snap.sha256 == expected
    assert snap.files == 6 and snap.bytes == sum(len(b) for b in regular_bytes(root / "op"))
    assert independent_tree_digest(dest) == expected
    for dirpath, dirnames, filenames in os.walk(root / "op"):
        rel = Path(dirpath).relative_to(root / "op")
        assert stat.S_IMODE(os.lstat(dest / rel).st_mode) == 0o555
        for name in filenames:
            src, dst = Path(dirpath) / name, dest / rel / name
            if src.is_symlink():
                assert dst.is_symlink() and os.readlink(dst) == os.readlink(src)
                continue
            assert dst.read_bytes() == src.read_bytes()
            assert stat.S_IMODE(os.lstat(dst).st_mode) == (0o555 if os.lstat(src).st_mode & 0o100 else 0o444)
    assert (dest / "empty").is_dir()
    assert digest(root_fd, "op") == ("dir", expected)
    assert digest_path(str(dest)) == ("dir", expected)
    assert digest(root_fd, ".")[1] == independent_tree_digest(root)
    discard(str(dest))
    assert not os.path.lexists(dest)


def test_digest_changes_with_content_mode_and_link_text(root: Path, root_fd: int):
    make_tree(root / "op")
    base = digest(root_fd, "op")
    (root / "op" / "sub" / "tool.sh").chmod(0o644)
    no_x = digest(root_fd, "op")
    (root / "op" / "sub" / "rel-link").unlink()
    (root / "op" / "sub" / "rel-link").symlink_to("../a-b.txt")
    relinked = digest(root_fd, "op")
    (root / "op" / "empty" / "new").write_bytes(b"")
    added = digest(root_fd, "op")
    assert len({base, no_x, relinked, added}) == 4


def test_dest_must_not_exist_and_is_kept(root: Path, root_fd: int, tmp_path: Path):
    (root / "f").write_bytes(b"x")
    (tmp_path / "taken").write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        snapshot(root_fd, "f", str(tmp_path / "taken"))
    assert (tmp_path / "taken").read_bytes() == b"mine"


# ---------------------------------------------------------------- refused operands


@pytest.mark.parametrize("rel", ["link", "dirlink", "a/link/b", "a/dirlink/f", "..", "a/../a/f", "/etc/passwd",
                                 "", "a//f", "a/f/x", "nul\0byte"])
def test_refused_operands(root: Path, root_fd: int, outside: Path, tmp_path: Path, rel: str):
    (root / "a" / "real").mkdir(parents=True)
    (root / "a" / "f").write_bytes(b"in")
    (root / "link").symlink_to(outside / "secret.txt")
    (root / "dirlink").symlink_to(outside)
    (root / "a" / "link").symlink_to(root / "a" / "real")  # even a link staying inside is refused
    (root / "a" / "real" / "b").write_bytes(b"in")
    (root / "a" / "dirlink").symlink_to(outside)
    with pytest.raises(Unsafe):
        open_beneath(root_fd, rel)
    with pytest.raises(Unsafe):
        snapshot(root_fd, rel, str(tmp_path / "dest"))
    with pytest.raises(Unsafe):
        digest(root_fd, rel)
    assert not os.path.lexists(tmp_path / "dest")


def test_directory_flag_refuses_a_file(root: Path, root_fd: int):
    (root / "f").write_bytes(b"x")
    (root / "d").mkdir()
    with pytest.raises(Unsafe):
        open_beneath(root_fd, "f", directory=True)
    fd = open_beneath(root_fd, "d", directory=True)
    assert stat.S_ISDIR(os.fstat(fd).st_mode)
    os.close(fd)


def test_missing_operand_is_file_not_found(root: Path, root_fd: int, tmp_path: Path):
    (root / "d").mkdir()
    for rel in ("nope", "d/nope", "nope/deeper/f"):
        with pytest.raises(FileNotFoundError):
            snapshot(root_fd, rel, str(tmp_path / "dest"))
        with pytest.raises(FileNotFoundError):
            digest(root_fd, rel)
    assert not os.path.lexists(tmp_path / "dest")


def test_fifo_operand_is_refused_without_blocking(root: Path, root_fd: int, tmp_path: Path):
    os.mkfifo(root / "pipe")
    alive, result = run_with_timeout(lambda: snapshot(root_fd, "pipe", str(tmp_path / "dest")))
    if alive:  # release the blocked reader before failing
        os.close(os.open(root / "pipe", os.O_WRONLY | os.O_NONBLOCK))
    assert not alive, "snapshot blocked on a FIFO"
    assert isinstance(result.get("error"), Unsafe)
    alive, result = run_with_timeout(lambda: digest(root_fd, "pipe"))
    if alive:
        os.close(os.open(root / "pipe", os.O_WRONLY | os.O_NONBLOCK))
    assert not alive and isinstance(result.get("error"), Unsafe)
    assert not os.path.lexists(tmp_path / "dest")


def test_device_operand_is_refused():
    dev = os.open("/dev", os.O_PATH | os.O_DIRECTORY)
    try:
        with pytest.raises(Unsafe):
            open_beneath(dev, "null")
        with pytest.raises(Unsafe):
            digest_path("/dev/null")
    finally:
        os.close(dev)


def test_special_files_inside_a_tree_are_skipped_without_blocking(root: Path, root_fd: int, tmp_path: Path):
    (root / "op").mkdir()
    (root / "op" / "f").write_bytes(b"data")
    os.mkfifo(root / "op" / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock_path = root / "op" / "sock"
        if len(os.fsencode(sock_path)) < 100:
            sock.bind(str(sock_path))
        alive, result = run_with_timeout(lambda: snapshot(root_fd, "op", str(tmp_path / "dest")))
        if alive:
            os.close(os.open(root / "op" / "pipe", os.O_WRONLY | os.O_NONBLOCK))
        assert not alive, "snapshot blocked on a FIFO inside the tree"
    finally:
        sock.close()
    assert "error" not in result, result
    assert sorted(os.listdir(tmp_path / "dest")) == ["f"]
    only_f = hashlib.sha256(b"skill-eval-input-tree-v1\0f\0f\0" + hashlib.sha256(b"data").hexdigest().encode() + b"\0")
    assert result["value"].sha256 == only_f.hexdigest()


def test_symlinks_inside_a_tree_are_copied_not_followed(root: Path, root_fd: int, outside: Path, tmp_path: Path):
    (root / "op").mkdir()
    (root / "op" / "passwd").symlink_to("/etc/passwd")
    (root / "op" / "secret").symlink_to(outside / "secret.txt")
    (root / "op" / "outdir").symlink_to(outside)
    (root / "op" / "dangling").symlink_to("no/such/target")
    dest = tmp_path / "dest"
    snap = snapshot(root_fd, "op", str(dest))
    assert snap.files == 0 and snap.bytes == 0
    for name in ("passwd", "secret", "outdir", "dangling"):
        assert os.readlink(dest / name) == os.readlink(root / "op" / name)
    assert regular_bytes(dest) == []  # neither /etc/passwd's nor the marker's content was copied
    assert sorted(os.listdir(dest)) == ["dangling", "outdir", "passwd", "secret"]
    assert all((dest / n).is_symlink() for n in os.listdir(dest))
    assert snap.sha256 == independent_tree_digest(root / "op") == digest_path(str(dest))[1]


def _on_lstat(monkeypatch, name: bytes, act) -> None:
    """Run act(name, dir_fd) around fdtree's lstat of `name`: a deterministic swap inside the walk."""
    real = os.lstat

    def lstat(path, *, dir_fd=None, **kw):
        if path != name:
            return real(path, dir_fd=dir_fd, **kw)
        return act(real, path, dir_fd)

    monkeypatch.setattr(fdtree.os, "lstat", lstat)


def test_entry_vanishing_mid_walk_is_neither_copied_nor_digested(root: Path, root_fd: int, tmp_path: Path, monkeypatch):
    (root / "op").mkdir()
    (root / "op" / "keep").write_bytes(b"kept")
    (root / "op" / "gone").write_bytes(b"deleted before it was reached")

    def delete_first(real, path, dir_fd):
        os.unlink(path, dir_fd=dir_fd)
        return real(path, dir_fd=dir_fd)

    _on_lstat(monkeypatch, b"gone", delete_first)
    snap = snapshot(root_fd, "op", str(tmp_path / "dest"))
    assert os.listdir(tmp_path / "dest") == ["keep"]
    assert snap.sha256 == independent_tree_digest(root / "op") == independent_tree_digest(tmp_path / "dest")


def test_file_swapped_for_a_link_between_lstat_and_open_is_unsafe(root: Path, root_fd: int, outside: Path,
                                                                   tmp_path: Path, monkeypatch):
    (root / "op").mkdir()
    (root / "op" / "a").write_bytes(b"first")
    (root / "op" / "b").write_bytes(b"inside")

    def swap_after(real, path, dir_fd):
        st = real(path, dir_fd=dir_fd)  # seen as a regular file ...
        os.unlink(path, dir_fd=dir_fd)  # ... then replaced by a link to the outside
        os.symlink(os.fsencode(outside / "secret.txt"), path, dir_fd=dir_fd)
        return st

    _on_lstat(monkeypatch, b"b", swap_after)
    with pytest.raises(Unsafe):
        snapshot(root_fd, "op", str(tmp_path / "dest"))
    assert not os.path.lexists(tmp_path / "dest")


# ---------------------------------------------------------------- limits and cleanup


def test_max_bytes_exceeded_removes_dest(root: Path, root_fd: int, tmp_path: Path):
    (root / "big").write_bytes(b"x" * 100)
    (root / "op" / "a").mkdir(parents=True)
    (root / "op" / "a" / "small").write_bytes(b"y" * 10)  # 'a' is finished (0o555) before 'b' overflows
    (root / "op" / "b").write_bytes(b"z" * 100)
    with pytest.raises(Unsafe):
        snapshot(root_fd, "big", str(tmp_path / "d1"), max_bytes=99)
    with pytest.raises(Unsafe):
        snapshot(root_fd, "op", str(tmp_path / "d2"), max_bytes=50)
    assert not os.path.lexists(tmp_path / "d1") and not os.path.lexists(tmp_path / "d2")
    assert snapshot(root_fd, "big", str(tmp_path / "d3"), max_bytes=100).bytes == 100


def test_max_files_exceeded_removes_dest(root: Path, root_fd: int, tmp_path: Path):
    (root / "op").mkdir()
    for i in range(5):
        (root / "op" / f"f{i}").write_bytes(b"%d" % i)
    with pytest.raises(Unsafe):
        snapshot(root_fd, "op", str(tmp_path / "d1"), max_files=4)
    assert not os.path.lexists(tmp_path / "d1")
    assert snapshot(root_fd, "op", str(tmp_path / "d2"), max_files=5).files == 5


def test_too_deep_a_tree_is_unsafe(root: Path, root_fd: int, tmp_path: Path):
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    os.mkdir("deep", dir_fd=fd)
    for _ in range(fdtree.MAX_DEPTH + 1):  # by descriptor: the path would outgrow PATH_MAX
        nxt = os.open("deep", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nxt
        os.mkdir("deep", dir_fd=fd)
    os.close(fd)
    with pytest.raises(Unsafe):
        snapshot(root_fd, "deep", str(tmp_path / "d"))
    assert not os.path.lexists(tmp_path / "d")


def test_no_descriptor_leaks_on_any_path(root: Path, root_fd: int, outside: Path, tmp_path: Path):
    make_tree(root / "op")
    (root / "link").symlink_to(outside)
    before = fd_count()
    for i in range(20):
        snapshot(root_fd, "op", str(tmp_path / f"ok{i}"))
        digest(root_fd, "op")
        digest_path(str(tmp_path / f"ok{i}"))
        for rel, exc in (("link", Unsafe), ("link/secret.txt", Unsafe), ("/etc", Unsafe), ("op/nope", FileNotFoundError),
                         ("op/a.txt/x", Unsafe), ("..", Unsafe)):
            with pytest.raises(exc):
                snapshot(root_fd, rel, str(tmp_path / "bad"))
        with pytest.raises(Unsafe):
            snapshot(root_fd, "op", str(tmp_path / "bad"), max_bytes=1 << 20)
        with pytest.raises(Unsafe):
            snapshot(root_fd, "op", str(tmp_path / "bad"), max_files=3)
    assert fd_count() == before
    assert not os.path.lexists(tmp_path / "bad")


# ---------------------------------------------------------------- races


def _swapper(parent: Path, name: str, outside: Path, stop: threading.Event, counts: dict) -> None:
    """Keep swapping parent/name between a real directory and a symlink to `outside` (atomically with
    renameat2(RENAME_EXCHANGE) where available), pausing a random moment in each state."""
    link, aside = parent / (name + ".link"), parent / (name + ".aside")
    link.symlink_to(outside)
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    exchange = renameat2 is not None
    a, b = os.fsencode(parent / name), os.fsencode(link)
    to_link = True
    while not stop.is_set():
        if exchange and renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
            assert ctypes.get_errno() in (errno.EINVAL, errno.ENOSYS), os.strerror(ctypes.get_errno())
            exchange = False
        if not exchange and to_link:  # non-atomic fallback: the directory aside, the link in
            os.rename(parent / name, aside)
            os.rename(link, parent / name)
        elif not exchange:
            os.rename(parent / name, link)
            os.rename(aside, parent / name)
        to_link = not to_link
        counts["swaps"] += 1
        stop.wait(random.uniform(0, 0.0005))


@pytest.mark.parametrize("operand", ["op", "op/sub", "op/sub/data.bin"])
def test_swapping_a_directory_for_an_outside_link_never_leaks_outside_bytes(root: Path, root_fd: int, outside: Path,
                                                                            tmp_path: Path, operand: str):
    (root / "op" / "sub").mkdir(parents=True)
    (root / "op" / "sub" / "data.bin").write_bytes(b"inside data")
    (root / "op" / "sub" / "secret.txt").write_bytes(b"inside secret")
    (root / "op" / "keep.txt").write_bytes(b"inside keep")
    stop, counts = threading.Event(), {"swaps": 0}
    t = threading.Thread(target=_swapper, args=(root / "op", "sub", outside, stop, counts), daemon=True)
    outcomes, shapes = {"ok": 0, "refused": 0, "missing": 0}, {"link": 0, "dir": 0, "none": 0}

    def both_states_met() -> bool:  # not vacuous: copies got through and the swap really bit
        if operand == "op":  # the walk met the swapped entry both as a directory and as a link
            return shapes["dir"] > 0 and shapes["link"] > 0
        return outcomes["ok"] > 0 and outcomes["refused"] + outcomes["missing"] > 0

    i, deadline = 0, time.monotonic() + 6  # 200 rounds, more (bounded) on a loaded machine
    t.start()
    try:
        while i < 200 or (not both_states_met() and time.monotonic() < deadline):
            i += 1
            dest = tmp_path / "snaps" / str(i)
            dest.parent.mkdir(exist_ok=True)
            try:
                snap = snapshot(root_fd, operand, str(dest))
            except Unsafe:
                outcomes["refused"] += 1
                assert not os.path.lexists(dest)
                continue
            except FileNotFoundError:
                outcomes["missing"] += 1
                assert not os.path.lexists(dest)
                continue
            outcomes["ok"] += 1
            contents = [dest.read_bytes()] if snap.kind == "file" else regular_bytes(dest)
            assert all(MARKER not in c for c in contents), f"outside bytes copied in round {i}"
            assert all(c.startswith(b"inside") for c in contents)
            assert digest_path(str(dest)) == (snap.kind, snap.sha256)
            if operand == "op":
                sub = dest / "sub"
                shapes["link" if sub.is_symlink() else "dir" if sub.is_dir() else "none"] += 1
    finally:
        stop.set()
        t.join(5)
    assert not t.is_alive()
    assert both_states_met(), (outcomes, shapes, counts)
