"""Ground truth is what the real abicheck says on the committed fixtures.

For every case in agent-evals/skills/ground_truth.json (and every release-matrix target)
this runs the real `abicheck compare OLD NEW [args] -o json=...` from the venv, with the
fixture directory as cwd, and checks the exit code, the report's verdict, the expected
change kinds and the consumer-scoped verdict. It also proves the committed binaries are
reproducible from their C sources (scripts/build_fixtures.py --check).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVALS = ROOT / "agent-evals" / "skills"
FIXTURES = EVALS / "fixtures"
ABICHECK = Path(sys.executable).parent / "abicheck"
CONSUMER_PATHS = ("consumer_scope", "required_symbol_contract")

TRUTH = json.loads((EVALS / "ground_truth.json").read_text(encoding="utf-8"))
CASES = TRUTH["cases"]


@dataclass(frozen=True)
class Cell:
    case: str
    target: str | None  # None: the case's own old/new pair
    old: str
    new: str
    args: tuple[str, ...]
    expected: str | None
    expected_exit: int
    runnable: bool

    @property
    def id(self) -> str:
        return self.case if self.target is None else f"{self.case}[{self.target}]"


def _cells() -> list[Cell]:
    cells = []
    for case_id, rec in sorted(CASES.items()):
        args = tuple(rec.get("args", ()))
        # The case's own pair is unrunnable when it names an unrunnable matrix target.
        runnable = not any(
            p["old"] == rec["old"] and p["new"] == rec["new"] and not p.get("runnable", True)
            for p in rec.get("targets", {}).values()
        )
        cells.append(Cell(case_id, None, rec["old"], rec["new"], args, rec["expected"], rec["expected_exit"], runnable))
        for name, pair in sorted(rec.get("targets", {}).items()):
            cells.append(
                Cell(
                    case_id,
                    name,
                    pair["old"],
                    pair["new"],
                    tuple(pair.get("args", args)),
                    pair["expected"],
                    pair["expected_exit"],
                    pair.get("runnable", True),
                )
            )
    return cells


CELLS = _cells()


@dataclass
class Run:
    exit_code: int
    report: dict | None
    stderr: str


def _compare(cell: Cell, tmp: Path) -> Run:
    out = tmp / f"{cell.id.replace('[', '.').replace(']', '')}.json"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), COLUMNS="120", TERM="dumb", NO_COLOR="1")
    env.pop("ABICHECK_ALLOW_UNSUPPORTED_CASTXML", None)
    proc = subprocess.run(
        [str(ABICHECK), "compare", cell.old, cell.new, *cell.args, "-o", f"json={out}"],
        cwd=FIXTURES / cell.case,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else None
    return Run(proc.returncode, report, proc.stderr[-2000:])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    if not ABICHECK.exists():
        pytest.skip(f"abicheck is not installed next to {sys.executable}")
    tmp = tmp_path_factory.mktemp("abicheck")
    # A matrix case's own pair repeats one of its targets: run each distinct invocation once.
    unique: dict[tuple, Cell] = {}
    for cell in CELLS:
        unique.setdefault((cell.case, cell.old, cell.new, cell.args), cell)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        done = dict(zip(unique, pool.map(lambda c: _compare(c, tmp), unique.values()), strict=True))
    return {cell.id: done[(cell.case, cell.old, cell.new, cell.args)] for cell in CELLS}


def test_every_case_has_a_fixture_directory():
    on_disk = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert on_disk == set(CASES), "fixture directories and ground-truth cases must match one to one"


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.id)
def test_artifacts_present_unless_unrunnable(cell: Cell):
    d = FIXTURES / cell.case
    present = [(d / cell.old).is_file(), (d / cell.new).is_file()]
    if cell.runnable:
        assert all(present), f"{cell.id}: {cell.old} / {cell.new} must be committed"
    else:
        assert not any(present), f"{cell.id}: an unrunnable target must have no artifacts"


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.id)
def test_exit_code_and_verdict(cell: Cell, runs):
    run = runs[cell.id]
    assert run.exit_code == cell.expected_exit, f"{cell.id}: exit {run.exit_code}\n{run.stderr}"
    if cell.expected is None:
        # not comparable (16) still writes a report with verdict null; a usage error (64) writes none
        assert run.report is None or run.report.get("verdict") is None
        if cell.expected_exit == 16:
            assert run.report is not None and run.report["verdict"] is None
            assert run.report["run_outcome"]["operational"] == "not_comparable"
    else:
        assert run.report is not None, f"{cell.id}: no JSON report written\n{run.stderr}"
        assert run.report["verdict"] == cell.expected


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_expected_kinds_and_evidence(case_id: str, runs):
    rec = CASES[case_id]
    report = runs[case_id].report
    if not rec["expected_kinds"]:
        return
    kinds = {c["kind"] for c in report["changes"]}
    missing = set(rec["expected_kinds"]) - kinds
    assert not missing, f"{case_id}: kinds {sorted(missing)} not in report ({sorted(kinds)})"


@pytest.mark.parametrize("case_id", sorted(c for c in CASES if "consumer_expected" in CASES[c]))
def test_consumer_verdict(case_id: str, runs):
    report = runs[case_id].report
    expected = CASES[case_id]["consumer_expected"]
    found = {p: report[p]["verdict"] for p in CONSUMER_PATHS if isinstance(report.get(p), dict)}
    assert found, f"{case_id}: report carries no consumer-scoped verdict"
    # --required-symbol fills both blocks; they must agree with the truth.
    assert set(found.values()) == {expected}, f"{case_id}: consumer verdicts {found}, expected {expected}"


def test_min_evidence_states_the_depth_the_verdicts_rest_on(runs):
    """Every case whose report should be deep enough states its min_evidence tiers;
    stripped-layout is the deliberate exception (symbols only, too shallow for its question)."""
    shallow = []
    for case_id, rec in CASES.items():
        report = runs[case_id].report
        if report is None or report.get("verdict") is None:
            continue
        if not set(rec["min_evidence"]) <= set(report["evidence_tiers"]):
            shallow.append(case_id)
    assert shallow == ["stripped-layout"]


def test_contract_coverage_is_incomplete_while_the_verdict_stays(runs):
    report = runs["contract-coverage"].report
    assert report["verdict"] == "BREAKING"
    assert report["contract_coverage_failures"], "expected incomplete public-header contract coverage"
    assert report["contract_coverage_exit_contribution"] == 1
    assert report["exit"]["code"] == 4


def test_not_comparable_is_a_scope_mismatch(runs):
    report = runs["not-comparable"].report
    assert report["reason"]["kind"] == "scope_mismatch"


def test_committed_binaries_are_reproducible():
    """~2 s (39 gcc runs in a temp dir), so it is not marked slow."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_fixtures.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "binaries reproducible" in proc.stdout
