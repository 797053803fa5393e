"""Bundle files read ahead, by a forked reader, while the evidence pass gets ready.

Why: `skill-eval evidence` spends its first ~0.1 s on one core (imports, content, the grading
catalog) before its workers fork, while the machine's other core idles, and then ~1/4 of each
worker's time per bundle is walking the bundle directory and reading its files (system calls).
The reader is forked as soon as the configuration is loaded; it walks the evidence tree the way
the pass will (`fsio.scan_top`, then `fsio.scan_below` per bundle directory) and reads each
bundle's files with the read the pass itself makes (`fsio.open_plain`), in the pass's order,
until the pass forks its workers (`stop`); a serial pass (a few hundred bundles) lets it go on
beside it. The pass takes a bundle's walk and bytes from here instead of walking and reading it
again.

It is only an earlier read by the same code, in a process of our own (the runner's side, never
the agent's): a bundle it did not reach, whose walk raised, or a file it could not read plainly
(a symlink, over the cap, not a regular file) is walked and read by the pass as always, which
words every refusal. A record is used only for the unit it names, and only when the reader
listed the same tree (same repository root and path).

Where: a memfd (shared memory, at most MAX_BYTES; read with pread, so in no process's resident set)
holds pickled records appended by the reader; an anonymous shared mapping holds the index, 64-bit slots:
  [0] stop (the parent sets it: the reader ends at its next bundle)
  [1], [2]  length and offset + 1 of the record (tree path, units): the pass's units, in its order
  [3 + 2i], [4 + 2i]  the same for unit i's record (offset written last: 0 = not yet)
Only Linux (os.memfd_create) and only with os.fork; elsewhere nothing is read ahead.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from skill_eval.config import Config

MAX_UNITS = 1 << 16  # units beyond it are read by the pass (the index is a fixed 1 MiB mapping)
MAX_BYTES = 64 << 20  # the memfd's size at most (shared memory, charged to the process): then the reader stops
_SLOTS = 3 + 2 * MAX_UNITS
_STOP, _UNITS = 0, 1


class Reader:
    """The parent's handle on one reader process (see the module docstring)."""

    def __init__(self, pid: int, fd: int, mem: mmap.mmap, listed: int, root: str, rel: str):
        self.pid, self.fd, self._mem, self.root, self.rel = pid, fd, mem, root, rel
        self._listed = listed  # read end of a pipe: one byte once the units are published, EOF if the reader ends first
        self.slots = memoryview(mem).cast("Q")
        self.closed = False

    def matches(self, root: Path | str, rel: str) -> bool:
        return not self.closed and os.fspath(root) == self.root and rel == self.rel

    def units(self) -> list[str] | None:
        """The reader's units of the tree (regrade.units_of of its scan_top), or None when it has not
        listed the tree (its walk raised: the pass then walks and words the refusal). Waits for the
        listing: the pass would otherwise make the same walk itself."""
        if self.closed:
            return None
        if self._listed >= 0:
            with contextlib.suppress(OSError):
                os.read(self._listed, 1)  # b"u", or b"" when the reader ended without listing
            os.close(self._listed)
            self._listed = -1
        got = _record(self.fd, self.slots, _UNITS)
        if not isinstance(got, tuple) or len(got) != 2 or got[0] != self.rel or not isinstance(got[1], list):
            return None
        units: list[str] = got[1]
        return units

    def take(self, i: int, unit: str) -> tuple[list[str], list[str], set[str], Mapping[str, bytes]] | None:
        """Unit i's (meta.json paths below it, symlinks met, its own entries' names, bytes by relative
        path), as fsio.scan_below and fsio.open_plain gave them; None when not read ahead."""
        if self.closed or i >= MAX_UNITS:
            return None
        got = _record(self.fd, self.slots, 3 + 2 * i)
        if not isinstance(got, tuple) or len(got) != 5 or got[0] != unit:
            return None
        return got[1], got[2], got[3], got[4]

    def stop(self) -> None:
        """Tell the reader to end at its next bundle (the pass's workers read the rest)."""
        if not self.closed:
            self.slots[_STOP] = 1

    def close(self) -> None:
        """Stop and reap the reader, release the memfd and the index. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.slots[_STOP] = 1
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)
        for fd in (self.fd, self._listed):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._listed = -1
        self.slots.release()
        self._mem.close()


_CURRENT: list[Reader] = []


def current(root: Path | str, rel: str) -> Reader | None:
    """The active reader of tree (root, rel), if one was started for it."""
    for reader in _CURRENT:
        if reader.matches(root, rel):
            return reader
    return None


_HELD = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def ahead(cfg: Config) -> Iterator[Reader | None]:
    """Read the host's evidence tree ahead for the block (a command that will run the evidence pass
    starts it right after loading the configuration, before its heavier imports). Ctrl-C and SIGTERM
    are held from before the fork until the reader is registered here: whatever happens, the block's
    end stops and reaps it."""
    reader = None
    held = hasattr(signal, "pthread_sigmask")
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD) if held else set()
    try:
        reader = start(cfg.root, cfg.evidence_rel, cfg.max_bundle_file_bytes)
        if reader is not None:
            _CURRENT.append(reader)
        if held:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)  # a signal that came meanwhile is raised here
            held = False
        yield reader
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        if reader is not None:
            _CURRENT.remove(reader)
            reader.close()


def start(root: Path | str, rel: str, max_bytes: int) -> Reader | None:
    """Fork a reader of tree `rel` below repository `root`; None where that cannot be done here."""
    if not hasattr(os, "memfd_create") or not hasattr(os, "fork") or os.environ.get("SKILL_EVAL_READAHEAD") == "0":
        return None
    fds: list[int] = []
    mem = None
    try:
        fds.append(os.memfd_create("skill-eval-readahead", os.MFD_CLOEXEC))
        fds.extend(os.pipe())
        mem = mmap.mmap(-1, _SLOTS * 8)
        parent = os.getpid()
        pid = os.fork()
    except OSError:
        if mem is not None:
            mem.close()
        for fd in fds:
            os.close(fd)
        return None
    fd, listed, tell = fds
    if pid == 0:  # pragma: no cover - the reader (coverage does not follow a fork)
        code = 0
        try:
            if hasattr(signal, "pthread_sigmask"):
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)  # held by `ahead` only until the parent registered this reader
            os.close(listed)
            _read_ahead(fd, memoryview(mem).cast("Q"), os.fspath(root), rel, max_bytes, parent, tell)
        except BaseException:  # noqa: BLE001 - the reader only ever ends; the pass reads what it did not
            code = 1
        finally:
            os._exit(code)
    os.close(tell)
    return Reader(pid, fd, mem, listed, os.fspath(root), rel)


def _read_ahead(fd: int, slots: memoryview, root: str, rel: str, max_bytes: int, parent: int, tell: int) -> None:  # pragma: no cover - runs in the reader
    import pickle

    from skill_eval import fsio, regrade

    _, found, below = fsio.scan_top(root, rel, "meta.json", regrade.LAYOUT_DEPTH - 1)
    units = regrade.units_of(found, below)
    end = _append(fd, 0, pickle.dumps((rel, units), pickle.HIGHEST_PROTOCOL), slots, _UNITS)
    os.write(tell, b"u")
    os.close(tell)
    real_root = Path(root).resolve()
    for i, unit in enumerate(units[:MAX_UNITS]):
        if slots[_STOP] or os.getppid() != parent:
            return
        if not unit.endswith("/"):
            continue  # a meta.json above bundle depth (a layout problem): the pass reads it
        here = unit[:-1]
        got = read_bundle(real_root, here, max_bytes)
        if got is not None:
            record = pickle.dumps((unit, *got), pickle.HIGHEST_PROTOCOL)
            if end + len(record) > MAX_BYTES:
                return
            end = _append(fd, end, record, slots, 3 + 2 * i)


def read_bundle(real_root: Path, here: str, max_bytes: int) -> tuple[list[str], list[str], set[str], dict[str, bytes]] | None:
    """Bundle directory `here` walked and read as the pass would: (meta.json paths below it, symlinks
    met, its own entries' names, bytes by relative path: each file as fsio.open_plain reads it, up to
    regrade.BUNDLE_BYTES in all, captured streams left out); None when the walk raised (a refusal: the pass
    walks again and words it). One compiled call for a link-free directory (fsio.read_bundle_dir),
    else fsio.scan_below and fsio.open_plain."""
    from skill_eval import fsio, regrade

    fast = fsio.read_bundle_dir(here, max_bytes, regrade.BUNDLE_BYTES)
    if fast is not None:
        return fast[0], [], fast[1], fast[2]
    links: list[str] = []
    names: set[str] = set()
    paths: list[str] = []
    try:
        metas = fsio.scan_below(real_root, here, "meta.json", links, names, paths)
    except Exception:  # noqa: BLE001 - a refusal: the pass walks this bundle again and words it
        return None
    files: dict[str, bytes] = {}
    budget, cut = regrade.BUNDLE_BYTES, len(here) + 1
    for path in paths:
        name = path[cut:]
        if _stream(name):
            continue
        data = fsio.open_plain(path, min(max_bytes, budget))
        if isinstance(data, bytes):
            files[name] = data
            budget -= len(data)
    return metas, links, names, files


def _stream(name: str) -> bool:
    """A captured stdout/stderr stream (captured/N.out, captured/N.err): read only when a report went
    to stdout, so not read ahead (the pass reads it when it needs it)."""
    return name.startswith("captured/") and name.count("/") == 1 and name.endswith((".out", ".err"))


def _append(fd: int, end: int, record: bytes, slots: memoryview, at: int) -> int:  # pragma: no cover - runs in the reader
    view = memoryview(record)
    offset = end
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n
    slots[at] = len(record)
    slots[at + 1] = end + 1  # last: a reader of the slots sees a whole record or none
    return offset


def _record(fd: int, slots: memoryview, at: int) -> Any:
    """The record indexed at slot `at`, or None when there is none (yet) or it does not read whole."""
    import pickle

    where = slots[at + 1]
    size = slots[at]
    if not where or not size:
        return None
    try:
        data = os.pread(fd, size, where - 1)
    except OSError:
        return None
    if len(data) != size:
        return None
    try:
        return pickle.loads(data)  # noqa: S301 - our own reader's records, in our own memfd
    except Exception:  # noqa: BLE001 - a record torn by a concurrent write: not used
        return None
