"""`scripts/grade_bundle.py` / `skill-eval grade` and `skill-eval golden` from the outside."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skill_eval import cli
from skill_eval.content import config
from skill_eval.grading import golden

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "agent-evals" / "skills" / "golden"
pytestmark = pytest.mark.skipif(not (GOLDEN / "manifest.yaml").is_file(), reason="golden corpus not generated")


def script(name, *args):
    return subprocess.run([sys.executable, str(REPO / "scripts" / name), *args], cwd=REPO, capture_output=True, text=True)


def test_grade_bundle_json_prints_each_golden_expected_set():
    entries = golden.load_manifest(config.load(REPO))
    proc = script("grade_bundle.py", "--json", *(str(GOLDEN / e.path) for e in entries))
    assert proc.returncode == 1, proc.stderr  # the corpus holds bad bundles
    payload = json.loads(proc.stdout)
    assert [b["bundle"] for b in payload["bundles"]] == [str(GOLDEN / e.path) for e in entries]
    for e, b in zip(entries, payload["bundles"]):
        assert b["failures"] == list(e.expected), e.id
        assert b["failed_dimensions"] == [f for f in e.expected if isinstance(f, int)], e.id
        assert b["zero_tolerance_failed"] == [f for f in e.expected if f in (2, 6)], e.id
        assert set(b) >= {"bundle", "kind", "dimensions", "failed_dimensions", "zero_tolerance_failed"}
        if b["kind"] == "behavioral":
            assert sorted(b["dimensions"]) == ["1", "2", "3", "4", "5", "6"]
            assert all({"passed", "reasons", "status"} <= set(d) for d in b["dimensions"].values())


@pytest.mark.parametrize("bundle,code", [("good-removed-export", 0), ("bad-compatible-over-api-break", 1),
                                         ("bad-judged-failure", 0), ("good-trigger-negative", 0)])
def test_exit_codes(bundle, code):
    proc = script("grade_bundle.py", str(GOLDEN / bundle))
    assert proc.returncode == code, proc.stdout + proc.stderr


def test_release_stage_gates_judged_dimensions(capsys):
    assert cli.main(["grade", "--stage", "release", str(GOLDEN / "bad-judged-failure")]) == 1
    assert cli.main(["grade", "--stage", "release", str(GOLDEN / "good-removed-export")]) == 0
    # not judged is incomplete for release
    assert cli.main(["grade", "--stage", "release", str(GOLDEN / "good-compatible-addition")]) == 1
    out = capsys.readouterr().out
    assert "dimension 4: not_judged" in out


def test_human_output_lists_dimensions_and_reasons():
    proc = script("grade_bundle.py", str(GOLDEN / "bad-compatible-over-api-break"))
    assert "dimension 6: fail" in proc.stdout and "cited artifacts say API_BREAK" in proc.stdout
    assert "dimension 1: pass" in proc.stdout and "zero-tolerance failures: [6]" in proc.stdout


@pytest.mark.parametrize("args", [[], ["/nonexistent/bundle"], ["--stage", "nope", "x"]])
def test_usage_errors_exit_2(args):
    proc = script("grade_bundle.py", *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_root_discovery_from_elsewhere(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "grade_bundle.py"), "--root", str(REPO), "--json",
                           str(GOLDEN / "good-contract-coverage")], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["failures"] == []


def test_golden_command(capsys):
    assert cli.main(["golden", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["passed"] and all(b["ok"] for b in payload["bundles"])
