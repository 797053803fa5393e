"""Compact evidence (issue 26 item 3, core.stored): raw streams gzip-compressed, captured artifacts once
by content in `<evidence>/.objects/` — without a logical byte changing, so seals, call digests and
graders see what the recorder wrote, and nothing in the storage layer is trusted."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from skill_eval.core import seal, stored
from skill_eval.core.errors import InputError
from skill_eval.grading import bundle as bundle_mod

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")
META = {"kind": "behavioral", "arm": "skill-agent", "run_id": "r", "k": 0, "skill": "s", "scenario": "x",
        "model": "scripted:abc", "scripted": True, "isolation": "bwrap", "status": "complete", "agent": {"name": "claude-code"}}
REPORT = json.dumps({"verdict": "BREAKING", "changes": ["x" * 40] * 50}).encode()
STREAM = b"".join(json.dumps({"type": "assistant", "n": i, "text": "thinking " * 10}).encode() + b"\n" for i in range(60))


def make(evidence: Path, rel: str, key: Path) -> Path:
    root = evidence / rel
    (root / "captured" / "1.out.d" / "0").mkdir(parents=True)
    (root / "raw").mkdir()
    (root / "meta.json").write_text(json.dumps(META))
    (root / "captured" / "1.out").write_bytes(b"")
    (root / "captured" / "1.err").write_bytes(b"Evidence coverage: elf\n")
    (root / "captured" / "1.out.d" / "0" / "report.json").write_bytes(REPORT)
    (root / "raw" / "stream.jsonl").write_bytes(STREAM)
    (root / "raw" / "stderr.log").write_bytes(b"tiny\n")  # under MIN_COMPRESS: stays plain
    seal.seal_tree(root, rel, META, key, signed_at="2026-12-03T10:00:00Z")
    return root


@pytest.fixture
def tree(tmp_path: Path):
    key = tmp_path / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t", "-f", str(key)], check=True)
    pub = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    (tmp_path / "allowed_signers").write_text(f'tests namespaces="skill-eval-evidence" {pub}\n')
    evidence = tmp_path / "evidence"
    bundles = [make(evidence, f"s/skill-agent/r/x/{k}", key) for k in range(3)]
    return evidence, bundles, seal.load_allowed_signers(tmp_path / "allowed_signers")


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def verdict(b: Path, evidence: Path, signers) -> seal.Verdict:
    return seal.verify(b, b.relative_to(evidence).as_posix(), signers)


def test_compaction_keeps_every_logical_byte_and_the_seal(tree):
    evidence, bundles, signers = tree
    before = {b: files(b) for b in bundles}
    store = os.fspath(evidence / stored.STORE)
    os.mkdir(store)
    saved = [stored.compact(b, store) for b in bundles]
    assert all(s.after < s.before for s in saved)
    for b in bundles:
        on_disk = files(b)
        assert "raw/stream.jsonl.gz" in on_disk and "raw/stream.jsonl" not in on_disk and "raw/stderr.log" in on_disk
        assert not (b / "captured").exists() and stored.INDEX in on_disk
        assert verdict(b, evidence, signers).state == "signed"
        loaded = bundle_mod.load(b)
        for rel, data in before[b].items():
            if rel in (seal.SEAL, seal.SIG):
                continue
            assert loaded.read_bytes(rel) == data, rel
        assert loaded.read_captured("captured/1.out.d/0/report.json", seal.hashlib.sha256(REPORT).hexdigest()) == REPORT
    # three repeats captured the same report: it is stored once
    assert len(list((evidence / stored.STORE).rglob("*.gz"))) == 3  # report.json, 1.err, the empty 1.out
    assert [stored.compact(b, store).after for b in bundles] == [s.after for s in saved]  # idempotent


def test_expand_restores_the_recorded_tree_byte_for_byte(tree):
    evidence, bundles, signers = tree
    before = files(bundles[0])
    os.mkdir(evidence / stored.STORE)
    stored.compact(bundles[0], os.fspath(evidence / stored.STORE))
    stored.expand(bundles[0])
    assert files(bundles[0]) == before


@pytest.fixture
def compacted(tree):
    evidence, bundles, signers = tree
    os.mkdir(evidence / stored.STORE)
    for b in bundles:
        stored.compact(b, os.fspath(evidence / stored.STORE))
    stored._verified.clear()
    stored._bytes.clear()
    stored._indexes.clear()
    stored._store_of.clear()
    return evidence, bundles, signers


def _object(evidence: Path, data: bytes) -> Path:
    sha = seal.hashlib.sha256(data).hexdigest()
    return evidence / stored.STORE / sha[:2] / f"{sha}.gz"


def test_an_altered_object_fails_the_seal_and_the_grader(compacted):
    evidence, bundles, signers = compacted
    _object(evidence, REPORT).write_bytes(gzip.compress(b'{"verdict": "NO_CHANGE"}', mtime=0))
    v = verdict(bundles[0], evidence, signers)
    assert v.state == "invalid" and "does not hash to its name (altered)" in v.reason
    with pytest.raises(bundle_mod.SkillEvalError, match="altered"):
        bundle_mod.load(bundles[1]).read_bytes("captured/1.out.d/0/report.json")


def test_a_missing_object_or_store_is_named_with_its_fix(compacted):
    evidence, bundles, signers = compacted
    _object(evidence, REPORT).unlink()
    v = verdict(bundles[0], evidence, signers)
    assert v.state == "invalid" and "captured/1.out.d/0/report.json: object" in v.reason and "missing" in v.reason
    shutil.rmtree(evidence / stored.STORE)
    stored._store_of.clear()
    with pytest.raises(InputError, match="copy the evidence tree's .objects/"):
        stored.read(bundles[1], "captured/1.err", 1 << 20)


def test_an_index_pointing_at_another_valid_object_fails_the_seal(compacted):
    evidence, bundles, signers = compacted
    other = b"a different, honestly stored report"
    stored.put_object(os.fspath(evidence / stored.STORE), other)
    index = json.loads((bundles[0] / stored.INDEX).read_text())
    index["files"]["captured/1.out.d/0/report.json"] = seal.hashlib.sha256(other).hexdigest()
    (bundles[0] / stored.INDEX).write_text(json.dumps(index))
    v = verdict(bundles[0], evidence, signers)
    assert v.state == "invalid" and "report.json differs from its sealed sha256" in v.reason


@pytest.mark.parametrize("mutate, needle", [
    (lambda b: (b / "raw" / "stream.jsonl").write_bytes(STREAM), "stored twice"),
    (lambda b: (b / "captured").mkdir() or (b / "captured" / "1.err").write_bytes(b"x"), "stored twice"),
    (lambda b: (b / stored.INDEX).write_text('{"schema_version": 1, "files": {"meta.json": "' + "0" * 64 + '"}}'),
     "not a shared path"),
    (lambda b: (b / stored.INDEX).write_text('{"schema_version": 1, "files": {}, "files": {}}'), "duplicate"),
    (lambda b: (b / "raw" / "stream.jsonl.gz").write_bytes(gzip.compress(STREAM)[:-9]), "truncated"),
])
def test_a_bad_stored_form_is_invalid_naming_the_problem(compacted, mutate, needle):
    evidence, bundles, signers = compacted
    mutate(bundles[0])
    v = verdict(bundles[0], evidence, signers)
    assert v.state == "invalid" and needle in v.reason.lower(), v.reason


def test_a_gzip_bomb_is_refused_not_expanded(compacted):
    _evidence, bundles, _ = compacted
    (bundles[0] / "raw" / "stream.jsonl.gz").write_bytes(gzip.compress(b"\0" * (4 << 20)))
    with pytest.raises(InputError, match="expands to more than"):
        stored.read(bundles[0], "raw/stream.jsonl", 1 << 20)


def test_an_interrupted_compaction_is_finished_by_the_next(tree):
    evidence, bundles, signers = tree
    b = bundles[0]
    (b / "raw" / "stream.jsonl.gz").write_bytes(stored.gzip_bytes(STREAM))  # the crash came before the plain file went
    assert "stored twice" in (verdict(b, evidence, signers).reason or "")
    os.mkdir(evidence / stored.STORE)
    stored.compact(b, os.fspath(evidence / stored.STORE))
    assert verdict(b, evidence, signers).state == "signed"


def test_a_symlink_in_a_bundle_is_refused_by_compaction(tree):
    evidence, bundles, _ = tree
    (bundles[0] / "raw" / "link").symlink_to("/etc/passwd")
    os.mkdir(evidence / stored.STORE)
    with pytest.raises(InputError, match="raw/link is not a regular file"):
        stored.compact(bundles[0], os.fspath(evidence / stored.STORE))


def test_compaction_repairs_a_bad_object_in_its_place_instead_of_trusting_it(tree):
    """An object already at the target path is used only if it still holds the bytes (a corrupt one is
    replaced), so compaction never deletes the only good copy in favour of a bad object."""
    evidence, bundles, signers = tree
    store = evidence / stored.STORE
    store.mkdir()
    bad = _object(evidence, REPORT)
    bad.parent.mkdir(parents=True)
    bad.write_bytes(gzip.compress(b"garbage", mtime=0))
    stored._verified.clear()
    stored._bytes.clear()
    stored.compact(bundles[0], os.fspath(store))
    assert gzip.decompress(bad.read_bytes()) == REPORT
    assert verdict(bundles[0], evidence, signers).state == "signed"
    stored._store_of.clear()
    assert bundle_mod.load(bundles[0]).read_bytes("captured/1.out.d/0/report.json") == REPORT


def test_an_index_version_that_is_a_boolean_is_refused(compacted):
    evidence, bundles, signers = compacted
    index = json.loads((bundles[0] / stored.INDEX).read_text())
    (bundles[0] / stored.INDEX).write_text(json.dumps({"schema_version": True, "files": index["files"]}))
    stored._indexes.clear()
    v = verdict(bundles[0], evidence, signers)
    assert v.state == "invalid" and "schema_version" in v.reason


def test_a_temp_file_left_by_an_interrupted_compaction_is_removed_not_compacted(tree):
    evidence, bundles, signers = tree
    leftover = bundles[0] / "raw" / ".stream.jsonl.gz.tmp-123-abcd"  # fsio's temp name, half written
    leftover.write_bytes(b"\x1f\x8b half a gzip" * 40)
    assert "not in the seal" in (verdict(bundles[0], evidence, signers).reason or "")
    (evidence / stored.STORE).mkdir()
    stored.compact(bundles[0], os.fspath(evidence / stored.STORE))
    assert not leftover.exists() and not leftover.with_name(leftover.name + ".gz").exists()
    assert verdict(bundles[0], evidence, signers).state == "signed"


@pytest.mark.parametrize("index, needle", [
    ('{"schema_version": 2, "files": {}}', "objects_index"),
    ('{"schema_version": 1, "files": {}, "extra": 1}', "objects_index"),
    ('{"schema_version": 1}', "is not {"),
    ('{"schema_version": 1, "files": {"captured/1.err": "ABC"}}', "not a shared path with a sha256"),
])
def test_objects_json_is_validated_against_its_schema(compacted, index, needle):
    _evidence, bundles, _ = compacted
    (bundles[0] / stored.INDEX).write_text(index)
    stored._indexes.clear()
    with pytest.raises(InputError, match=needle):
        stored.index_of(bundles[0])


def test_the_store_is_exactly_the_evidence_trees_never_a_stray_one_nearer_the_bundle(compacted):
    """Issue 34: the store used to be found by walking up, so an empty `.objects` planted nearer the bundles
    made every bundle below it "missing". The store is `<evidence>/.objects`, TREE_DEPTH levels up."""
    evidence, bundles, signers = compacted
    for stray in (evidence / "s", evidence / "s" / "skill-agent" / "r", bundles[0].parent):
        (stray / stored.STORE).mkdir()
    stored._store_of.clear()
    assert stored.store_of(bundles[0]) == os.fspath(evidence / stored.STORE)
    for b in bundles:
        assert verdict(b, evidence, signers).state == "signed"
        assert bundle_mod.load(b).read_bytes("captured/1.out.d/0/report.json") == REPORT


def test_a_bundle_off_the_layout_depth_finds_no_store_and_says_so(compacted, tmp_path):
    evidence, bundles, _ = compacted
    off = evidence / "s" / "skill-agent" / "r" / "x" / "0" / "nested"
    shutil.copytree(bundles[1], off)
    stored._store_of.clear()
    with pytest.raises(InputError, match="content store"):
        stored.read(off, "captured/1.err", 1 << 20)


@pytest.mark.parametrize("kind, needle", [
    ("fifo", "is a FIFO, not a regular file"),
    ("link", "is a symbolic link, not a regular file"),
    ("dir", "is a directory, not a regular file"),
])
def test_a_non_regular_object_is_refused_by_name_never_opened_as_one(compacted, tmp_path, kind, needle):
    evidence, bundles, signers = compacted
    obj = _object(evidence, REPORT)
    good = tmp_path / "good.gz"
    shutil.move(obj, good)
    {"fifo": lambda: os.mkfifo(obj), "link": lambda: obj.symlink_to(good), "dir": lambda: obj.mkdir()}[kind]()
    v = verdict(bundles[0], evidence, signers)  # a FIFO opened for reading would block: it is never waited on
    assert v.state == "invalid" and needle in v.reason, v.reason
    with pytest.raises(bundle_mod.SkillEvalError, match=needle):
        bundle_mod.load(bundles[1]).read_bytes("captured/1.out.d/0/report.json")
    found = stored.audit(os.fspath(evidence / stored.STORE))
    assert len(found.problems) == 1 and os.fspath(obj) in found.problems[0], found.problems


def test_the_audit_names_stray_entries_and_unreferenced_objects(compacted):
    evidence, bundles, _ = compacted
    store = evidence / stored.STORE
    found = stored.audit(os.fspath(store))
    referenced = {sha for b in bundles for sha in stored.index_of(b).values()}
    assert found.problems == [] and set(found.objects) == referenced and found.unreferenced(referenced) == []
    extra = stored.put_object(os.fspath(store), b"bytes no bundle lists")
    os.mkfifo(store / "pipe")
    (store / "ab").mkdir(exist_ok=True)
    (store / "ab" / "notes.txt").write_text("x")
    found = stored.audit(os.fspath(store))
    assert found.unreferenced(referenced) == [os.fspath(store / extra[:2] / f"{extra}.gz")]
    assert [p.split(os.fspath(store))[1] for p in found.problems] == [
        "/ab/notes.txt is not named <sha256>.gz under its first two hex digits",
        "/pipe is a FIFO where only <sha[:2]>/ directories belong"]
