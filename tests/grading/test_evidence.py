"""The evidence gate: missing, extra, duplicated, stale, unreadable — and honest pending.

selection/freshness are stubbed here (the gate is coded against their API), so these
tests pin the gate's own rules.
"""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest
import yaml
from test_graders_helpers import SKILL, bundle, claim, compare, make_repo, meta

from skill_eval import cli
from skill_eval.grading import baselines, evidence, gates
from skill_eval.grading.graders import Catalog


def expected_fn(items, honour_arms=False):
    def fn(cfg, suite_obj, arms=("skill-agent",)):
        return [SimpleNamespace(kind="behavioral", skill=SKILL, arm=a, item_id=i, k=k)
                for a in (arms if honour_arms else ("skill-agent",)) for i in suite_obj.items for k in range(cfg.k)]
    return fn


def select_fn(risk, full):
    return lambda cfg, suite, base=None: SimpleNamespace(items=full if suite == "full" else risk)


@pytest.fixture
def cfg(tmp_path):
    return make_repo(tmp_path)


def record(cfg, item="breaking", k=0, run="run1", verdict="BREAKING", **over):
    m = meta(item, k=k)
    m["run_id"] = run
    m.update(over)
    dest = cfg.evals_dir / "evidence" / SKILL / m["arm"] / run / item / str(k)
    tmp = dest.parent / f".tmp{k}"
    path = bundle(cfg, tmp.parent, item, [compare("BREAKING")], claim(verdict), meta=m, name=tmp.name)
    shutil.move(str(path), dest)
    return dest


def check(cfg, risk=("breaking",), full=("breaking", "compatible"), stage="merge", fresh=lambda m: []):
    return evidence.check(cfg, "risk", None, stage, select_fn=select_fn(list(risk), list(full)),
                          expected_fn=expected_fn(None), freshness_fn=fresh, catalog=Catalog(cfg))


def write_pending(cfg, *items):
    body = {"schema_version": 1, "pending": [{"kind": "behavioral", "item": i, "reason": "not recorded yet (bootstrap)"} for i in items]}
    (cfg.evals_dir / evidence.PENDING).write_text(yaml.safe_dump(body))


def baseline_for(cfg, r):
    baselines.update(cfg, r.grades, gates.pass_k(r.grades, cfg.k))


def test_no_evidence_is_missing(cfg):
    r = check(cfg)
    assert not r.passed and sum(e.startswith("missing:") for e in r.errors) == 3


def test_pending_excuses_only_missing_and_is_loud(cfg):
    write_pending(cfg, "breaking", "compatible")
    r = check(cfg)
    assert r.passed and r.pending == ["PENDING behavioral breaking: not recorded yet (bootstrap)"]
    assert not check(cfg, stage="release").passed  # release accepts no pending


def test_pending_entry_with_evidence_or_unexpected_is_an_error(cfg):
    for k in range(3):
        record(cfg, k=k)
    write_pending(cfg, "breaking", "nope")
    errors = check(cfg).errors
    assert any("now has evidence" in e for e in errors)
    assert any("nope is not expected" in e for e in errors)


def test_complete_fresh_passing_evidence(cfg):
    for k in range(3):
        record(cfg, k=k)
    r = check(cfg)
    assert r.errors == ["baseline: no baseline for abi-compat-review / scripted / scripted:abc; record one with `skill-eval baseline update`"]
    baseline_for(cfg, r)
    assert check(cfg).passed


def test_stale_extra_duplicated_unreadable_and_misplaced(cfg):
    for k in range(3):
        record(cfg, k=k)
    baseline_for(cfg, check(cfg))
    record(cfg, k=1, run="run2")  # duplicate slot
    record(cfg, item="api-break", k=0)  # not expected by any suite
    bad = cfg.evals_dir / "evidence" / SKILL / "skill-agent" / "run3" / "breaking" / "9"
    bad.mkdir(parents=True)
    (bad / "meta.json").write_text("{")
    (cfg.evals_dir / "evidence" / "stray").mkdir()
    (cfg.evals_dir / "evidence" / "stray" / "meta.json").write_text("{}")
    write_pending(cfg, "breaking")
    r = check(cfg, fresh=lambda m: ["harness: stale"] if m["k"] == 2 else [])
    kinds = sorted({e.split(":")[0] for e in r.errors})
    assert kinds == ["duplicated", "extra", "pass^k", "pending", "stale", "unreadable"], r.errors


