"""The shipped required check .github/workflows/trust-gate.yml (issue 34 item 10): the base's skill-eval
over the pull request's tree as data. These assertions are the properties that make it so; a workflow
edited to run anything of the pull request's (its noxfile, Makefile, pip-installing its tree, its
skill-eval on the import path) fails them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "trust-gate.yml"


def load() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.pop(True)  # YAML 1.1 reads the `on:` key as True
    return doc


def test_it_runs_the_base_workflow_with_no_write_and_no_secret():
    doc = load()
    assert set(doc["on"]) == {"pull_request_target"}  # the file as it is on the base branch
    assert doc["permissions"] == {"contents": "read"}
    assert "secrets." not in WORKFLOW.read_text()


def test_the_checker_comes_from_the_base_and_the_pull_request_is_data():
    steps = load()["jobs"]["trust-gate"]["steps"]
    checkouts = [s for s in steps if str(s.get("uses", "")).startswith("actions/checkout@")]
    gate, pr = checkouts
    assert gate["with"]["ref"] == "${{ github.event.pull_request.base.sha }}" and gate["with"]["path"] == "gate"
    assert pr["with"]["ref"] == "${{ github.event.pull_request.head.sha }}" and pr["with"]["path"] == "pr"
    assert all(c["with"]["persist-credentials"] is False for c in checkouts)
    runs = [s["run"] for s in steps if "run" in s]
    installs = [r for r in runs if "pip install" in r]
    assert installs == ['python -m pip install "./gate[subject,example]"']
    for r in runs:  # nothing of the pull request's runs: no make/nox/pre-commit/script, no install of pr/
        assert not re.search(r"\b(make|nox|pre-commit|bash pr/|sh pr/|\./pr/|pip install[^\n]*pr)\b", r), r
        assert "${{" not in r  # expressions reach the shell only through env:
    gate_step = next(s for s in steps if "skill_eval pr" in s.get("run", ""))
    assert gate_step["run"].startswith("python -I -m skill_eval pr --root ")  # -I: no cwd / PYTHONPATH on sys.path
    assert gate_step["working-directory"] == "${{ runner.temp }}"


def test_the_base_branch_is_fetched_for_the_trust_policy():
    steps = load()["jobs"]["trust-gate"]["steps"]
    fetch = next(s for s in steps if "fetch" in s.get("run", ""))
    assert 'refs/remotes/origin/$BASE_REF' in fetch["run"] and fetch["env"]["BASE_REF"] == "${{ github.base_ref }}"
