"""regrade.Pass started early (before suite selection) keeps the gate's old order of errors and
leaves nothing behind: selection's errors first, then a refused symlink anywhere in the tree, then
what grading meets; a tree changed during selection is looked at again; a pass that could not
start cannot be iterated. (Its results are shown equal to the listed pass in test_perf_paths.py.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from skill_eval.content import config, selection
from skill_eval.core import fsio
from skill_eval.core.errors import ConfigError, InputError, SkillEvalError
from skill_eval.grading import evidence, regrade

EVIDENCE = "agent-evals/skills/evidence"


def _no_children() -> None:
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
    assert not regrade._STATE


def _bundles(root: Path) -> list[Path]:
    return [Path(m).parent for m in regrade.meta_paths(root / EVIDENCE)]


@pytest.fixture(params=["serial", "forked"])
def mode(request, monkeypatch):
    monkeypatch.setattr(regrade, "POOL_MIN", 100000 if request.param == "serial" else 10)
    monkeypatch.setattr(regrade, "POOL_CORES", 1)
    return request.param


def test_bundle_swapped_for_an_escaping_link_during_selection_is_refused(repo_copy, mode, tmp_path):
    cfg = config.load(repo_copy)
    victim = _bundles(repo_copy)[len(_bundles(repo_copy)) // 2]
    outside = tmp_path / "outside-bundle"

    def select(cfg_, suite, base):  # the upper levels were walked before this: swap a bundle directory now
        if not victim.is_symlink():
            shutil.move(str(victim), outside)
            os.symlink(outside, victim)
        return selection.select(cfg_, suite, base)
    with pytest.raises(InputError, match="outside the repository; refused") as refused:
        evidence.check(cfg, select_fn=select, expected_fn=selection.expected_bundles)
    assert str(victim) in str(refused.value)
    _no_children()


def test_refusal_comes_before_a_grading_error(repo_copy, mode):
    """A broken golden corpus (the catalog cannot be built) and an escaping link deep in one bundle: the
    gate names the link, as it did when it walked the whole tree before grading anything."""
    (repo_copy / "agent-evals/skills/golden/scenarios.yaml").write_text("{{{\n")
    link = _bundles(repo_copy)[-1] / "captured" / "x"
    link.parent.mkdir(exist_ok=True)
    os.symlink("/etc/passwd", link)
    with pytest.raises(InputError, match="outside the repository") as refused:
        evidence.check(config.load(repo_copy))
    assert str(link) in str(refused.value)
    _no_children()
    link.unlink()
    with pytest.raises(InputError, match="scenarios.yaml"):  # without the link: the catalog's own error
        evidence.check(config.load(repo_copy))
    _no_children()


def test_selection_error_comes_first(repo_copy, mode):
    """Selection fails (an unknown --base) while the catalog is broken too, or the evidence tree is a
    symlink loop: selection's error, as before the pass started early."""
    (repo_copy / "agent-evals/skills/golden/scenarios.yaml").write_text("{{{\n")
    with pytest.raises(ConfigError, match="nosuchref"):
        evidence.check(config.load(repo_copy), base="nosuchref")
    _no_children()
    shutil.rmtree(repo_copy / EVIDENCE)
    os.symlink("evidence", repo_copy / EVIDENCE)
    with pytest.raises(ConfigError, match="nosuchref"):
        evidence.check(config.load(repo_copy), base="nosuchref")
    _no_children()


def test_symlink_loops_are_refused_not_crashes(repo_copy, mode):
    """A symlink loop in the tree (Path.resolve raises RuntimeError on Python 3.11) is an InputError
    naming it, from the whole walk, from the split walk and from the gate; the first refusal in
    scan_tree's order is the one named, whichever a worker met first."""
    ev = repo_copy / EVIDENCE
    os.symlink("b1", ev / "b1")
    with pytest.raises(InputError, match="cannot be resolved") as whole:
        fsio.scan_tree(repo_copy, EVIDENCE, "meta.json")
    with pytest.raises(InputError, match="cannot be resolved"):
        fsio.scan_top(repo_copy, EVIDENCE, "meta.json", 4)
    with pytest.raises(InputError) as gate:
        evidence.check(config.load(repo_copy))
    assert str(gate.value) == str(whole.value)
    os.symlink("/etc", ev / "aaa")  # before b1 in scan_tree's order
    with pytest.raises(InputError, match="aaa: is a symlink to /etc, outside"):
        evidence.check(config.load(repo_copy))
    _no_children()
    (ev / "aaa").unlink()
    (ev / "b1").unlink()
    deep = _bundles(repo_copy)[0] / "loop"
    os.symlink("loop", deep)
    with pytest.raises(InputError, match="loop.*cannot be resolved"):
        evidence.check(config.load(repo_copy))
    _no_children()


