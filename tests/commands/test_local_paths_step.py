"""The `pr` step `machine-local paths` (issue 12 item 4): a committed bundle (evidence/ or the
calibration tree) holding a sandbox path or the recording user's home fails it; the subject's
own outputs (captured/) are not scanned."""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval.commands import local_paths, pr

BUNDLE = "abi-compat-review/skill-agent/run/review-removed-export/0"


def _cfg(monkeypatch, root: Path):
    class Cfg:
        evals_dir = root / "evals"

    Cfg.root = root
    monkeypatch.setattr(local_paths.config, "load", lambda _root: Cfg)


def _bundle(root: Path, tree: str, files: dict[str, str]) -> Path:
    b = root / "evals" / tree / BUNDLE
    for rel, text in {"meta.json": "{}", **files}.items():
        (b / rel).parent.mkdir(parents=True, exist_ok=True)
        (b / rel).write_text(text)
    return b


def _run(home: str = "/home/maint") -> int:
    return local_paths.run(argparse.Namespace(root=None, json=False, home=home))


def test_step_is_part_of_pr():
    assert ("machine-local paths", "local_paths", {}) in pr.STEPS


def test_clean_bundles_pass(tmp_path, monkeypatch, capsys):
    _cfg(monkeypatch, tmp_path)
    _bundle(tmp_path, "evidence", {"final.md": "report at <work>/r.json", "captured/1.out.d/0/report.json": "/tmp/sandbox-ab12cd34/work/x"})  # a snapshot: not scanned
    _bundle(tmp_path, "calibration", {"events.jsonl": '{"text": "<home>/.cache"}\n'})
    assert _run() == 0
    assert "2 bundle(s) scanned, ok" in capsys.readouterr().out


def test_sandbox_path_in_evidence_fails(tmp_path, monkeypatch, capsys):
    _cfg(monkeypatch, tmp_path)
    _bundle(tmp_path, "evidence", {"final.md": "I worked in /tmp/sandbox-ab12cd34/work."})
    assert _run() == 1
    out = capsys.readouterr().out
    assert f"evals/evidence/{BUNDLE}/final.md: /sandbox-ab12cd34" in out


def test_sandbox_path_in_calibration_fails(tmp_path, monkeypatch, capsys):
    _cfg(monkeypatch, tmp_path)
    _bundle(tmp_path, "calibration", {"raw/stream.jsonl": '{"cwd": "/tmp/sandbox-zz_9yy8x/home"}\n'})
    assert _run() == 1
    assert "calibration/" in capsys.readouterr().out


def test_recording_users_home_fails_but_a_longer_name_does_not(tmp_path, monkeypatch, capsys):
    _cfg(monkeypatch, tmp_path)
    b = _bundle(tmp_path, "evidence", {"final.md": "see /home/maintainer/notes"})
    assert _run() == 0  # /home/maint is not a prefix of /home/maintainer
    (b / "final.md").write_text("see /home/maint/notes")
    assert _run() == 1
    assert "the recording user's home" in capsys.readouterr().out
    assert local_paths.home_hits(tmp_path / "evals/evidence", tmp_path, "/") == []  # "/" would match everything


def test_a_compacted_raw_stream_is_scanned_as_the_bytes_it_holds(tmp_path, monkeypatch, capsys):
    """Compact evidence (core.stored) gzips raw streams: the scan reads through the compression."""
    from skill_eval.core import stored

    _cfg(monkeypatch, tmp_path)
    b = _bundle(tmp_path, "evidence", {"final.md": "ok"})
    (b / "raw").mkdir()
    (b / "raw" / "stream.jsonl.gz").write_bytes(stored.gzip_bytes(b'{"cwd": "/tmp/sandbox-ab12cd34/work"}\n'))
    assert _run() == 1
    assert f"{BUNDLE}/raw/stream.jsonl.gz: /sandbox-ab12cd34" in capsys.readouterr().out
    (b / "raw" / "stream.jsonl.gz").write_bytes(stored.gzip_bytes(b'{"cwd": "/home/maint/x"}\n'))
    assert _run() == 1 and "the recording user's home" in capsys.readouterr().out
    assert local_paths.home_hits(tmp_path / "evals/evidence", tmp_path, "/home/maint") != []


def test_a_capture_moved_into_the_content_store_is_still_scanned(tmp_path, monkeypatch, capsys):
    """captured/N.err is scanned; compaction moves it into <evidence>/.objects: the scan follows it there."""
    from skill_eval.core import stored

    _cfg(monkeypatch, tmp_path)
    b = _bundle(tmp_path, "evidence", {"final.md": "ok", "captured/1.err": "error in /tmp/sandbox-abcd1234/work/x\n",
                                        "captured/1.out.d/0/r.json": "/tmp/sandbox-abcd1234/work (a snapshot)"})
    assert _run() == 1
    capsys.readouterr()
    store = tmp_path / "evals" / "evidence" / stored.STORE
    store.mkdir()
    stored.compact(b, str(store))
    assert not (b / "captured").exists()
    assert _run() == 1
    out = capsys.readouterr().out
    assert f"{BUNDLE}/captured/1.err: /sandbox-abcd1234" in out and "r.json" not in out
    (b / "final.md").write_text("ok")
    sha = stored.index_of(b)["captured/1.err"]
    stored._verified.clear(), stored._bytes.clear()
    (store / sha[:2] / f"{sha}.gz").write_bytes(stored.gzip_bytes(b"see /home/maint/x\n"))  # forged: refused, not read
    assert _run() == 1 and "cannot be scanned" in capsys.readouterr().out


def test_a_non_raw_gz_file_is_scanned_as_it_is(tmp_path, monkeypatch, capsys):
    _cfg(monkeypatch, tmp_path)
    _bundle(tmp_path, "evidence", {"notes.gz": "not gzip at all, /tmp/sandbox-ab12cd34/work"})
    assert _run() == 1
    assert "notes.gz: /sandbox-ab12cd34" in capsys.readouterr().out