def test_path_must_agree_with_meta(cfg):
    path = record(cfg, k=0)
    path.rename(path.parent / "2")
    assert any("path says" in e for e in check(cfg).errors)


def test_failing_zero_tolerance_run_fails_pass_k(cfg):
    record(cfg, k=0)
    record(cfg, k=1, verdict="COMPATIBLE")
    record(cfg, k=2)
    r = check(cfg)
    assert any("fails zero-tolerance dimension 6 in run(s) k=[1]" in e for e in r.errors)


def test_cli_evidence_and_write_pending(cfg, monkeypatch, capsys):
    monkeypatch.setattr(evidence, "_default_selection", lambda: (select_fn(["breaking"], ["breaking", "compatible"]), expected_fn(None)))
    monkeypatch.setattr(evidence, "_default_freshness", lambda c: (lambda m: []))
    root = ["--root", str(cfg.root)]
    assert cli.main(["evidence", *root]) == 1
    assert cli.main(["evidence", *root, "--write-pending", "no live runs recorded yet (bootstrap)"]) == 0
    written = yaml.safe_load((cfg.evals_dir / evidence.PENDING).read_text())
    assert [p["item"] for p in written["pending"]] == ["breaking", "compatible"]
    capsys.readouterr()
    assert cli.main(["evidence", *root]) == 0
    out = capsys.readouterr().out
    assert "!! 1 expected item(s) have NO evidence yet" in out and "PENDING behavioral breaking" in out


def test_cli_baseline_update_then_evidence_passes(cfg, monkeypatch, capsys):
    monkeypatch.setattr(evidence, "_default_selection", lambda: (select_fn(["breaking"], ["breaking"]), expected_fn(None)))
    monkeypatch.setattr(evidence, "_default_freshness", lambda c: (lambda m: []))
    for k in range(3):
        record(cfg, k=k)
    root = ["--root", str(cfg.root)]
    assert cli.main(["evidence", *root]) == 1  # no baseline yet
    assert cli.main(["baseline", "update", *root]) == 0
    assert cli.main(["baseline", "show", "--json", *root]) == 0
    assert cli.main(["evidence", *root]) == 0
    capsys.readouterr()


def test_cli_baseline_update_refuses_failing_zero_tolerance(cfg, capsys):
    record(cfg, k=0, verdict="COMPATIBLE")
    assert cli.main(["baseline", "update", "--root", str(cfg.root)]) == 1
    assert "zero-tolerance" in capsys.readouterr().err


def test_text_output_lists_failing_skill_agent_bundles_and_counts_comparison_arms():
    from skill_eval.commands import evidence as command

    def grade(bundle, arm, failures):
        asked = []

        def fails():
            asked.append(1)
            return list(failures)
        return SimpleNamespace(bundle=bundle, meta={"arm": arm}, failures=fails, asked=asked)

    grades = [grade("a/0", "skill-agent", [6, "bundle"]), grade("b/0", "baseline", [2]), grade("c/0", "skill-agent", []),
              grade("d/0", "docs", [1]), grade("e/0", "baseline", [6]), grade("f/0", "skill-agent", [3])]
    assert list(command.graded(grades, verbose=False)) == [
        "  graded a/0: failures [6, 'bundle']", "  graded f/0: failures [3]",
        "  baseline: 2 bundle(s) fail some dimension (comparison evidence, not gated; --verbose lists them)",
        "  docs: 1 bundle(s) fail some dimension (comparison evidence, not gated; --verbose lists them)"]
    assert [len(g.asked) for g in grades] == [1] * 6  # each grade's failures asked once
    assert list(command.graded(grades, verbose=True)) == [
        "  graded a/0: failures [6, 'bundle']", "  graded b/0: failures [2]", "  graded d/0: failures [1]",
        "  graded e/0: failures [6]", "  graded f/0: failures [3]"]
