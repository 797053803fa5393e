"""The fast paths change nothing a user sees: same bytes out as the reference paths.

Reference = jsonschema validation only, `--help` parsing with no surface cache, no shared pass,
no process pool, full grades, pure-Python YAML with no memo, the full strict-JSON value walk, the
careful bundle reader, uncached fixture digests, the two separate local-path checks. Fast = the defaults. Compared on this repository (`pr --json`,
timing fields dropped) and on a synthetic evidence tree (`evidence` text and JSON, pool on/off).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from skill_eval import cli
from skill_eval.checks import surface
from skill_eval.core import schemas
from skill_eval.grading import regrade

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "scripts"))
    spec.loader.exec_module(mod)
    return mod


def _reference(monkeypatch):
    from skill_eval.commands import local_paths
    from skill_eval.core import strict
    from skill_eval.grading import bundle
    from skill_eval.grading.graders import context
    from skill_eval.harness.runner.normalize import check_evidence

    monkeypatch.setattr(strict, "_CStrictLoader", None)
    monkeypatch.setattr(strict, "_plainly_within_limits", lambda text, value, encodable: False)
    monkeypatch.setattr(strict, "_YAML_MEMO_TEXT_MAX", -1)
    strict._YAML_MEMO.clear()
    monkeypatch.setattr(bundle, "_fast_read", lambda *a: None)
    real_sha = context.file_sha256
    monkeypatch.setattr(context, "file_sha256", lambda fixture_dir, rel, cache=None: real_sha(fixture_dir, rel))
    monkeypatch.setattr(local_paths, "_scan", lambda tree, root, home, layout: (
        check_evidence(tree, root), local_paths.home_hits(tree, root, home)))
    monkeypatch.setattr(schemas, "FAST", False)
    monkeypatch.setattr(surface, "walk_click", lambda *a, **k: None)
    monkeypatch.setattr(surface, "cache_key", lambda tool: None)
    monkeypatch.setattr(regrade, "sharing", lambda **k: contextlib.nullcontext())
    monkeypatch.setattr(regrade, "POOL_MIN", 10**9)
    monkeypatch.setattr(regrade, "SlimGrade", lambda g: g)


def _run(capsys, argv):
    capsys.readouterr()
    rc = cli.main(argv)
    return rc, capsys.readouterr().out


def _drop_seconds(text: str) -> dict:
    data = json.loads(text)
    for step in data["steps"]:
        step.pop("seconds", None)
    return data


@pytest.mark.slow
def test_pr_json_fast_equals_reference_on_this_repository(capsys, monkeypatch):
    fast_rc, fast = _run(capsys, ["pr", "--json", "--root", str(ROOT)])
    _reference(monkeypatch)
    ref_rc, ref = _run(capsys, ["pr", "--json", "--root", str(ROOT)])
    assert fast_rc == ref_rc
    assert _drop_seconds(fast) == _drop_seconds(ref)
    assert json.dumps(_drop_seconds(fast), sort_keys=True) == json.dumps(_drop_seconds(ref), sort_keys=True)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    _bench().synth_repo(root, 48)
    # one broken bundle of each kind the readers word differently
    ev = root / "agent-evals/skills/evidence"
    bad = ev / "abi-compat-review/skill-agent/broken/review-removed-export/0"
    bad.mkdir(parents=True)
    (bad / "meta.json").write_text('{"schema_version": 1, "schema_version": 1}')
    (ev / "stray" / "meta.json").parent.mkdir()
    (ev / "stray" / "meta.json").write_text("{}")
    return root


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_evidence_fast_pool_slim_equals_reference(synthetic, capsys, monkeypatch, json_flag):
    monkeypatch.setattr(regrade, "POOL_MIN", 10)  # the pool runs above 10 bundles
    fast = _run(capsys, ["evidence", "--root", str(synthetic), *json_flag])
    fresh = _run(capsys, ["freshness", "--root", str(synthetic), *json_flag])
    _reference(monkeypatch)
    assert _run(capsys, ["evidence", "--root", str(synthetic), *json_flag]) == fast
    assert _run(capsys, ["freshness", "--root", str(synthetic), *json_flag]) == fresh
    assert "unreadable: evidence/abi-compat-review/skill-agent/broken" in fast[1]


def test_slim_grade_answers_like_the_grade(synthetic):
    from skill_eval.content import config
    from skill_eval.grading.graders import Catalog, grade_bundle

    cfg = config.load(synthetic)
    catalog = Catalog(cfg)
    for meta in sorted((synthetic / "agent-evals/skills/evidence").rglob("meta.json"))[:12]:
        g = grade_bundle(meta.parent, catalog)
        if g.kind is None:
            continue
        slim = regrade.SlimGrade(g)
        assert slim.failures() == g.failures() and slim.failed_dimensions() == g.failed_dimensions()
        assert slim.meta == g.meta and slim.passed() == g.passed() and slim.incomplete() == g.incomplete()
        assert {n: c.status for n, c in slim.checks.items()} == {n: c.status for n, c in g.checks.items()}


def test_lazy_literals_match_their_sources():
    from skill_eval.commands import evidence as evidence_cmd
    from skill_eval.grading import evidence, rerecord
    from skill_eval.grading.graders import STAGES

    assert evidence_cmd.STAGES == STAGES and evidence_cmd.PENDING == evidence.PENDING
    assert evidence.RERECORD == rerecord.FILE


def test_pr_reads_each_evidence_bundle_once(capsys, monkeypatch):
    """freshness + evidence (+ grading) in `pr` share one pass: one bundle.load per bundle, and no
    separate meta.json read or validation for the gate or the freshness step."""
    from collections import Counter

    from skill_eval.core import strict
    from skill_eval.grading import bundle

    evidence_root = str(ROOT / "agent-evals" / "skills" / "evidence")
    loads: Counter[str] = Counter()
    meta_reads: list[str] = []
    real_load, real_load_json = bundle.load, strict.load_json

    def counting_load(root, **kw):
        if str(root).startswith(evidence_root):
            loads[str(root)] += 1
        return real_load(root, **kw)

    def counting_load_json(path, **kw):
        if str(path).startswith(evidence_root) and str(path).endswith("meta.json"):
            meta_reads.append(str(path))
        return real_load_json(path, **kw)

    monkeypatch.setattr(bundle, "load", counting_load)
    monkeypatch.setattr(strict, "load_json", counting_load_json)
    monkeypatch.setattr(regrade, "POOL_MIN", 10**9)  # counted in this process: no forked workers (360 bundles > 300)
    _run(capsys, ["pr", "--root", str(ROOT), "--skip", "surface", "--skip", "golden"])
    n_bundles = len(list(Path(evidence_root).rglob("meta.json")))
    assert n_bundles > 0 and len(loads) == n_bundles
    # every bundle is read once, comparison arms included (the contamination check is fed by the pass)
    control = {p for p in loads if "/baseline/" in p or "/docs/" in p}
    assert control and set(loads.values()) == {1}
    assert meta_reads == []
