"""One `skill-eval run` per repository at a time (issue 24 item 6).

Two runs recording into one evidence tree both planned the same items, both did all the work, and
the loser failed at the very end ("a sealed bundle already exists"). `hold(root)` takes an advisory
lock (flock) on a file named by the repository's real path under `$XDG_STATE_HOME/skill-eval/locks/`
(outside the repository: nothing to commit or ignore, and nothing an agent's sandbox can reach) for
the whole run; a second run fails at once naming the holder (pid and command line), or with
`wait=True` (`run --wait`) queues behind it. The kernel drops the lock when its holder dies, however
it dies: a stale lock file is never a stale lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from skill_eval.core import fsio
from skill_eval.core.errors import SkillEvalError

FILE_IO_HELPERS = ("hold", "_holder")  # the lock file only: runner-private, outside every repository


class RunLocked(SkillEvalError):
    """Another run holds the repository's lock."""


def lock_path(root: Path) -> Path:
    key = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:32]
    return fsio.state_dir() / "locks" / f"run-{key}.lock"


def _holder(fd: int) -> str:
    text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
    return text or "a run that has not yet said who it is"


@contextlib.contextmanager
def hold(root: Path, *, wait: bool = False, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold `root`'s run lock for the block (see the module docstring)."""
    path = lock_path(root)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            if not wait:
                raise RunLocked(f"another `skill-eval run` is recording into this repository ({holder})",
                                source=os.path.realpath(root),
                                fix="let it finish (or stop it), or pass --wait to start when it is done") from None
            if say is not None:
                say(f"run: waiting for the run recording into this repository ({holder}) to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {' '.join(sys.argv)}"[:4000].encode("utf-8", "replace"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock
