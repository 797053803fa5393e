"""One child stream teed to the agent, persisted and digested: the recorder's copy loop.

The bytes the agent is given, the bytes persisted in the capture file and the bytes digested are
one and the same stream. Two ways to move them, chosen per stream and per chunk:

- zero-copy (Linux, no substitution, the agent's descriptor a pipe): tee(2) duplicates what the
  child wrote into the agent's pipe and splice(2) then moves the same bytes into the capture file;
  the data never enters this process. Any refusal (the agent's descriptor is a file or a tty, a
  filesystem without splice) falls back to copying from the first byte not yet moved.
- copy: read, substitute (runner/outputs.Substituter), append to the capture file, write to the
  agent.

Either way the digest is taken off the copy loop: once a stream passes `HASH_WINDOW` bytes a
helper thread hashes the capture file behind it through mmap (no copy into Python); what is left
at the end is hashed in `result`. So a call's digest is of exactly the persisted bytes, and the
copy loop itself never hashes.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import mmap
import os
import queue
import select
import stat
import threading
from collections.abc import Callable
from typing import Any

from skill_eval.runner.outputs import Substituter

FILE_IO_HELPERS = ("_open_capture", "_reopen_capture")  # the runner-private capture file of one stream
CHUNK = 1 << 20
HASH_WINDOW = 1 << 20  # the thread starts at the first full window: smaller streams (nearly all) are hashed at the end
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032  # Linux fcntl commands (fcntl.F_SETPIPE_SZ is Python 3.10+ on Linux only)
_FALLBACK_ERRNOS = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EBADF, errno.ESPIPE)


def _open_capture(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)


def _reopen_capture(path: str) -> int:
    """The capture file again, for reading (the digest maps it)."""
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


@functools.cache
def _libc_tee() -> Callable[[int, int, int, int], int] | None:
    """tee(2) through ctypes (Python has os.splice but no os.tee), or None where there is none."""
    if not hasattr(os, "splice"):
        return None
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).tee
    except (OSError, AttributeError, ImportError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
    fn.restype = ctypes.c_ssize_t

    def tee(src: int, dst: int, size: int, flags: int) -> int:
        n: int = fn(src, dst, size, flags)  # ctypes releases the GIL for the call
        if n < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return n

    return tee


def _is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def _grow_pipe(fd: int) -> None:
    """Let the agent's pipe hold CHUNK bytes, as our own does: a tee moves at most what fits, and
    splicing 64 KiB at a time into the capture file costs several times the copy (measured on ext4).
    Best effort (a pipe at its owner's limit stays as it is); the agent sees only more buffering."""
    with contextlib.suppress(OSError):
        import fcntl

        if fcntl.fcntl(fd, F_GETPIPE_SZ) < CHUNK:
            fcntl.fcntl(fd, F_SETPIPE_SZ, CHUNK)


class Stream:
    """One child stream: `pump` when `src` is readable until `open` is False, then `result`.

    If the agent's end is gone (EPIPE, EBADF) the child's pipe is closed too, so the child meets the
    broken pipe it would have met without the recorder. A capture write that fails is kept in
    `error` (the record then fails); the agent still gets its bytes.
    """

    error: OSError | None

    def __init__(self, src: int, dst: int, capture: str, mapping: dict[bytes, bytes]):
        self.src, self.dst, self.subst = src, dst, Substituter(mapping)
        self.bytes, self.open, self.error = 0, True, None
        self.capture = capture
        self.fd = _open_capture(capture)
        self.hash, self.hashed, self.marked = hashlib.sha256(), 0, 0
        self.marks: queue.SimpleQueue[int | None] | None = None
        self.thread: threading.Thread | None = None
        self.tee = _libc_tee() if self.subst.pattern is None and dst >= 0 and _is_pipe(dst) else None
        if self.tee is not None:
            _grow_pipe(dst)

    # -- the copy loop ---------------------------------------------------------------------
    def pump(self) -> None:
        if self.tee is not None and self.dst >= 0:
            try:
                self._pump_zero_copy()
                return
            except _Fallback:
                self.tee = None  # nothing of this chunk moved yet: copy it
        chunk = os.read(self.src, CHUNK)
        data = self.subst.feed(chunk) if chunk else self.subst.flush()
        if data:
            self._persist(data)
            self._send(data)
        if not chunk:
            self.finish()

    def _pump_zero_copy(self) -> None:
        assert self.tee is not None
        while True:
            try:
                n = self.tee(self.src, self.dst, CHUNK, 0)
                break
            except BlockingIOError:  # the agent's descriptor is non-blocking: wait until writable
                select.select([], [self.dst], [], 1.0)
            except InterruptedError:  # a signal (os.* functions retry these themselves; ctypes does not)
                continue
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    self._agent_gone()
                    return
                raise _Fallback from None  # e.g. EINVAL: the copy path writes (and words any error) itself
        if n == 0:  # no data and no writer: end of stream
            self.finish()
            return
        left = n
        while left:  # the teed bytes are at the head of our pipe (only we read it): move them to the file
            try:
                moved = os.splice(self.src, self.fd, left) if self.error is None else 0
            except OSError as exc:
                if exc.errno not in _FALLBACK_ERRNOS:
                    self.error = exc
                moved = 0
            if moved == 0:  # splice refused (or capture failed): read the rest of the chunk and append it
                rest = _read_exactly(self.src, left)
                self._persist(rest)
                self.tee = None
                return
            left -= moved
            self._advance(moved)

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view and self.dst >= 0:
                try:
                    view = view[os.write(self.dst, view):]
                except BlockingIOError:  # the agent's descriptor is non-blocking: wait until writable
                    select.select([], [self.dst], [], 1.0)
        except OSError:
            self._agent_gone()

    def _agent_gone(self) -> None:
        self.dst = -1
        self.finish()

    def _persist(self, data: bytes) -> None:
        """Append to the capture file (every byte the agent is given, in order)."""
        view = memoryview(data)
        while view and self.error is None:
            try:
                view = view[os.write(self.fd, view):]
            except OSError as exc:
                self.error = exc
        if self.error is None:
            self._advance(len(data))

    def _advance(self, n: int) -> None:
        self.bytes += n
        if self.bytes - self.marked < HASH_WINDOW:
            return  # wake the hashing thread once per window, not per 64 KiB tee (each wake costs a GIL hand-off)
        self.marked = self.bytes
        if self.marks is None:
            self.marks = queue.SimpleQueue()
            self.thread = threading.Thread(target=self._digest_behind, daemon=True)
            self.thread.start()
        self.marks.put(self.bytes)

    def finish(self) -> None:
        if self.open:
            self.open = False
            os.close(self.src)

    # -- the digest ------------------------------------------------------------------------
    def _digest_behind(self) -> None:
        """Hash behind the copy loop in windows of at least HASH_WINDOW (a tee into a 64 KiB agent pipe
        moves 64 KiB at a time; mapping each piece would cost more than hashing it)."""
        assert self.marks is not None
        fd, failed, mark = -1, False, 0
        try:
            while (got := self.marks.get()) is not None:
                mark = got
                if failed:
                    continue
                try:
                    if fd < 0:
                        fd = _reopen_capture(self.capture)
                    self._hash_to(mark, fd)
                except OSError:
                    failed = True  # the end of `result` repeats what failed here, and says so
        finally:
            if fd >= 0:
                os.close(fd)

    def _hash_to(self, end: int, fd: int) -> None:
        """Hash the capture file (open as `fd`) from `hashed` to `end` (bytes this stream already persisted)."""
        if end <= self.hashed:
            return
        if os.fstat(fd).st_size < end:  # never map past the end (SIGBUS): the file is not what we wrote
            raise OSError(errno.EIO, f"capture file {self.capture} is shorter than the bytes written")
        start = self.hashed - self.hashed % mmap.ALLOCATIONGRANULARITY
        with mmap.mmap(fd, end - start, prot=mmap.PROT_READ, offset=start) as mm, memoryview(mm) as view:
            self.hash.update(view[self.hashed - start:])
        self.hashed = end

    def result(self, path: str) -> dict[str, Any]:
        if self.thread is not None and self.marks is not None:
            self.marks.put(None)
            self.thread.join()
        try:
            os.close(self.fd)
        except OSError as exc:
            self.error = self.error or exc
        if self.error is not None:
            raise self.error
        if self.bytes > self.hashed:  # the rest (or all of a small stream); raises when the file is short
            fd = _reopen_capture(self.capture)
            try:
                self._hash_to(self.bytes, fd)
            finally:
                os.close(fd)
        return {"path": path, "sha256": self.hash.hexdigest(), "bytes": self.bytes}


class _Fallback(Exception):
    """tee(2) refused this pair of descriptors: copy instead (nothing of the chunk moved yet)."""


def _read_exactly(fd: int, n: int) -> bytes:
    parts = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)
