"""Issue 28 item 6: every check a command prints as failed makes it exit 1; `--report-only` is the
informational form.

The audit of src/skill_eval/commands/ found one command that printed a failed check and exited 0:
`scorecard` ("COST GATE FAILED", a `FAIL` line per regression) unless `--gate` was passed. It now
gates by default. `lift` prints verdicts, not failed checks, unless `--require-lift` makes it a gate;
then each comparison that is not LIFT is a `FAIL` line and the exit is 1. Every other command that
prints FAIL already exits 1 (their own tests: check_skills, check_triggers, freshness, generate,
golden, grade, judge, local_paths, pack, pr, registry, release, surface, evidence, run); the static
test below keeps a new `FAIL` line from appearing behind an opt-in flag.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import pytest

from skill_eval.commands import lift as lift_cmd
from skill_eval.commands import scorecard as scorecard_cmd
from skill_eval.content import config
from skill_eval.reporting import lift
from skill_eval.reporting import scorecard as sc
from skill_eval.reporting.scorecard import build as build_mod
from skill_eval.reporting.scorecard.runs import MAIN, RunRecord

COMMANDS = Path(__file__).resolve().parents[2] / "src/skill_eval/commands"


def rec(arm: str, item: str, passed: bool, cost: float) -> RunRecord:
    return RunRecord(path=f"{arm}/{item}", kind="behavioral", skill="s", arm=arm, replicate=MAIN, agent="a", model="m",
                     scripted=False, item=item, k=0, outcome="completed", passed=passed, checks={"1": "pass"},
                     cost_usd=cost, cost_source="reported")


def card(treatment_cost: float) -> dict:
    records = [rec("skill-agent", f"x{i}", True, treatment_cost) for i in range(8)]
    records += [rec("baseline", f"x{i}", i % 2 == 0, 1.0) for i in range(8)]
    return build_mod.build(records, lift.Settings(bootstrap_samples=200), k=1, cost_regression=0.1,
                           audit={"ngram": 8, "flagged": [], "holdout": []})


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """`scorecard` / `lift` over a given card, without evidence on disk."""
    holder: dict = {}
    monkeypatch.setattr(config, "load", lambda root: argparse.Namespace(root=tmp_path))
    monkeypatch.setattr(sc, "compute", lambda cfg, evidence=None: sc.Result(holder["card"], []))
    return holder


def scorecard(tmp_path: Path, *flags: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--json", action="store_true")
    scorecard_cmd.add_arguments(p)
    ns = p.parse_args(["--out", str(tmp_path / "out"), *flags])
    ns.root = tmp_path
    return ns


def test_scorecard_cost_gate_failure_exits_1_after_writing_the_files(fake, tmp_path, capsys):
    fake["card"] = card(treatment_cost=2.0)  # +100 % over the baseline arm, threshold 10 %
    assert scorecard_cmd.run(scorecard(tmp_path)) == 1
    out = capsys.readouterr().out
    assert "COST GATE FAILED" in out and "FAIL cost regression: s a/m: skill-agent $2.0000/run vs baseline $1.0000/run" in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["scorecard.html", "scorecard.json", "scorecard.md"]


def test_scorecard_report_only_is_the_informational_form(fake, tmp_path, capsys):
    fake["card"] = card(treatment_cost=2.0)
    assert scorecard_cmd.run(scorecard(tmp_path, "--report-only", "--json")) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["report_only"] is True and payload["cost_regression"]["passed"] is False


def test_scorecard_passing_gate_exits_0(fake, tmp_path, capsys):
    fake["card"] = card(treatment_cost=1.05)  # +5 %: within the threshold
    assert scorecard_cmd.run(scorecard(tmp_path)) == 0
    assert "cost gate ok" in capsys.readouterr().out


def test_lift_require_lift_prints_each_failure_and_exits_1(fake, capsys):
    fake["card"] = card(treatment_cost=1.0)  # 8 paired scenarios, 4 wins: sign test p = 0.125, NO_LIFT
    ns = argparse.Namespace(root=None, json=False, evidence=None, skill=None, require_lift=True)
    assert lift_cmd.run(ns) == 1
    assert "FAIL --require-lift: s a/m skill-agent vs baseline is NO_LIFT" in capsys.readouterr().out
    ns.require_lift = False  # the report: no check is printed as failed, exit 0
    assert lift_cmd.run(ns) == 0
    assert "FAIL" not in capsys.readouterr().out


def _fail_strings(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ("FAIL" in node.value):
            out.append(node.value)
    return out


def test_no_command_prints_fail_behind_an_opt_in_gate_flag():
    """A command that prints FAIL must be able to exit 1, and not only when the user opted into a gate
    flag (the old `scorecard --gate`): its source names an exit-1 path, and no `args.gate`-style test."""
    offenders = []
    for path in sorted(COMMANDS.glob("*.py")):
        src = path.read_text()
        tree = ast.parse(src)
        if not _fail_strings(tree):
            continue
        can_fail = "EXIT_CHECK_FAILED" in src or "return 1" in src or "CheckFailed" in src or " else 1" in src
        opt_in = "args.gate" in src
        if not can_fail or opt_in:
            offenders.append(path.name)
    assert offenders == []
