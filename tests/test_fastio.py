"""fsio.read_bundle_dir (the compiled `_fastio.read_bundle`): for a bundle directory holding no
symlink it gives exactly what fsio.scan_below + fsio.open_plain give; for anything else it declines
(None) and the Python walk words the refusal."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from skill_eval import fastpath, fsio, readahead

CAP = 1 << 20
BUDGET = 4 << 20

needs_fastio = pytest.mark.skipif(fsio._FASTIO is None, reason="_fastio was not built (no C compiler at install)")


def test_the_module_is_built_where_ci_installs_it():
    """CI installs with a compiler: a build that silently fell back would hide the fast path (and skip
    every test below). Off (SKILL_EVAL_FASTIO=0), the callers get None and read in Python."""
    if os.environ.get("CI") == "true":
        assert fsio._FASTIO is not None
    os.environ["SKILL_EVAL_FASTIO"] = "0"
    try:
        assert fastpath.optional("_fastio", "SKILL_EVAL_FASTIO") is None
    finally:
        del os.environ["SKILL_EVAL_FASTIO"]


def _reference(d: Path, cap: int = CAP) -> tuple[list[str], set[str], dict[str, bytes]] | None:
    links: list[str] = []
    names: set[str] = set()
    paths: list[str] = []
    metas = fsio.scan_below(d.parent.resolve(), str(d), "meta.json", links, names, paths)
    if links:
        return None
    files = {}
    for p in paths:
        rel = p[len(str(d)) + 1:]
        if readahead._stream(rel):
            continue
        data = fsio.open_plain(p, cap)
        if isinstance(data, bytes):
            files[rel] = data
    return sorted(metas), names, files


def _fast(d: Path, cap: int = CAP, budget: int = BUDGET):
    got = fsio.read_bundle_dir(str(d), cap, budget)
    return None if got is None else (sorted(got[0]), got[1], got[2])


def _bundle(d: Path) -> Path:
    (d / "captured" / "1.out.d" / "0").mkdir(parents=True)
    (d / "meta.json").write_text('{"k": 1}\n')
    (d / "events.jsonl").write_text("")
    (d / "final.md").write_bytes("résumé ✓\n".encode())
    (d / "captured" / "1.out").write_bytes(b"stdout")
    (d / "captured" / "1.err").write_bytes(b"stderr")
    (d / "captured" / "1.out.d" / "0" / "report.json").write_bytes(b'{"verdict": "BREAKING"}')
    (d / "captured" / "1.out.d" / "0" / "x.out").write_bytes(b"deeper: not a stream")
    return d


@needs_fastio
def test_a_plain_bundle_reads_as_the_python_walk_and_reads(tmp_path):
    d = _bundle(tmp_path / "b")
    got = _fast(d)
    assert got == _reference(d)
    metas, names, files = got
    assert metas == [str(d / "meta.json")]
    assert names == {"meta.json", "events.jsonl", "final.md", "captured"}
    assert "captured/1.out" not in files and "captured/1.err" not in files  # streams: read on demand
    assert files["captured/1.out.d/0/x.out"] == b"deeper: not a stream"
    assert files["events.jsonl"] == b""


@needs_fastio
def test_odd_but_link_free_entries_match_too(tmp_path):
    """A directory named meta.json (collected, as scan_below collects any entry so named), a nested
    bundle's meta.json, a FIFO (listed, never read), an unreadable file and one over the cap (left
    to the careful reader), a file name that is not UTF-8."""
    d = _bundle(tmp_path / "b")
    (d / "captured" / "meta.json").mkdir()
    (d / "nested").mkdir()
    (d / "nested" / "meta.json").write_text("{}")
    os.mkfifo(d / "pipe")
    (d / "secret.json").write_text("{}")
    (d / "secret.json").chmod(0)
    (d / "big.bin").write_bytes(b"x" * (CAP + 1))
    with open(os.fsencode(d) + b"/caf\xe9.txt", "wb") as fh:
        fh.write(b"latin-1 name")
    try:
        got = _fast(d)
        assert got == _reference(d)
        assert "big.bin" not in got[2] and "pipe" not in got[2] and "pipe" in got[1]
        assert os.fsdecode(b"caf\xe9.txt") in got[2]
        if os.geteuid() != 0:
            assert "secret.json" not in got[2]
    finally:
        (d / "secret.json").chmod(stat.S_IRUSR | stat.S_IWUSR)


@needs_fastio
@pytest.mark.parametrize("where", ["top", "nested", "dangling", "dir"])
def test_a_symlink_anywhere_declines(tmp_path, where):
    d = _bundle(tmp_path / "b")
    if where == "top":
        os.symlink("final.md", d / "link.md")
    elif where == "nested":
        os.symlink("report.json", d / "captured" / "1.out.d" / "0" / "link.json")
    elif where == "dangling":
        os.symlink("/nonexistent", d / "captured" / "gone")
    else:
        target = tmp_path / "b-link"
        os.symlink(d, target)
        d = target
    assert _fast(d) is None


@needs_fastio
def test_what_it_cannot_read_plainly_declines(tmp_path):
    d = _bundle(tmp_path / "b")
    assert _fast(tmp_path / "absent") is None
    assert _fast(d / "final.md") is None  # not a directory
    assert _fast(d, budget=10) is None  # over the bundle's budget
    deep = d
    for i in range(20):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    assert _fast(d) is None  # deeper than the compiled walk goes
    assert fsio.read_bundle_dir("bad\x00path", CAP, BUDGET) is None
    assert fsio.read_bundle_dir(f"{d}/", CAP, BUDGET) is None  # found in review: a trailing slash misspelled every path
    assert fsio.read_bundle_dir("", CAP, BUDGET) is None


@needs_fastio
def test_every_committed_bundle_reads_the_same(tmp_path):
    root = Path(__file__).resolve().parents[1] / "agent-evals" / "skills" / "evidence"
    _, _, below = fsio.scan_top(root.parents[2], "agent-evals/skills/evidence", "meta.json", 4)
    assert below
    for d in below:
        assert _fast(Path(d)) == _reference(Path(d))
