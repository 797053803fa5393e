"""The atomic bundle writer: a bundle appears whole at its path, or not at all, and never holds a secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skill_eval.core import strict
from skill_eval.harness.runner import bundle_writer
from skill_eval.harness.runner.bundle_writer import TMP_PREFIX, BundleWriteError, BundleWriter, discard_partials
from skill_eval.harness.runner.sandbox import SecretLeak

ROOT = Path(__file__).resolve().parents[2]
SECRET = {"ANTHROPIC_API_KEY": "sk-ant-0123456789abcdef"}


def partials(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(TMP_PREFIX))


def test_bundle_is_invisible_until_sealed_then_complete(tmp_path: Path):
    dest = tmp_path / "evidence" / "skill" / "arm" / "run" / "scen" / "0"
    with BundleWriter(dest) as w:
        w.add_json("meta.json", {"kind": "behavioral", "b": 1, "a": [1, 2]})
        w.add_text("final.md", "answer\n")
        w.add_jsonl("calls.jsonl", [{"call": 1}, {"call": 2}])
        w.add_bytes("captured/1.out", b"\x00\xffbinary")
        assert not dest.exists(), "nothing may appear at the final path before sealing"
        assert len(partials(dest.parent)) == 1
        assert w.seal() == dest
    assert partials(dest.parent) == []
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "calls.jsonl", "captured/1.out", "final.md", "meta.json"]
    assert (dest / "meta.json").read_text() == strict.dumps_json({"kind": "behavioral", "b": 1, "a": [1, 2]})
    assert [json.loads(line) for line in (dest / "calls.jsonl").read_text().splitlines()] == [{"call": 1}, {"call": 2}]
    assert (dest / "captured" / "1.out").read_bytes() == b"\x00\xffbinary"


def test_an_exception_leaves_nothing_behind(tmp_path: Path):
    dest = tmp_path / "b" / "0"
    with pytest.raises(RuntimeError), BundleWriter(dest) as w:
        w.add_text("final.md", "half")
        raise RuntimeError("agent crashed")
    assert not dest.exists() and partials(dest.parent) == []


def test_disk_full_names_the_file_and_leaves_nothing(tmp_path: Path, monkeypatch):
    """ENOSPC while writing a bundle file: one error naming the bundle and the file (it used to be a bare
    `OSError: [Errno 28]`), and nothing partial at the destination or beside it."""
    import errno

    real = bundle_writer._create

    def full(dir_fd, name, data, **kw):
        if name == "events.jsonl":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(dir_fd, name, data, **kw)

    monkeypatch.setattr(bundle_writer, "_create", full)
    dest = tmp_path / "b" / "0"
    with pytest.raises(BundleWriteError) as err, BundleWriter(dest) as w:
        w.add_text("final.md", "answer\n")
        w.add_jsonl("events.jsonl", [{"type": "x"}])
    assert "events.jsonl" in err.value.message and "No space left on device" in err.value.message
    assert str(dest) in str(err.value) and err.value.fix
    assert not dest.exists() and partials(dest.parent) == []


def test_partial_from_an_interrupted_process_is_discarded_on_next_start(tmp_path: Path):
    dest = tmp_path / "b" / "0"
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT / "src")!r})
        from skill_eval.harness.runner.bundle_writer import BundleWriter
        w = BundleWriter(__import__("pathlib").Path({str(dest)!r}))
        w.add_text("meta.json", "{{}}")
        os._exit(9)  # killed mid-run: no seal, no cleanup
    """)
    assert subprocess.run([sys.executable, "-c", script]).returncode == 9
    assert len(partials(dest.parent)) == 1 and not dest.exists()
    with BundleWriter(dest) as w:  # the next start
        assert partials(dest.parent) == [w.tmp.name], "the dead writer's temp dir was discarded"
        w.add_text("meta.json", "{}")
        w.seal()
    assert partials(dest.parent) == []


