"""Numbered chunks of work computed by forked children, delivered in chunk order.

Why not multiprocessing.Pool: its feeder/handler threads and per-task pickling competed with the
workers for the cores (~0.2 ms per bundle of the evidence pass). Here the chunk numbers wait in a
pipe of tickets (pre-filled, write end closed: a read takes the next number, or b"" when none is
left); each child claims chunks until none is left and sends each chunk's list (one pickle) on its
own pipe; the parent only consumes them, in chunk order (measured: better than also computing
chunks there, which delayed the consumer). If every child is gone, the parent computes what is
left; a child's exception is re-raised in the parent.

`Chunks.start()` forks (the children inherit the parent's state at that moment); iterating
consumes. Between the two the parent may do other work (the evidence gate selects the suite while
the children grade). `close()` (also after a failed or abandoned iteration) stops and reaps every
child and closes every descriptor.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any


class Chunks:
    """`received` (optional) maps each chunk's list as it reaches the parent, before it waits in
    order (the evidence pass checks freshness there and drops each bundle's meta: chunks that
    arrive early are kept small)."""

    def __init__(self, chunks: int, compute: Callable[[int], list[Any]], jobs: int,
                 received: Callable[[list[Any]], list[Any]] | None = None):
        self._chunks, self._compute, self._jobs = chunks, compute, jobs
        self._received = received or (lambda results: results)
        self._children: dict[int, int] = {}  # read fd -> pid
        self._tickets: int | None = None
        self._frozen = False

    def start(self) -> None:
        """Fork the children (once; a pool that was closed never forks again). On failure (no pipe,
        no fork) every child started so far is stopped and every descriptor closed, then it raises."""
        if self._tickets is not None:
            return
        import gc
        import pickle  # noqa: F401 - imported once here, so the children inherit it

        self._tickets = -1  # from here on a failure leaves a closed pool
        try:
            tickets_r, tickets_w = os.pipe()
            self._tickets = tickets_r
            _fill(tickets_w, self._chunks)
            gc.freeze()  # the collector would write to every inherited object's header: a copy-on-write copy of the heap per child
            self._frozen = True
            for _ in range(self._jobs):
                out_r, out_w = os.pipe()
                try:
                    with contextlib.suppress(AttributeError, OSError):
                        import fcntl

                        fcntl.fcntl(out_w, fcntl.F_SETPIPE_SZ, 1 << 20)  # a child never waits for the parent to read
                    pid = os.fork()
                except BaseException:
                    os.close(out_r)
                    os.close(out_w)
                    raise
                if pid == 0:  # pragma: no cover - the child (coverage does not follow a fork)
                    os.close(out_r)
                    for fd in self._children:
                        os.close(fd)
                    _child(tickets_r, out_w, self._compute)
                os.close(out_w)
                self._children[out_r] = pid
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[list[Any]]:
        import pickle
        import select

        self.start()
        if self._tickets is None or self._tickets < 0:
            raise RuntimeError("forkpool: this pool was closed (a pool is consumed once)")
        children = self._children
        pending: dict[int, Any] = {}
        try:
            for want in range(self._chunks):
                while want not in pending:
                    ready = select.select(list(children), [], [], 0)[0] if children else []
                    if not ready and not children:  # every child gone (one failed): the parent finishes the work
                        ticket = os.read(self._tickets, 4)
                        if ticket:
                            c = int.from_bytes(ticket, "little")
                            pending[c] = self._received(self._compute(c))
                            continue
                        raise RuntimeError("forkpool: a worker exited before sending its results")
                    if not ready:
                        ready = select.select(list(children), [], [], None)[0]
                    for fd in ready:
                        got = _receive(fd)
                        if got is None:  # end of stream: this child is done
                            os.close(fd)
                            os.waitpid(children.pop(fd), 0)
                            continue
                        c, results = pickle.loads(got)  # noqa: S301 - our own forked child, over a private pipe
                        if isinstance(results, BaseException):
                            raise results
                        pending[c] = self._received(results)
                yield pending.pop(want)
        finally:
            self.close()

    def close(self) -> None:
        if self._frozen:
            import gc

            gc.unfreeze()
            self._frozen = False
        if self._tickets is not None and self._tickets >= 0:
            with contextlib.suppress(OSError):
                os.close(self._tickets)
        self._tickets = -1  # closed (started or not): never forks again
        for fd, pid in self._children.items():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        self._children = {}


def _fill(fd: int, chunks: int) -> None:
    """Write every chunk number into the ticket pipe, then close it (readers see EOF when all are taken)."""
    data = b"".join(c.to_bytes(4, "little") for c in range(chunks))  # < 64 KiB: callers keep chunks below 16,384
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _child(tickets: int, out: int, compute: Callable[[int], list[Any]]) -> None:  # pragma: no cover - a forked child
    """Claim chunks until none is left, sending each one's list; never returns."""
    import pickle

    code = 0
    try:
        while True:
            ticket = os.read(tickets, 4)
            if not ticket:
                break
            c = int.from_bytes(ticket, "little")
            try:
                data = pickle.dumps((c, compute(c)), pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001 - re-raised by the parent
                try:
                    data = pickle.dumps((c, exc), pickle.HIGHEST_PROTOCOL)
                except Exception:  # noqa: BLE001 - an unpicklable exception: its text
                    data = pickle.dumps((c, RuntimeError(f"{type(exc).__name__}: {exc}")), pickle.HIGHEST_PROTOCOL)
            _send(out, data)
    except BaseException:  # noqa: BLE001 - a child must never unwind into the parent's code
        code = 1
    finally:
        os._exit(code)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int) -> bytes | None:
    """One message from a child, or None at end of stream."""
    head = _read_exactly(fd, 8)
    if head is None:
        return None
    body = _read_exactly(fd, int.from_bytes(head, "little"))
    if body is None:
        raise RuntimeError("forkpool: a worker's results were cut short")
    return body


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left:
        got = os.read(fd, min(left, 1 << 20))
        if not got:
            if left == size:
                return None
            raise RuntimeError("forkpool: a worker's results were cut short")
        parts.append(got)
        left -= len(got)
    return b"".join(parts)
