"""One child stream teed to the agent, persisted and digested: the recorder's copy loop.

The bytes the agent is given, the bytes persisted in the capture file and the bytes digested are
one and the same stream: each chunk is read once from the child's pipe into this process, has the
private output paths substituted (runner/outputs.Substituter), is written to the agent, and exactly
the part the agent was given is appended to the runner-private capture file and handed to the digest.

Why no zero-copy (tee(2)/splice(2)): tee duplicates page *references*, so a tool that spliced or
vmspliced pages into its stdout can change them after they were teed, and the agent would read
bytes the capture never held; and tee returns 0 both at end of stream and when another writer on
the agent's pipe filled it first, so a stream could be cut short and recorded as complete. The
copy reads the bytes into memory once; what is sent is what is kept.

Small streams (nearly every call: below `HASH_WINDOW`) are persisted and hashed in the loop: that
costs less than starting a thread. Once a stream passes the window it becomes a pipeline of three
stages on a ring of reusable `CHUNK` buffers: the copy loop reads into a free buffer and writes it
to the agent; a writer thread appends it to the capture file; a digest thread hashes it and hands
the buffer back (os.write and hashlib release the GIL, so the three overlap on two cores). The
ring starts at `_RING_START` buffers and grows, one at a time and only while both are in flight,
to `_RING` per stream and `_BUFFERS_MAX` for the whole process; beyond that the copy loop waits
for a buffer (the disk or the digest sets the pace). Where the budget or a thread cannot be had
the stream stays in the loop. The agent's pipe is grown to `CHUNK` then (best effort), as the
child's is, so each chunk is one write. The capture file's size is checked against the bytes
handed to it before the digest is returned.

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

from skill_eval.runner.outputs import Substituter

FILE_IO_HELPERS = ("_open_capture",)  # the runner-private capture file of one stream
CHUNK = 1 << 20
HASH_WINDOW = 1 << 20  # the pipeline starts once a stream has moved this much: smaller ones (nearly all) never start it
_RING = 8  # buffers in flight per stream (8 MiB at most): the copy loop waits beyond it
_RING_START = 2  # a pipeline starts with two buffers and grows one at a time while its stages lag behind
_BUFFERS_MAX = 64  # ring buffers of every stream of this process together (64 MiB): past it, no growth
_budget = threading.BoundedSemaphore(_BUFFERS_MAX)
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032  # Linux fcntl commands (fcntl.F_SETPIPE_SZ is Python 3.10+ on Linux only)

# One item of the pipeline: the ring buffer it holds (handed back after hashing) and the bytes to
# persist and digest (a view of that buffer, or the substituted bytes). None ends the pipeline.
_Item = tuple[bytearray, "memoryview | bytes"] | None


def _open_capture(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)


def _grow_pipe(fd: int) -> None:
    """Let the agent's pipe hold CHUNK bytes, as the child's does: one write per chunk, not one per
    64 KiB the agent drains (measured: the copy runs at ~0.5 of a `cat | cat` pipe without it, ~1.1
    with it). Best effort (a pipe at its owner's limit stays as it is); the agent sees only more buffering."""
    with contextlib.suppress(OSError):
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        import fcntl

        if fcntl.fcntl(fd, F_GETPIPE_SZ) < CHUNK:
            fcntl.fcntl(fd, F_SETPIPE_SZ, CHUNK)


class Stream:
    """One child stream: `pump` when `src` is readable until `open` is False, then `result`.

    The stream owns `src` from construction on (it closes it at end of stream, when the agent's end
    is gone, and in `close`). If the agent's end is gone (EPIPE, EBADF) the child's pipe is closed
    too, so the child meets the broken pipe it would have met without the recorder. A capture write
    that fails is kept in `error` (the record then fails); the agent still gets its bytes.
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
        self.thread: threading.Thread | None = None  # the digest stage (None: the stream stayed small)
        self.writer: threading.Thread | None = None  # the persisting stage
        self.to_write: queue.SimpleQueue[_Item] | None = None
        self.free: queue.SimpleQueue[bytearray] | None = None
        self.buffers = 0  # ring buffers this stream holds of the process-wide budget
        self.inline_only = False  # a pipeline thread could not be started: never try again
        self.closed, self.size = False, 0

    # -- the copy loop ---------------------------------------------------------------------
    def pump(self) -> None:
        if self.free is not None:
            self._pump_ring()
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
            self._start_pipeline()

    def _take_buffer(self) -> bytearray:
        """A free ring buffer; a new one while the stages lag and the budgets allow, else wait for one."""
        assert self.free is not None
        try:
            return self.free.get_nowait()
        except queue.Empty:
            pass
        if self.buffers < _RING and _budget.acquire(blocking=False):
            self.buffers += 1
            return bytearray(CHUNK)
        return self.free.get()  # the whole ring is in flight: the disk or the digest sets the pace

    def _pump_ring(self) -> None:
        assert self.free is not None and self.to_write is not None
        buf = self._take_buffer()
        try:
            n = os.readv(self.src, [buf])
        except BaseException:
            self.free.put(buf)
            raise
        data: memoryview | bytes
        if n:
            data = self.subst.feed(memoryview(buf)[:n])
        else:
            data = self.subst.flush()
        sent = self._send(data) if data else 0
        if sent:
            self.bytes += sent
            self.to_write.put((buf, data if sent == len(data) else data[:sent]))
        else:
            self.free.put(buf)
        if not n:
            self.finish()

    def _send(self, data: memoryview | bytes) -> int:
        """Write `data` to the agent; the number of bytes it was given (all of them unless its end is gone)."""
        view, sent, size = memoryview(data), 0, len(data)
        try:
            while sent < size and self.dst >= 0:
                try:
                    sent += os.write(self.dst, view[sent:])
                except BlockingIOError:  # the agent's descriptor is non-blocking: wait until writable
                    select.select([], [self.dst], [], 1.0)
        except OSError:
            self._agent_gone()
        return sent

    def _agent_gone(self) -> None:
        self.dst = -1
        self.finish()

    def _persist(self, data: bytes | memoryview) -> None:
        """In the loop (small streams): append to the capture file and the digest."""
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

    # -- the pipeline (big streams) --------------------------------------------------------
    def _start_pipeline(self) -> None:
        """Become a pipeline; where the process-wide budget or a thread cannot be had, stay in the loop
        (inline persisting and hashing work at any size, only slower)."""
        got = 0
        while got < _RING_START and _budget.acquire(blocking=False):
            got += 1
        if got < _RING_START:
            for _ in range(got):
                _budget.release()
            return
        free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        for _ in range(got):
            free.put(bytearray(CHUNK))
        to_write: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        to_hash: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        writer = threading.Thread(target=self._write_stage, args=(to_write, to_hash), daemon=True)
        digest = threading.Thread(target=self._digest_stage, args=(to_hash, free), daemon=True)
        try:
            writer.start()
            digest.start()
        except (RuntimeError, MemoryError):  # "can't start new thread": undo, stay inline
            self.inline_only = True
            if writer.ident is not None:
                to_write.put(None)  # the writer passes the end on to the (unstarted) digest queue and stops
                writer.join()
            for _ in range(got):
                _budget.release()
            return
        if self.dst >= 0:
            _grow_pipe(self.dst)
        self.free, self.to_write, self.buffers = free, to_write, got
        self.writer, self.thread = writer, digest

    def _write_stage(self, items: queue.SimpleQueue[_Item], to_hash: queue.SimpleQueue[_Item]) -> None:
        """Append each item to the capture file, in order, then pass it on; never stops early (the
        digest stage hands the buffers back, and the copy loop waits for them)."""
        try:
            while (item := items.get()) is not None:
                if self.error is None:
                    try:
                        view = memoryview(item[1])
                        while view:
                            view = view[os.write(self.fd, view):]
                    except OSError as exc:
                        self.error = exc
                    except Exception as exc:  # noqa: BLE001 - the record fails; the stages must go on
                        self.error = OSError(errno.EIO, f"capture of {self.capture} failed: {exc!r}")
                to_hash.put(item)
        finally:
            to_hash.put(None)

    def _digest_stage(self, items: queue.SimpleQueue[_Item], free: queue.SimpleQueue[bytearray]) -> None:
        update = self.hash.update
        while (item := items.get()) is not None:
            buf, data = item
            try:
                if self.error is None:
                    update(data)
            except Exception as exc:  # noqa: BLE001 - the record fails; the buffer must still come back
                self.error = OSError(errno.EIO, f"digest of {self.capture} failed: {exc!r}")
            free.put(buf)

    def close(self) -> None:
        """Stop the pipeline, close the capture file and the child's pipe (idempotent; releases
        everything even when a step fails)."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.to_write is not None:
                self.to_write.put(None)
                for stage in (self.writer, self.thread):
                    if stage is not None and stage.ident is not None:
                        stage.join()
        finally:
            for _ in range(self.buffers):  # `buffers` stays as it was: what the stream held
                _budget.release()
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