def test_a_live_writers_temp_dir_is_not_discarded(tmp_path: Path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = tmp_path / f"{TMP_PREFIX}0.{sleeper.pid}.abcd1234"
        dead = tmp_path / f"{TMP_PREFIX}1.999999999.abcd1234"
        live.mkdir()
        dead.mkdir()
        assert discard_partials(tmp_path) == [dead]
        assert live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_tmp_prefix_matches_the_run_planner():
    from skill_eval.harness.runner import plan

    assert plan.TMP_PREFIX == TMP_PREFIX


def test_credentials_are_redacted_on_write_and_the_bundle_is_held_back(tmp_path: Path):
    dest = tmp_path / "b" / "0"
    value = SECRET["ANTHROPIC_API_KEY"]
    w = BundleWriter(dest, SECRET)
    w.add_text("raw/stream.jsonl", json.dumps({"env": f"key={value}"}) + "\n")
    w.add_json("meta.json", {"extra": {value: [value]}})
    src = tmp_path / "captured"
    (src / "1.out.d").mkdir(parents=True)
    (src / "1.out.d" / "r.json").write_text(f"Bearer {value}")
    w.add_tree("captured", src)
    with pytest.raises(bundle_writer.BundleHeld) as err:
        w.seal()
    assert not dest.exists() and partials(dest.parent) == []
    held = dest.parent / ".held" / "0"
    assert "ANTHROPIC_API_KEY" in str(err.value) and value not in str(err.value) and ".held/0" in str(err.value)
    for f in held.rglob("*"):
        if f.is_file():
            assert value.encode() not in f.read_bytes()
    assert (held / "captured" / "1.out.d" / "r.json").read_text() == "Bearer [REDACTED:ANTHROPIC_API_KEY]"
    assert "captured/1.out.d/r.json: redacted a form of ANTHROPIC_API_KEY (raw)" in (held / "HELD.txt").read_text()


def test_seal_refuses_a_bundle_that_still_holds_a_secret(tmp_path: Path):
    dest = tmp_path / "b" / "0"
    w = BundleWriter(dest, SECRET)
    w.add_text("final.md", "clean")
    (w.tmp / "sneaked.txt").write_text("x" + SECRET["ANTHROPIC_API_KEY"])  # bypasses the writer's redaction
    with pytest.raises(SecretLeak) as err:
        w.seal()
    assert "ANTHROPIC_API_KEY" in str(err.value) and SECRET["ANTHROPIC_API_KEY"] not in str(err.value)
    assert not dest.exists() and partials(dest.parent) == []
    held = dest.parent / ".held" / "0"
    assert (held / "sneaked.txt").read_bytes() == bundle_writer.WITHHELD  # withheld whole: unredacted nowhere
    assert (held / "final.md").read_text() == "clean"


def test_existing_bundle_is_never_overwritten(tmp_path: Path):
    dest = tmp_path / "b" / "0"
    dest.mkdir(parents=True)
    (dest / "meta.json").write_text("{}")
    with pytest.raises(BundleWriteError, match="immutable"):
        BundleWriter(dest)


def test_paths_must_stay_inside_the_bundle(tmp_path: Path):
    with BundleWriter(tmp_path / "b" / "0") as w:
        for bad in ("../escape", "/abs", "a/../../x", ""):
            with pytest.raises(BundleWriteError):
                w.add_text(bad, "x")


def test_every_file_and_directory_is_fsynced_before_the_rename(tmp_path: Path, monkeypatch):
    synced: list[str] = []
    real_fsync, real_rename = os.fsync, os.rename
    dest = tmp_path / "b" / "0"

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def rename(src, dst, **kw):
        synced.append("RENAME")
        return real_rename(src, dst, **kw)

    monkeypatch.setattr(bundle_writer.os, "fsync", fsync)
    monkeypatch.setattr(bundle_writer.os, "rename", rename)
    with BundleWriter(dest) as w:
        w.add_text("meta.json", "{}")
        w.add_text("captured/1.out", "x")
        tmp = str(w.tmp)
        w.seal()
    before = synced[: synced.index("RENAME")]
    assert {f"{tmp}/meta.json", f"{tmp}/captured/1.out", f"{tmp}/captured", tmp} <= set(before)
    assert synced[-1] == str(dest.parent), "the parent directory is synced after the rename"
