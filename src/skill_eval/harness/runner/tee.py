"""One child stream teed to the agent, persisted and digested: the recorder's copy loop.

The bytes the agent is given, the bytes persisted in the capture file and the bytes digested are
one and the same stream, whatever the tool does to its own output and whoever else writes the
agent's pipe.

Small streams (nearly every call: below `HASH_WINDOW`) are copied in the loop: each chunk is read
once from the child's pipe into this process, has the private output paths substituted
(runner/outputs.Substituter), is written to the agent, and exactly the part the agent was given is
appended to the capture file and handed to the digest. That costs less than starting a thread.

Once a stream passes the window it goes *capture first* (where the agent's end is a pipe and the
capture a regular file): each chunk is put into the capture file before anything else sees it
(splice(2) from the child's pipe, so the kernel copies it into the file's pages; with substitution
on, read, substituted and written), then the agent is given that range *of the capture file*
(sendfile(2): its pipe takes references to the file's pages, no copy), then a digest thread reads
the range back and hashes it. The capture is the source of both other copies, so the agent reads
what was kept by construction: a tool that spliced pages into its stdout and changes them later
changes nothing (the splice into the file copied them), and only the recorder writes the capture.
If the agent's end goes away inside a range the capture is cut back (ftruncate) to what it was given.
The digest may lag the agent by `_LAG` ranges; then the copy waits for it. Measured on two cores:
1.1-1.3x the in-loop copy with a writer and a digest thread it replaces, which copied each chunk
three times (into the process, to the agent, to the file).

Why no tee(2): it duplicates page *references* of the child's pipe, so a tool that spliced or
vmspliced pages into its stdout could change them after they were teed (the agent would read bytes
the capture never held); and it returns 0 both at end of stream and when another writer on the
agent's pipe filled it first. Here only a read(2) of 0 bytes ends a stream (a splice of 0 sends the
stream back to the loop, whose read decides).

Whatever the capture-first path cannot do leaves the stream in the loop, which works at any size,
only slower: a descriptor pair splice or sendfile refuses, a thread that cannot start. A capture
write that fails is kept in `error` (the record then fails) and the stream goes back to the loop,
so the agent still gets its bytes (splice moves nothing when it fails; substituted bytes are in
memory). A capture that cannot be read back (something else wrote the runner's store; a disk
error) fails the record and ends the stream, cut short rather than given later bytes after a gap.

"The agent was given" means: its descriptor accepted the bytes (a pipe may still hold some the
agent never reads). `subst.count` counts the replacements made in what was read, which can exceed
those in the capture by the few in a chunk the agent's end refused when it went away.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import queue
import select
import stat
import threading
from typing import Any

from skill_eval.harness.runner.outputs import Substituter

FILE_IO_HELPERS = ("_open_capture",)  # the runner-private capture file of one stream
CHUNK = 1 << 20
HASH_WINDOW = 1 << 20  # capture-first starts once a stream has moved this much: smaller ones (nearly all) stay in the loop
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032  # Linux fcntl commands (fcntl.F_SETPIPE_SZ is Python 3.10+ on Linux only)
_LAG = 16  # ranges (1 MiB at most each) the digest may lag behind the agent: then the copy waits for it
# errors that mean "this descriptor pair cannot splice/sendfile", not "the capture failed" or "the agent is gone"
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV})
_AGENT_GONE = frozenset({errno.EPIPE, errno.EBADF, errno.ECONNRESET, errno.ENOTCONN})  # the agent's end went away


def _open_capture(path: str) -> int:
    # read as well as write: the agent and the digest are given the capture's own bytes (capture first)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)


def _grow_pipe(fd: int) -> None:
    """Let the agent's pipe hold CHUNK bytes, as the child's does: one transfer per chunk, not one per
    64 KiB the agent drains (measured: the copy runs at ~0.5 of a `cat | cat` pipe without it, ~1.1
    with it). Best effort (a pipe at its owner's limit stays as it is); the agent sees only more buffering."""
    with contextlib.suppress(OSError):
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        import fcntl

        if fcntl.fcntl(fd, F_GETPIPE_SZ) < CHUNK:
            fcntl.fcntl(fd, F_SETPIPE_SZ, CHUNK)


def _wait_writable(fd: int) -> None:
    """Until the agent's non-blocking descriptor takes bytes again (poll: select refuses fds >= 1024)."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    poller.poll(1000)


def _can_go_capture_first(capture: int, dst: int) -> bool:
    """A regular capture file open for reading and writing, an agent's end that is a pipe, and the calls."""
    if not (hasattr(os, "splice") and hasattr(os, "sendfile") and hasattr(os, "preadv")) or dst < 0:
        return False
    try:
        import fcntl

        return (stat.S_ISREG(os.fstat(capture).st_mode) and stat.S_ISFIFO(os.fstat(dst).st_mode)
                and fcntl.fcntl(capture, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR)
    except OSError:
        return False


class Stream:
    """One child stream: `pump` when `src` is readable until `open` is False, then `result`.

    The stream owns `src` from construction on (it closes it at end of stream, when the agent's end
    is gone, and in `close`). If the agent's end is gone (its descriptor refuses a write: EPIPE,
    EBADF, ...) the child's pipe is closed too, so the child meets the broken pipe it would have met
    without the recorder. A capture write that fails is kept in `error` (the record then fails); the
    agent still gets its bytes. A capture that cannot be read back (capture first: something else
    wrote the runner's store, or the disk failed) fails the record and ends the stream there, so the
    agent's stream is cut, never holed.
    `close` is idempotent and releases everything (`result` calls it); call it on any path that
    gives up on the stream.
    """

    error: OSError | None

    def __init__(self, src: int, dst: int, capture: str, mapping: dict[bytes, bytes]):
        self.fd = _open_capture(capture)  # first: a refusal leaves `src` with the caller
        self.src, self.dst, self.subst = src, dst, Substituter(mapping)
        self.bytes, self.open, self.error = 0, True, None
        self.capture = capture
        self.hash = hashlib.sha256()
        self.thread: threading.Thread | None = None  # the digest thread (None: the stream never went capture first)
        self.ranges: queue.Queue[tuple[int, int] | None] | None = None  # set while capture first
        self.inline_only = False  # capture first was refused or given up: the stream stays in the loop
        self.closed, self.size = False, 0

    # -- the loop (every stream's start; any stream the capture-first path cannot take) -----
    def pump(self) -> None:
        if self.ranges is not None:
            self._pump_capture_first()
            return
        chunk = os.read(self.src, CHUNK)
        data = self.subst.feed(chunk) if chunk else self.subst.flush()
        if data:
            sent = self._send(data)
            if sent:
                self._persist(data if sent == len(data) else data[:sent])
        if not chunk:
            self.finish()
        elif self.bytes >= HASH_WINDOW and self.open and not self.inline_only:
            self._go_capture_first()

    def _send(self, data: memoryview | bytes) -> int:
        """Write `data` to the agent; the number of bytes it was given (all of them unless its end is gone)."""
        view, sent, size = memoryview(data), 0, len(data)
        try:
            while sent < size and self.dst >= 0:
                try:
                    sent += os.write(self.dst, view[sent:])
                except BlockingIOError:  # the agent's descriptor is non-blocking: wait until writable
                    _wait_writable(self.dst)
        except OSError:  # any refused write: the agent's end is gone
            self._agent_gone()
        return sent

    def _agent_gone(self) -> None:
        self.dst = -1
        self.finish()

    def _persist(self, data: bytes | memoryview) -> None:
        """In the loop: append to the capture file and the digest."""
        view = memoryview(data)
        while view and self.error is None:
            try:
                view = view[os.write(self.fd, view):]
            except OSError as exc:
                self.error = exc
        if self.error is None:
            self.bytes += len(data)
            self.hash.update(data)

    def finish(self) -> None:
        if self.open:
            self.open = False
            os.close(self.src)

    # -- capture first (big streams) ---------------------------------------------------------
    def _go_capture_first(self) -> None:
        """Start the digest thread and go capture first; where that cannot be, stay in the loop for good."""
        self.inline_only = True  # unless the switch below completes
        if self.error is not None or not _can_go_capture_first(self.fd, self.dst):
            return
        ranges: queue.Queue[tuple[int, int] | None] = queue.Queue(_LAG)
        thread = threading.Thread(target=self._digest_ranges, args=(ranges,), daemon=True)
        try:
            thread.start()
        except (RuntimeError, MemoryError):  # "can't start new thread": the loop does it all
            return
        _grow_pipe(self.dst)
        self.ranges, self.thread, self.inline_only = ranges, thread, False

    def _pump_capture_first(self) -> None:
        """One chunk: into the capture, then the capture's range to the agent and the digest."""
        start = self.bytes  # the capture holds exactly the bytes given so far, and its file offset is there
        n = self._capture_substituted() if self.subst.keys else self._capture_spliced()
        if n:
            self._give(start, n)

    def _capture_spliced(self) -> int:
        """Move a chunk of the child's pipe into the capture (the kernel copies it): its size; 0 when
        nothing was moved, and then the stream is back in the loop (whose read of b"" alone ends a stream)."""
        try:
            n = os.splice(self.src, self.fd, CHUNK)
        except BlockingIOError:
            return 0
        except OSError as exc:  # nothing was moved: the bytes wait in the child's pipe for the loop
            if exc.errno not in _UNSUPPORTED:
                self.error = self.error or exc
            n = 0
        if not n:  # end of stream, or a capture write refused: let the loop read (and end) it
            self._back_to_loop()
        return n

    def _capture_substituted(self) -> int:
        """Read a chunk, substitute, append it to the capture: its size (0 at the end, then the stream
        is finished). A capture that refuses the bytes fails the record; the agent gets them from
        memory, and the stream goes on in the loop."""
        chunk = os.read(self.src, CHUNK)
        data = memoryview(self.subst.feed(chunk) if chunk else self.subst.flush())
        done = 0
        try:
            while done < len(data):
                done += os.write(self.fd, data[done:])
        except OSError as exc:
            self.error = self.error or exc
            self._back_to_loop()
            self._send(data)
            done = 0
        if not chunk:
            self.finish()
        return done

    def _give(self, start: int, n: int) -> None:
        """Give the agent the capture's range [start, start+n) and queue what it was given for the
        digest; if the agent's end went away inside the range, cut the capture back to what it got.
        sendfile refused (a descriptor pair it cannot serve): the range is copied and the stream goes
        back to the loop. The range cannot be read back: the record fails and the stream ends."""
        sent, leave = 0, False
        while sent < n and self.dst >= 0:
            try:
                k = os.sendfile(self.dst, self.fd, start + sent, n - sent)
            except BlockingIOError:  # the agent's descriptor is non-blocking: wait until writable
                _wait_writable(self.dst)
                continue
            except OSError as exc:
                if exc.errno in _AGENT_GONE:
                    self._agent_gone()
                    break
                if exc.errno not in _UNSUPPORTED:  # not the agent's doing (EIO, ENOMEM, ...): the record fails
                    self.error = self.error or exc
                sent += self._give_copied(start + sent, n - sent)
                leave = True
                break
            if k == 0:
                self._cannot_read_back()
                break
            sent += k
        if sent < n:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start + sent)
                os.lseek(self.fd, start + sent, os.SEEK_SET)
        if sent:
            self.bytes += sent
            assert self.ranges is not None
            self.ranges.put((start, sent))
        if leave and self.open:
            self._back_to_loop()

    def _give_copied(self, start: int, n: int) -> int:
        """The range read back and written to the agent; the bytes it was given."""
        try:
            data = os.pread(self.fd, n, start)
        except OSError as exc:
            data, self.error = b"", self.error or exc
        if len(data) < n:
            self._cannot_read_back()
        return self._send(data) if data else 0

    def _cannot_read_back(self) -> None:
        """The capture is shorter than the bytes just put in it (something else wrote the runner's
        store) or unreadable: the record fails, and the stream ends here (the child meets a broken
        pipe), so the agent's stream is cut short rather than given later bytes after a gap."""
        self.error = self.error or OSError(errno.EIO, f"capture file {self.capture} shrank or failed while teed")
        self.finish()

    def _back_to_loop(self) -> None:
        """Leave capture first for good: the digest thread finishes its ranges first, so the loop's
        digest goes on in order."""
        self._stop_digest()
        self.inline_only = True

    def _digest_ranges(self, ranges: queue.Queue[tuple[int, int] | None]) -> None:
        """Read each range the agent was given back from the capture and hash it, in order."""
        buf = memoryview(bytearray(CHUNK))
        update = self.hash.update
        while (item := ranges.get()) is not None:
            start, n = item
            try:
                while n and self.error is None:
                    got = os.preadv(self.fd, [buf[: min(n, CHUNK)]], start)
                    if not got:
                        raise OSError(errno.EIO, f"capture file {self.capture} shrank while teed")
                    update(buf[:got])
                    start, n = start + got, n - got
            except OSError as exc:
                self.error = self.error or exc
            except Exception as exc:  # noqa: BLE001 - the record fails; the queue must still drain
                self.error = self.error or OSError(errno.EIO, f"digest of {self.capture} failed: {exc!r}")

    def _stop_digest(self) -> None:
        ranges, self.ranges = self.ranges, None
        if ranges is not None:
            ranges.put(None)
            if self.thread is not None and self.thread.ident is not None:
                self.thread.join()

    def close(self) -> None:
        """Stop the digest thread, close the capture file and the child's pipe (idempotent; releases
        everything even when a step fails)."""
        if self.closed:
            return
        self.closed = True
        try:
            self._stop_digest()
        finally:
            try:
                self.finish()
            finally:
                try:
                    self.size = os.fstat(self.fd).st_size
                except OSError as exc:
                    self.error = self.error or exc
                try:
                    os.close(self.fd)
                except OSError as exc:
                    self.error = self.error or exc

    def result(self, path: str) -> dict[str, Any]:
        """The stream's record entry; raises the capture's error (after releasing everything)."""
        self.close()
        if self.error is not None:
            raise self.error
        size = self.size
        if size != self.bytes:
            how = "shorter" if size < self.bytes else "longer"
            raise OSError(errno.EIO, f"capture file {self.capture} is {how} than the bytes written "
                                     f"({size} of {self.bytes}): something else wrote the runner's store")
        return {"path": path, "sha256": self.hash.hexdigest(), "bytes": self.bytes}
