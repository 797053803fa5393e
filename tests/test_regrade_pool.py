"""The forked pass (regrade._forked): results in order, whoever computed them; a worker's error reaches the caller."""

from __future__ import annotations

import os

import pytest

from skill_eval import regrade


@pytest.fixture()
def fake_one(monkeypatch):
    calls: list[tuple[int, int]] = []

    def one(i: int):
        calls.append((os.getpid(), i))
        if i == regrade._STATE.get("boom"):
            raise ValueError(f"bundle {i} is broken")
        return ("result", i)

    monkeypatch.setattr(regrade, "_one", one)
    regrade._STATE.clear()
    yield calls
    regrade._STATE.clear()


@pytest.mark.parametrize(("n", "jobs"), [(1, 2), (17, 2), (500, 2), (500, 3), (97, 8)])
def test_forked_yields_every_index_in_order(fake_one, n, jobs):
    assert list(regrade._forked(n, jobs)) == [("result", i) for i in range(n)]


def test_forked_reraises_a_workers_error(fake_one):
    regrade._STATE["boom"] = 250
    with pytest.raises(ValueError, match="bundle 250 is broken"):
        list(regrade._forked(500, 3))


def test_forked_stopped_early_leaves_no_child(fake_one):
    it = regrade._forked(2000, 3)
    assert next(it) == ("result", 0)
    it.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # every child was reaped


def test_forked_fails_loudly_when_workers_die(monkeypatch):
    """A child killed mid-chunk (its results lost) is an error, never a hang or a silently short pass."""
    parent = os.getpid()

    def one(i: int):
        if os.getpid() != parent:
            os._exit(1)
        return i

    monkeypatch.setattr(regrade, "_one", one)
    with pytest.raises(RuntimeError, match="exited before sending"):
        list(regrade._forked(500, 2))
