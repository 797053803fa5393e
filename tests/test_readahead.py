"""readahead: the evidence tree read by a forked reader while the pass gets ready.

The pass must grade exactly as without it (serial and forked), use a record only for the unit it
names, word every refusal as before (the reader skips what it cannot read plainly), and leave no
process or descriptor behind."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skill_eval import config, evidence, fsio, readahead, regrade, strict

EVIDENCE = "agent-evals/skills/evidence"


@pytest.fixture(params=["serial", "forked"])
def mode(request, monkeypatch):
    monkeypatch.setattr(regrade, "POOL_MIN", 100000 if request.param == "serial" else 10)
    return request.param


def _bundles(root: Path) -> list[Path]:
    return [Path(m).parent for m in regrade.meta_paths(root / EVIDENCE)]


def _no_children() -> None:
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
    assert not regrade._STATE and not readahead._CURRENT


def _finished(reader: readahead.Reader) -> None:
    """Let the reader read the whole tree (in use it is stopped when the workers fork)."""
    os.waitpid(reader.pid, 0)


def _report(cfg: config.Config) -> tuple:
    r = evidence.check(cfg, keep_reasons=True)
    return r.passed, r.found, r.expected, r.errors, [g.to_json(r.stage) for g in r.grades]


def test_a_pass_with_the_reader_grades_like_one_without(repo_copy, mode):
    """Every bundle, read ahead whole, grades as the pass reads it itself; an inside symlink in one
    bundle (not link-free: its files are read with the careful lstat), and an oversized file in
    another (the reader leaves it: the pass words the refusal) change nothing either."""
    bundles = _bundles(repo_copy)
    os.symlink("final.md", bundles[0] / "final-link.md")
    (bundles[1] / "captured" / "big.bin").write_bytes(b"x" * 5000)
    cfg = config.load(repo_copy)
    want = _report(cfg)
    with readahead.ahead(cfg) as reader:
        assert reader is not None
        _finished(reader)
        assert reader.units() == regrade.units_of(*regrade_top(cfg))
        got = _report(cfg)
    assert got == want
    _no_children()


def regrade_top(cfg: config.Config) -> tuple[list[str], list[str]]:
    from skill_eval import fsio

    _, found, below = fsio.scan_top(cfg.root, cfg.evidence_rel, "meta.json", regrade.LAYOUT_DEPTH - 1)
    return found, below


def test_the_pass_takes_its_bytes_from_the_reader(repo_copy, mode):
    """Shown by a change made after the reader read the tree (a check assumes nothing writes to it):
    the pass grades what the reader read, and with the reader off, what is on disk."""
    cfg = config.load(repo_copy)
    victim = next(b for b in _bundles(repo_copy) if "skill-agent" in b.parts)
    with readahead.ahead(cfg) as reader:
        assert reader is not None
        _finished(reader)
        (victim / "final.md").write_text("nothing to see\n")  # no verdict, no claim: it would fail dimension 6
        ahead = {g.bundle: g.failures() for g in evidence.check(cfg).grades}
    on_disk = {g.bundle: g.failures() for g in evidence.check(cfg).grades}
    assert ahead[str(victim)] == []
    assert on_disk[str(victim)] != []
    _no_children()


def test_a_record_is_used_only_for_the_unit_it_names(repo_copy):
    cfg = config.load(repo_copy)
    with readahead.ahead(cfg) as reader:
        assert reader is not None
        _finished(reader)
        units = reader.units()
        assert units
        metas, links, names, files = reader.take(0, units[0])
        assert metas == [f"{units[0]}meta.json"] and links == [] and "meta.json" in names
        assert files["meta.json"] == Path(units[0], "meta.json").read_bytes()
        assert reader.take(0, units[1]) is None  # another unit's index
        assert reader.take(len(units) + 5, units[0]) is None  # nothing there
    assert reader.take(0, units[0]) is None  # closed
    _no_children()


def test_a_refusal_anywhere_is_worded_as_without_the_reader(repo_copy, mode, tmp_path):
    """An escaping symlink above bundle depth (the reader lists nothing: the pass walks and refuses)
    and one inside a bundle (the reader skips that bundle: the pass walks it and refuses)."""
    cfg = config.load(repo_copy)
    run_dir = _bundles(repo_copy)[0].parent.parent
    inside = _bundles(repo_copy)[3] / "captured" / "escape"
    for link in (run_dir / "escape", inside):
        os.symlink(tmp_path, link)
        with pytest.raises(Exception) as plain:
            evidence.check(cfg)
        with readahead.ahead(cfg) as reader:
            assert reader is not None
            _finished(reader)
            with pytest.raises(type(plain.value)) as ahead:
                evidence.check(cfg)
        assert str(ahead.value) == str(plain.value) and str(link) in str(plain.value)
        link.unlink()
        _no_children()


def test_the_reader_stops_when_told_and_leaves_nothing(repo_copy):
    cfg = config.load(repo_copy)
    fds = set(os.listdir("/proc/self/fd"))
    with readahead.ahead(cfg) as reader:
        assert reader is not None
        reader.stop()
        deadline = time.monotonic() + 10
        while os.waitpid(reader.pid, os.WNOHANG) == (0, 0):
            assert time.monotonic() < deadline, "the reader did not stop"
            time.sleep(0.01)
    assert reader.closed and readahead.current(cfg.root, cfg.evidence_rel) is None
    assert set(os.listdir("/proc/self/fd")) <= fds
    _no_children()


def test_nothing_is_read_ahead_where_it_cannot_be(repo_copy, monkeypatch):
    cfg = config.load(repo_copy)
    monkeypatch.setenv("SKILL_EVAL_READAHEAD", "0")
    with readahead.ahead(cfg) as reader:
        assert reader is None
    monkeypatch.delenv("SKILL_EVAL_READAHEAD")
    monkeypatch.delattr(os, "memfd_create")
    with readahead.ahead(cfg) as reader:
        assert reader is None
    _no_children()


def test_a_reader_of_another_tree_is_not_used(repo_copy, tmp_path):
    cfg = config.load(repo_copy)
    other = dataclasses.replace(cfg, evals_root="agent-evals/elsewhere")
    with readahead.ahead(other):
        assert readahead.current(cfg.root, cfg.evidence_rel) is None
        assert _report(cfg)[1] > 0
    _no_children()


def test_evidence_command_output_is_the_same_with_and_without_the_reader(repo_copy):
    def run(*extra: str, readahead_on: bool) -> subprocess.CompletedProcess:
        env = {**os.environ, "SKILL_EVAL_READAHEAD": "1" if readahead_on else "0", "SKILL_EVAL_POOL_MIN": "10"}
        return subprocess.run([sys.executable, "-m", "skill_eval", "evidence", "--root", str(repo_copy), *extra],
                              capture_output=True, text=True, env=env, check=False)

    for extra in ((), ("--json",)):
        on, off = run(*extra, readahead_on=True), run(*extra, readahead_on=False)
        assert (on.returncode, on.stdout, on.stderr) == (off.returncode, off.stdout, off.stderr)
        assert on.returncode in (0, 1) and on.stdout


def _dir_report_with_a_backslash(bundle: Path) -> None:
    """Call 1's report as a `dir` output whose one file name holds a backslash (the runner records
    whatever names the call wrote): the careful reader refuses that path by name."""
    import json

    calls = [json.loads(line) for line in (bundle / "calls.jsonl").read_text().splitlines()]
    out = calls[0]["outputs"][0]
    snap = bundle / out["snapshot"]
    (snap.parent / "a\\b.json").write_bytes(snap.read_bytes())
    snap.unlink()
    out.update(kind="dir", snapshot=str(Path(out["snapshot"]).parent), sha256=None,
               files={"a\\b.json": out["sha256"]})
    (bundle / "calls.jsonl").write_text("".join(json.dumps(c, sort_keys=True) + "\n" for c in calls))


def test_bytes_read_ahead_never_answer_a_path_the_careful_reader_refuses(repo_copy, mode, monkeypatch):
    """Found in review: Bundle.files answered `captured/1.out.d/0/a\\b.json` (a regular file the walks
    found) where the careful path refuses a backslash by name, and a failing grade passed. The read-ahead
    and the compiled walk now answer only the paths _fast_read would, so the grade is the reference one."""
    victim = next(b for b in _bundles(repo_copy) if "skill-agent" in b.parts and "review-removed-export" in b.parts)
    _dir_report_with_a_backslash(victim)
    cfg = config.load(repo_copy)

    def grade_of_victim() -> tuple:
        g = next(g for g in evidence.check(cfg, keep_reasons=True).grades if g.bundle == str(victim))
        return g.failures(), g.to_json("merge")

    with monkeypatch.context() as off:  # the reference: every fast path off
        off.setattr(fsio, "_FASTIO", None)
        off.setattr(strict, "_fastjson", None)
        want = grade_of_victim()
    assert want[0] and "is not a plain relative path" in str(want[1])
    assert grade_of_victim() == want  # the compiled walk's bytes
    with readahead.ahead(cfg) as reader:
        assert reader is not None
        _finished(reader)
        assert grade_of_victim() == want  # the read-ahead's bytes
    _no_children()


def test_a_signal_right_after_the_fork_still_reaps_the_reader(repo_copy, monkeypatch):
    """Found in review: Ctrl-C between the reader's fork and its registration left it running. Now the
    signal waits until the reader is registered, and the block's end reaps it."""
    import signal

    cfg = config.load(repo_copy)
    real_fork = os.fork
    pids = []

    def fork_then_interrupt():
        pid = real_fork()
        if pid:
            pids.append(pid)
            os.kill(os.getpid(), signal.SIGINT)
        return pid

    monkeypatch.setattr(os, "fork", fork_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        with readahead.ahead(cfg):
            pytest.fail("the interrupt should come before the block runs")
    assert pids
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], os.WNOHANG)  # reaped already
    _no_children()