def test_refused_link_gone_when_worded_is_a_clear_error(repo_copy, mode, monkeypatch):
    cfg = config.load(repo_copy)
    link = _bundles(repo_copy)[3] / "captured" / "x"
    link.parent.mkdir(exist_ok=True)
    os.symlink("/etc/passwd", link)
    real = fsio.scan_tree

    def scan_tree(root, path, collect=None):  # the link vanishes between the walk that met it and the one wording it
        if collect == "meta.json" and link.is_symlink():
            link.unlink()
        return real(root, path, collect)
    monkeypatch.setattr(fsio, "scan_tree", scan_tree)
    with pytest.raises(InputError, match="changed while it was checked"):
        evidence.check(cfg)
    _no_children()


def test_a_pass_that_could_not_start_leaves_nothing_and_cannot_be_iterated(repo_copy, monkeypatch):
    """The forked start fails (the catalog cannot be built): no child, no module state, the next check
    in the same process works; iterating the failed pass raises instead of yielding a pass without
    freshness or with another pass's state."""
    monkeypatch.setattr(regrade, "POOL_MIN", 10)
    monkeypatch.setattr(regrade, "POOL_CORES", 1)
    golden = repo_copy / "agent-evals/skills/golden/scenarios.yaml"
    good = golden.read_text()
    golden.write_text("{{{\n")
    cfg = config.load(repo_copy)
    root = repo_copy / EVIDENCE
    p = regrade.Pass(cfg, root, regrade.default_freshness(cfg), regrade.default_catalog(cfg), tree=(repo_copy, EVIDENCE))
    with pytest.raises(SkillEvalError, match="scenarios.yaml"):
        p.start()
    _no_children()
    with pytest.raises(RuntimeError, match="could not start"):
        list(p)
    with pytest.raises(InputError, match="scenarios.yaml"):
        evidence.check(cfg)
    _no_children()
    golden.write_text(good)
    report = evidence.check(config.load(repo_copy))
    assert report.found > 100
    _no_children()
    # a second pass while one is being consumed: refused, and the first is not disturbed
    first = regrade.Pass(cfg, root, regrade.default_freshness(cfg), regrade.default_catalog(cfg), tree=(repo_copy, EVIDENCE))
    it = iter(first)
    next(it)
    second = regrade.Pass(cfg, root, regrade.default_freshness(cfg), regrade.default_catalog(cfg), tree=(repo_copy, EVIDENCE))
    with pytest.raises(RuntimeError, match="another pass"):
        second.start()
    with pytest.raises(RuntimeError, match="could not start"):
        list(second)
    assert len(list(it)) + 1 == report.found
    _no_children()


DRIVER = """
import os, sys, time
from pathlib import Path
from skill_eval.content import config
from skill_eval.grading import regrade
regrade.POOL_MIN, regrade.POOL_CORES = 10, 1
root = Path(sys.argv[1])
cfg = config.load(root)
ev = root / "agent-evals/skills/evidence"
p = regrade.Pass(cfg, ev, regrade.default_freshness(cfg), regrade.default_catalog(cfg), jobs=2,
                 tree=(root, "agent-evals/skills/evidence"))
it = iter(p)
next(it)
print(" ".join(str(pid) for pid in p._pool._processes), flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_pool_workers_die_with_the_pass(repo_copy, how):
    """The pass's process killed mid-pass (a CI timeout, a killed hook): its pool workers must not live on
    re-parented to init, waiting for work forever (review finding; the old fork pool's children exited)."""
    import signal
    import subprocess
    import sys
    import time

    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(repo_copy)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": src})
    assert proc.stdout is not None
    workers = [int(w) for w in proc.stdout.readline().split()]
    assert len(workers) == 2 and all(_alive(w) for w in workers)
    proc.send_signal(getattr(signal, how))
    proc.wait()
    deadline = time.monotonic() + 5
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers), "pool workers outlived the pass"
