"""The bundle loader refuses anything ambiguous as a grading failure, never a crash."""

from __future__ import annotations

import os

import pytest
from test_graders_helpers import bundle, claim, compare, grade, make_repo

from skill_eval.core.errors import SkillEvalError
from skill_eval.grading import bundle as bundle_mod


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("repo"))


def good(cfg, tmp_path):
    return bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"))


def test_good_bundle_loads_clean(cfg, tmp_path):
    b = bundle_mod.load(good(cfg, tmp_path))
    assert b.problems == [] and b.kind == "behavioral" and [c.call for c in b.calls] == [1]


@pytest.mark.parametrize("rel", ["../meta.json", "/etc/passwd", "a/../../x", "a\\b", ""])
def test_safe_path_refuses_escape(tmp_path, rel):
    with pytest.raises(SkillEvalError):
        bundle_mod.safe_path(tmp_path, rel)


def test_snapshot_path_traversal_fails_closed(cfg, tmp_path):
    path = good(cfg, tmp_path)
    text = (path / "calls.jsonl").read_text().replace("captured/1.out.d/0/r.json", "captured/../../../etc/passwd")
    (path / "calls.jsonl").write_text(text)
    g = grade(cfg, path)
    # The call schema refuses '..' outright, so the whole call log is untrusted.
    assert g.failures() == [1, 2, 3, 6]
    assert any("calls.jsonl" in r for r in g.checks["3"].reasons)


def test_symlink_outside_bundle_refused(cfg, tmp_path):
    path = good(cfg, tmp_path)
    snap = next(path.glob("captured/1.out.d/0/*"))
    outside = tmp_path / "outside.json"
    outside.write_bytes(snap.read_bytes())
    snap.unlink()
    os.symlink(outside, snap)
    g = grade(cfg, path)
    assert 6 in g.failures()
    assert any("symlink (pointing outside the bundle)" in r for r in g.checks["6"].reasons)


def test_symlinked_meta_is_refused(cfg, tmp_path):
    path = good(cfg, tmp_path)
    real = tmp_path / "meta-real.json"
    (path / "meta.json").rename(real)
    os.symlink(real, path / "meta.json")
    g = grade(cfg, path)
    assert g.failures() == ["bundle"] and not g.passed()


def test_oversized_file_refused(cfg, tmp_path):
    path = good(cfg, tmp_path)
    (path / "final.md").write_text("x" * 5000 + (path / "final.md").read_text())
    b = bundle_mod.load(path, max_bytes=4096)
    assert any(p.file == "final.md" and "cap" in p.reason for p in b.problems)
    from skill_eval.grading.graders import Catalog, grade_bundle

    cat = Catalog(cfg)
    object.__setattr__(cat.cfg, "max_bundle_file_bytes", 4096)
    try:
        assert grade_bundle(path, cat).failures() == [2, 6]
    finally:
        object.__setattr__(cat.cfg, "max_bundle_file_bytes", 32 * 1024 * 1024)


@pytest.mark.parametrize("name,expected", [
    ("calls.jsonl", [1, 2, 3, 6]), ("claim.json", [2, 6]), ("final.md", [2, 6]),
    ("events.jsonl", [1]), ("usage.json", ["bundle"]), ("prompt.txt", ["bundle"]),
])
def test_missing_required_file(cfg, tmp_path, name, expected):
    path = good(cfg, tmp_path)
    (path / name).unlink()
    assert grade(cfg, path).failures() == expected


def test_invalid_utf8_and_duplicate_keys(cfg, tmp_path):
    path = good(cfg, tmp_path)
    (path / "final.md").write_bytes(b"\xff\xfe broken")
    (path / "usage.json").write_text('{"turns": 1, "turns": 2}')
    b = bundle_mod.load(path)
    reasons = {p.file: p.reason for p in b.problems}
    assert "UTF-8" in reasons["final.md"] and "duplicate JSON key" in reasons["usage.json"]
    assert grade(cfg, path).failures() == [2, 6, "bundle"]


def test_call_numbers_must_be_contiguous(cfg, tmp_path):
    path = bundle(cfg, tmp_path, "breaking", [compare("BREAKING"), compare("BREAKING")], claim("BREAKING"))
    lines = (path / "calls.jsonl").read_text().splitlines()
    (path / "calls.jsonl").write_text(lines[1] + "\n")  # only call 2 survives: call 1 was lost
    b = bundle_mod.load(path)
    assert any("lost or invented" in p.reason for p in b.problems)


def test_trigger_bundle_needs_no_calls_or_claim(cfg, tmp_path):
    from test_graders_helpers import meta

    path = bundle(cfg, tmp_path, "", None, final="Not mine.\n", events=[], meta=meta(kind="trigger", prompt_id="neg"))
    assert not (path / "calls.jsonl").exists() and not (path / "claim.json").exists()
    assert grade(cfg, path).failures() == []


def test_missing_meta_is_a_bundle_failure_not_a_crash(cfg, tmp_path):
    path = good(cfg, tmp_path)
    (path / "meta.json").unlink()
    g = grade(cfg, path)
    assert g.failures() == ["bundle"] and g.kind is None


def test_unknown_scenario_fails_every_check(cfg, tmp_path):
    from test_graders_helpers import meta

    path = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=meta("nope"))
    assert grade(cfg, path).failures() == [1, 2, 3, 4, 5, 6, "bundle"]


def test_incomplete_run_fails_the_bundle_check(cfg, tmp_path):
    from test_graders_helpers import meta

    m = meta("breaking")
    m.update(status="incomplete", status_reason="max turns reached", outcome="budget_stop")
    path = bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), meta=m)
    g = grade(cfg, path)
    # the run is incomplete (bundle check) and its final answer is no finished claim (2 and 6);
    # 1 and 3 rest on the runner-recorded calls and stand
    assert g.failures() == [2, 6, "bundle"] and not g.passed()
    assert "max turns reached" in g.checks["bundle"].reasons[0]
    assert any("outcome is 'budget_stop'" in r for r in g.checks["6"].reasons)
