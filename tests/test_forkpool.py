"""forkpool.Chunks: every chunk's list in order, whoever computed it; a worker's error reaches the caller;
no child outlives the pool (consumed, abandoned or failed)."""

from __future__ import annotations

import os

import pytest

from skill_eval import forkpool


def _squares(c: int) -> list[tuple[int, int]]:
    return [(c, c * c), (os.getpid(), c)]


@pytest.mark.parametrize(("chunks", "jobs"), [(1, 2), (17, 2), (500, 2), (500, 3), (97, 8)])
def test_every_chunk_in_order(chunks, jobs):
    got = list(forkpool.Chunks(chunks, _squares, jobs))
    assert [r[0] for r in got] == [(c, c * c) for c in range(chunks)]
    assert {pid for _, (pid, _) in got} - {os.getpid()}, "computed by the children"


def test_start_then_consume_later():
    """start() forks; the parent may do other work before iterating (the evidence gate selects the suite)."""
    pool = forkpool.Chunks(40, _squares, 2)
    pool.start()
    pool.start()  # once
    assert [r[0] for r in pool] == [(c, c * c) for c in range(40)]


def test_reraises_a_workers_error():
    def boom(c: int) -> list[int]:
        if c == 250:
            raise ValueError(f"chunk {c} is broken")
        return [c]

    with pytest.raises(ValueError, match="chunk 250 is broken"):
        list(forkpool.Chunks(500, boom, 3))


def test_unpicklable_error_arrives_as_its_text():
    class Odd(Exception):
        def __init__(self, a, b):
            super().__init__(a)
            self.b = b

        def __reduce__(self):
            raise TypeError("not picklable")

    def boom(c: int) -> list[int]:
        raise Odd("odd failure", 1)

    with pytest.raises(RuntimeError, match="Odd: odd failure"):
        list(forkpool.Chunks(4, boom, 2))


def test_stopped_early_leaves_no_child():
    it = iter(forkpool.Chunks(2000, _squares, 3))
    assert next(it)[0] == (0, 0)
    it.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # every child was reaped


def test_closed_before_consuming_leaves_no_child():
    pool = forkpool.Chunks(2000, _squares, 3)
    pool.start()
    pool.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_fails_loudly_when_workers_die():
    """A child killed mid-chunk (its results lost) is an error, never a hang or a silently short pass."""
    parent = os.getpid()

    def die(c: int) -> list[int]:
        if os.getpid() != parent:
            os._exit(1)
        return [c]

    with pytest.raises(RuntimeError, match="exited before sending"):
        list(forkpool.Chunks(500, die, 2))


def test_consumed_once_and_never_forked_after_close():
    pool = forkpool.Chunks(4, _squares, 2)
    assert len(list(pool)) == 4
    with pytest.raises(RuntimeError, match="consumed once"):
        list(pool)
    unstarted = forkpool.Chunks(4, _squares, 2)
    unstarted.close()
    with pytest.raises(RuntimeError, match="consumed once"):
        list(unstarted)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # it never forked


def test_a_fork_failing_part_way_leaves_nothing(monkeypatch):
    import gc

    real_fork = os.fork
    forks: list[int] = []

    def fork():
        if forks:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        forks.append(1)
        return real_fork()
    fds_before = set(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", fork)
    pool = forkpool.Chunks(40, _squares, 3)
    with pytest.raises(BlockingIOError):
        pool.start()
    monkeypatch.setattr(os, "fork", real_fork)
    assert gc.get_freeze_count() == 0
    assert set(os.listdir("/proc/self/fd")) == fds_before  # no pipe left open
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # the one child started was stopped and reaped
    with pytest.raises(RuntimeError, match="consumed once"):
        list(pool)
