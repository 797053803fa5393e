"""Descriptor-only snapshots and digests of the subject's input operands.

Why: the agent is an adversary and is still running while the runner handles its files. Resolving an
operand with realpath/os.walk and reading it live lets the agent swap a component for a symlink
mid-call (the runner then reads or writes outside the sandbox), or swap an input and restore it
around the call (the digests before and after match, yet the tool read other bytes). So the subject
runs on its own read-only snapshot of its operands, and the recorded input digest is computed from
the very bytes written into that snapshot.

Guarantees:
- Every component beneath the work root's descriptor is opened relative to its parent's descriptor
  with O_NOFOLLOW (openat): a symlink on the way, '..', an empty component, an absolute path or a
  FIFO/socket/device operand is refused (Unsafe). Nothing below the root is resolved by path, so a
  swap cannot redirect a read outside the root; it can only make the call fail or vanish an entry.
- Each regular file is read once, from one descriptor, in 1 MiB chunks; the same chunks are hashed
  and written, so the digest describes exactly the snapshot's bytes.
- Inside a tree a symlink is recorded and copied as a link (its text, never followed); FIFOs,
  sockets and devices are skipped without being opened (lstat first; O_NONBLOCK and fstat after
  open catch a swap in between). An entry that vanishes mid-walk is neither copied nor digested.
- The snapshot is read-only (files 0o444/0o555 by the owner execute bit, directories 0o555). More
  than max_bytes of file data, max_files entries (of any kind) or MAX_DEPTH levels is Unsafe; any
  failure removes the partial copy. No descriptor outlives a call.
Not guaranteed: a copied link keeps its text, so an absolute or '..' link in a snapshot still points
outside it; whatever follows links in the snapshot (the subject) must run where that reaches nothing.

Tree digest: sha256(b"skill-eval-input-tree-v1\\0" + for every entry sorted by relpath bytes:
relpath + b"\\0" + kind + b"\\0" + hexdigest + b"\\0"); kind b"f" file, b"x" file with the owner
execute bit, b"l" symlink (digest of its text). Directories and special files are not entries.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Literal

# Every function here does file I/O, through descriptors only (the sandbox) or on runner-private paths.
FILE_IO_HELPERS = ("open_beneath", "snapshot", "digest", "digest_path", "discard",
                   "_checked", "_digest_fd", "_fill", "_entry", "_rmtree", "_write_all")
TREE_DOMAIN = b"skill-eval-input-tree-v1\0"
CHUNK = 1 << 20
MAX_DEPTH = 256
MAX_BYTES, MAX_FILES = 1 << 30, 100_000
_STEP = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LAST = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OWN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_REFUSED = (errno.ELOOP, errno.ENOTDIR, errno.ENXIO)  # a link under O_NOFOLLOW, a non-directory step, a socket
Kind = Literal["file", "dir"]


class Unsafe(Exception):
    """An operand the runner refuses to touch: a symlink on the way, '..', an absolute path, a FIFO/socket/device, too big."""


@dataclass(frozen=True)
class Snap:
    kind: Kind
    sha256: str  # file: sha256 of its bytes; dir: the tree digest
    files: int  # regular files copied
    bytes: int  # bytes copied


@dataclass
class _Walk:
    max_bytes: int
    max_files: int
    files: int = 0
    nbytes: int = 0
    seen: int = 0
    entries: list[tuple[bytes, bytes, str]] = field(default_factory=list)

    def digest(self, kind: Kind) -> str:
        if kind == "file":
            return self.entries[0][2]
        h = hashlib.sha256(TREE_DOMAIN)
        for rel, k, hexdigest in sorted(self.entries):
            h.update(rel + b"\0" + k + b"\0" + hexdigest.encode("ascii") + b"\0")
        return h.hexdigest()


def _plain(mode: int) -> bool:
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _checked(fd: int, what: str) -> int:
    """fd if it is a regular file or a directory; otherwise it is closed and the operand Unsafe."""
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not _plain(mode):
        os.close(fd)
        raise Unsafe(f"{what!r}: not a regular file or directory")
    return fd


def open_beneath(root_fd: int, rel: str, *, directory: bool = False) -> int:
    """Open `rel` beneath root_fd, component by component with O_NOFOLLOW; the caller closes the fd."""
    if not rel or rel.startswith("/") or "\0" in rel:
        raise Unsafe(f"{rel!r}: not a relative path")
    parts = [p for p in rel.split("/") if p != "."]
    if any(p in ("", "..") for p in parts):
        raise Unsafe(f"{rel!r}: empty or '..' component")
    *steps, last = parts or ["."]
    cur = root_fd
    try:
        for part in steps:
            nxt = os.open(part, _STEP, dir_fd=cur)
            if cur != root_fd:
                os.close(cur)
            cur = nxt
        mode = os.lstat(last, dir_fd=cur).st_mode  # never open a link, FIFO or device seen here
        if not _plain(mode):
            raise Unsafe(f"{rel!r}: {'a symlink' if stat.S_ISLNK(mode) else 'not a regular file or directory'}")
        fd = os.open(last, _LAST | (os.O_DIRECTORY if directory else 0), dir_fd=cur)
    except OSError as e:
        if e.errno in _REFUSED:
            raise Unsafe(f"{rel!r}: {e.strerror} (a symlink or non-directory on the way)") from e
        raise
    finally:
        if cur != root_fd:
            os.close(cur)
    return _checked(fd, rel)


def snapshot(root_fd: int, rel: str, dest: str, *, max_bytes: int = MAX_BYTES, max_files: int = MAX_FILES) -> Snap:
    """Copy `rel` beneath root_fd to the new runner-private path `dest`, digesting the bytes it writes."""
    walk = _Walk(max_bytes, max_files)
    src = open_beneath(root_fd, rel)
    made = False
    try:
        kind: Kind = "dir" if stat.S_ISDIR(os.fstat(src).st_mode) else "file"
        if kind == "dir":
            os.mkdir(dest, 0o700)
            made = True
            out = os.open(dest, _OWN_DIR)
        else:
            out = os.open(dest, _NEW_FILE, 0o600)
            made = True
        try:
            _fill(src, out, b"", walk, 0)
        finally:
            os.close(out)
        return Snap(kind, walk.digest(kind), walk.files, walk.nbytes)
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                discard(dest)
        raise
    finally:
        os.close(src)


def digest(root_fd: int, rel: str, *, max_bytes: int = MAX_BYTES, max_files: int = MAX_FILES) -> tuple[Kind, str]:
    """The digest snapshot() would record for `rel`, without copying."""
    fd = open_beneath(root_fd, rel)
    try:
        return _digest_fd(fd, max_bytes, max_files)
    finally:
        os.close(fd)


def digest_path(path: str, *, max_bytes: int = MAX_BYTES, max_files: int = MAX_FILES) -> tuple[Kind, str]:
    """digest() of a runner-private path (e.g. a snapshot); its last component is opened with O_NOFOLLOW."""
    try:
        fd = os.open(path, _LAST)
    except OSError as e:
        if e.errno in _REFUSED:
            raise Unsafe(f"{path!r}: {e.strerror}") from e
        raise
    fd = _checked(fd, path)
    try:
        return _digest_fd(fd, max_bytes, max_files)
    finally:
        os.close(fd)


def discard(path: str) -> None:
    """Remove a snapshot (read-only directories included), never following a link inside it."""
    _rmtree(None, path)


def _digest_fd(fd: int, max_bytes: int, max_files: int) -> tuple[Kind, str]:
    kind: Kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
    walk = _Walk(max_bytes, max_files)
    _fill(fd, None, b"", walk, 0)
    return kind, walk.digest(kind)


def _fill(src: int, dst: int | None, rel: bytes, walk: _Walk, depth: int) -> None:
    """Digest the open regular file or directory `src` into walk, copying it into `dst` unless None."""
    st = os.fstat(src)
    if stat.S_ISDIR(st.st_mode):
        if depth >= MAX_DEPTH:
            raise Unsafe(f"{os.fsdecode(rel)!r}: deeper than {MAX_DEPTH} levels")
        for name in sorted(os.listdir(src)):
            _entry(src, dst, name, rel, walk, depth + 1)
        if dst is not None:
            os.fchmod(dst, 0o555)
        return
    walk.files += 1
    h = hashlib.sha256()
    while chunk := os.read(src, CHUNK):
        walk.nbytes += len(chunk)
        if walk.nbytes > walk.max_bytes:
            raise Unsafe(f"input over {walk.max_bytes} bytes")
        h.update(chunk)
        if dst is not None:
            _write_all(dst, chunk)
    executable = bool(st.st_mode & stat.S_IXUSR)
    if dst is not None:
        os.fchmod(dst, 0o555 if executable else 0o444)
    walk.entries.append((rel, b"x" if executable else b"f", h.hexdigest()))


def _entry(sdir: int, ddir: int | None, name: str, prefix: bytes, walk: _Walk, depth: int) -> None:
    """One directory entry `name` of the open source directory sdir (copied into ddir unless None)."""
    walk.seen += 1
    if walk.seen > walk.max_files:
        raise Unsafe(f"input over {walk.max_files} entries")
    raw = os.fsencode(name)
    rel = prefix + b"/" + raw if prefix else raw
    text: bytes | None = None
    try:
        mode = os.lstat(raw, dir_fd=sdir).st_mode
        if stat.S_ISLNK(mode):
            text = os.readlink(raw, dir_fd=sdir)
        elif not _plain(mode):
            return  # FIFO, socket, device: never opened, not an entry
        else:
            src = os.open(raw, _LAST, dir_fd=sdir)
    except FileNotFoundError:
        return  # vanished mid-walk: neither copied nor digested
    except OSError as e:
        if e.errno in (*_REFUSED, errno.EINVAL):  # swapped between lstat and open/readlink
            raise Unsafe(f"{os.fsdecode(rel)!r} changed while being copied") from e
        raise
    if text is not None:
        if ddir is not None:
            os.symlink(text, raw, dir_fd=ddir)
        walk.entries.append((rel, b"l", hashlib.sha256(text).hexdigest()))
        return
    try:
        mode = os.fstat(src).st_mode
        if not _plain(mode):
            return  # swapped for a special file after lstat (O_NONBLOCK: the open did not block)
        out: int | None = None
        if ddir is not None and stat.S_ISDIR(mode):
            os.mkdir(raw, 0o700, dir_fd=ddir)
            out = os.open(raw, _OWN_DIR, dir_fd=ddir)
        elif ddir is not None:
            out = os.open(raw, _NEW_FILE, 0o600, dir_fd=ddir)
        try:
            _fill(src, out, rel, walk, depth)
        finally:
            if out is not None:
                os.close(out)
    finally:
        os.close(src)


def _rmtree(parent: int | None, name: str | bytes) -> None:
    if not stat.S_ISDIR(os.lstat(name, dir_fd=parent).st_mode):
        os.unlink(name, dir_fd=parent)
        return
    fd = os.open(name, _OWN_DIR, dir_fd=parent)
    try:
        os.fchmod(fd, 0o700)
        for child in os.listdir(fd):
            _rmtree(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
