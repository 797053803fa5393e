"""The evidence tree's content store checked whole (issue 34, core.stored.audit): `evidence compact` refuses a
store holding anything but object files (a FIFO, a link) with exit 2 and the entry named, never exit 0, and
lists the unreferenced objects it removes; the evidence gate names both."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from test_arms import check, record
from test_graders_helpers import make_repo

from skill_eval.cli import main
from skill_eval.core import stored


@pytest.fixture
def host(tmp_path):
    cfg = make_repo(tmp_path)
    for k in range(2):
        record(cfg, k=k)
    stored._store_of.clear()
    return cfg


def compact(cfg, capsys, *extra):
    code = main(["evidence", "compact", "--root", str(cfg.root), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_compact_refuses_a_fifo_in_the_store_and_lists_unreferenced_objects(host, capsys):
    store = host.evals_dir / "evidence" / stored.STORE
    store.mkdir()
    os.mkfifo(store / "ab")
    before = sorted(p.relative_to(host.root).as_posix() for p in (host.evals_dir / "evidence").rglob("*"))
    code, out, err = compact(host, capsys)
    assert code == 2 and "agent-evals/skills/evidence/.objects/ holds what is not an object file" in err, (out, err)
    assert "is a FIFO where only <sha[:2]>/ directories belong" in err and "remove it" in err
    assert sorted(p.relative_to(host.root).as_posix() for p in (host.evals_dir / "evidence").rglob("*")) == before
    (store / "ab").unlink()
    stray = stored.put_object(os.fspath(store), b"listed by no bundle")
    code, out, err = compact(host, capsys, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["removed_objects"] == 1
    assert report["unreferenced"] == [f"agent-evals/skills/evidence/.objects/{stray[:2]}/{stray}.gz"]


def test_a_store_that_is_a_link_is_refused_by_compact(host, capsys):
    elsewhere = host.root / "elsewhere"  # inside the repository: not the tree walk's outside-link refusal
    elsewhere.mkdir()
    (host.evals_dir / "evidence" / stored.STORE).symlink_to(elsewhere)
    code, _out, err = compact(host, capsys)
    assert code == 2 and "is a symbolic link, not the content store's directory" in err, err
    assert list(elsewhere.iterdir()) == []


def test_the_gate_names_a_non_object_entry_and_an_unreferenced_object(host, capsys):
    assert compact(host, capsys)[0] == 0
    assert check(host).errors == [e for e in check(host).errors if not e.startswith(("store:", "unreferenced:"))]
    store = host.evals_dir / "evidence" / stored.STORE
    stray = stored.put_object(os.fspath(store), b"listed by no bundle")
    os.mkfifo(store / stray[:2] / "pipe")
    errors = [e for e in check(host).errors if e.startswith(("store:", "unreferenced:"))]
    assert errors == [
        f"store: evidence/.objects/{stray[:2]}/pipe is a FIFO, not an object file: remove it (the store holds only "
        "<sha[:2]>/<sha256>.gz files)",
        f"unreferenced: evidence/.objects/{stray[:2]}/{stray}.gz is listed by no bundle's objects.json "
        "(`skill-eval evidence compact` removes it)"], errors
    shutil.rmtree(store / stray[:2])
    assert not [e for e in check(host).errors if e.startswith(("store:", "unreferenced:"))]


def test_a_compacted_streams_digest_is_checked_against_its_object(host, capsys):
    from test_graders_helpers import grade

    assert compact(host, capsys)[0] == 0
    b = next(p.parent for p in (host.evals_dir / "evidence").rglob("calls.jsonl"))
    assert (b / stored.INDEX).is_file() and grade(host, b).failures() == []
    rec = json.loads((b / "calls.jsonl").read_text())
    rec["stderr"]["sha256"] = "0" * 64
    (b / "calls.jsonl").write_text(json.dumps(rec) + "\n")
    g = grade(host, b)
    assert g.failures() == ["bundle"] and "the stream captured is not the one recorded" in g.checks["bundle"].reasons[0]
