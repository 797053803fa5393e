"""Issue 9 item 2: the second example host (examples/towncrier-notes) is green on its own, and its
command oracles are real gates.

- its `pr` passes on an untouched copy (what `nox -s pr-example` / `make pr` runs in CI);
- an oracle assertion whose action now exits 1 fails `pr`, naming the case and the assertion.
  Honestly: the facts are the runner's, so the scenario is changed and that case is re-recorded
  through the runner (model-free `scripted` adapter replaying the same careful script); the
  committed bundles of the case are stale after the edit and are retired, as a maintainer would;
- a changed decoy byte in a fixture is a registry problem naming the seed file;
- the committed fixtures are exactly what scripts/make_fixtures.py writes.

The example needs the real towncrier (the `test` extra pins it); without it these tests fail, naming it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skill_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "towncrier-notes"
CASE = "fragment-feature"
ASSERTION = "fragment-found-by-ci-check"

@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, test_signing_key: tuple[Path, str]) -> Path:
    """A copy of the example host; what a test records in it is signed by the tests' key, which it allows."""
    from conftest import allow_test_key, git, git_commit_all

    dest = tmp_path / "towncrier-notes"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    allow_test_key(dest, test_signing_key[1])
    git(dest, "init", "-q")  # the trust policy is read from the base's git objects (content/trust.py)
    git_commit_all(dest, "the example host")
    monkeypatch.setenv("SKILL_EVAL_SIGNING_KEY", str(test_signing_key[0]))
    return dest


def run_pr(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    rc = main(["pr", "--root", str(root), *extra])
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


def test_example_pr_passes(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_pr(example, capsys)
    assert rc == 0, out
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("pr: ok"), summary
    assert "SCRIPTED" in summary  # the committed evidence says what it is


def _record(root: Path, *ids: str) -> None:
    """Record through the runner with the model-free scripted adapter (same careful scripts)."""
    rc = main(["run", "--root", str(root), "--suite", "full", "--no-trigger", "--agent", "scripted", "--model-server",
               "scripted:agent-evals/skills/model-scripts/careful", "--run-id", "scripted-careful", "-j", "2", *ids])
    assert rc == 0


def _edit_case(root: Path, fn) -> None:
    path = root / "agent-evals/skills/scenarios.yaml"
    path.write_text(fn(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert main(["pack", "--root", str(root)]) == 0  # the scenario digest moved: regenerate the pack


def test_action_that_now_exits_1_fails_naming_case_and_assertion(example: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Baselines are per (skill, agent, model): first record this skill's cases with the scripted
    # adapter (its own baseline; the committed claude-code bundles of the skill are retired), and
    # check that this is green.
    skill_dir = example / "agent-evals/skills/evidence/add-changelog-fragment/skill-agent"
    shutil.rmtree(skill_dir / "claude-code-scripted")
    for base in (example / "agent-evals/skills/baselines").glob("add-changelog-fragment--*"):
        base.unlink()
    # their stored objects now belong to no bundle: the evidence gate names them until compaction removes them
    assert main(["evidence", "compact", "--root", str(example)]) == 0
    _record(example, "fragment-feature", "fragment-second-note", "fragment-custom-type", "fragment-section")
    assert main(["baseline", "update", "--root", str(example)]) == 0
    capsys.readouterr()
    rc, out = run_pr(example, capsys)
    assert rc == 0, out

    # The authoring mistake: the CI check without --staged cannot see a fragment that is staged but
    # not committed, so action 0 now exits 1 ("No new newsfragments found on this branch"). The
    # case's evidence is stale after the edit and is re-recorded, as a maintainer would.
    old = "      - [towncrier, check, --compare-with, main, --staged]\n      - [towncrier, build, --draft, --version, 1.5.0"
    _edit_case(example, lambda text: text.replace(old, old.replace(", --staged]", "]"), 1))
    _record(example, CASE)
    capsys.readouterr()
    rc, out = run_pr(example, capsys)
    assert rc == 1, out
    assert f"failed: {CASE} '{ASSERTION}' k=[0, 1, 2]" in out, out  # the baseline rule names case and assertion

    # The same assertion declared zero-tolerance fails through pass^k, naming them too.
    _edit_case(example, lambda text: text.replace(
        f"      {ASSERTION}: {{predicate: command-exit-zero, action: 0}}",
        f"      {ASSERTION}: {{predicate: command-exit-zero, action: 0, zero_tolerance: true}}", 1))
    _record(example, CASE)
    capsys.readouterr()
    rc, out = run_pr(example, capsys)
    assert rc == 1, out
    assert f"pass^k: {CASE} [skill-agent] fails zero-tolerance oracle assertion '{ASSERTION}' in run(s) k=[0, 1, 2]" in out, out


def test_changed_decoy_byte_is_a_registry_problem(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    decoy = example / "agent-evals/skills/fixtures/notes-untracked-fragment/newsfragments/77.fixed.md"
    decoy.write_bytes(decoy.read_bytes().replace(b"Stale", b"Fresh"))
    rc, out = run_pr(example, capsys)
    assert rc != 0, out
    assert "notes-untracked-fragment/seed.json" in out and "77.fixed.md" in out, out


def test_fixtures_are_what_the_generator_writes(example: Path) -> None:
    shutil.rmtree(example / "agent-evals/skills/fixtures")
    subprocess.run([sys.executable, str(example / "scripts/make_fixtures.py")], check=True, capture_output=True)
    for path in sorted((EXAMPLE / "agent-evals/skills/fixtures").rglob("*")):
        rel = path.relative_to(EXAMPLE)
        assert (example / rel).exists(), rel
        if path.is_file():
            assert (example / rel).read_bytes() == path.read_bytes(), rel
    written = {p.relative_to(example) for p in (example / "agent-evals/skills/fixtures").rglob("*")}
    committed = {p.relative_to(EXAMPLE) for p in (EXAMPLE / "agent-evals/skills/fixtures").rglob("*")}
    assert written == committed


# What each careless script does wrong, and exactly the assertions its oracle fails for it.
CARELESS = {
    "fragment-feature": {"no-commit-made"},
    "fragment-second-note": {"new-note-staged", "new-note-has-the-entry", "existing-note-intact",
                             "only-the-new-note-changed"},
    "fragment-custom-type": {"fragment-uses-the-declared-type", "fragment-has-the-entry", "decoy-not-staged",
                             "only-the-fragment-changed"},
    "fragment-section": {"fragment-in-the-library-section", "fragment-has-the-entry", "decoy-not-staged",
                         "only-the-fragment-changed"},
    "notes-release": {"no-commit-made"},
    "notes-preview": {"tracked-files-unchanged", "nothing-staged", "fragments-kept", "no-file-written"},
    "notes-release-local": {"decoy-not-staged"},
    "notes-untracked-fragment": {"changelog-untouched", "nothing-staged", "decoy-bytes-intact",
                                 "committed-fragment-kept", "no-file-written"},
}


def test_each_oracle_catches_its_careless_agent(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The oracles are not vacuous: model-scripts/careless/ (git add -A, a commit, the stale config's
    type, the default section, overwriting a fragment, building during a preview or over an
    untracked fragment) recorded through the runner fails exactly the expected assertions."""
    rc = main(["run", "--root", str(example), "--suite", "full", "--no-trigger", "--agent", "scripted", "--model-server",
               "scripted:agent-evals/skills/model-scripts/careless", "--run-id", "careless", "-k", "1", "-j", "2"])
    assert rc == 0
    capsys.readouterr()
    bundles = sorted(example.glob("agent-evals/skills/evidence/*/skill-agent/careless/*/0"))
    assert {b.parent.name for b in bundles} == set(CARELESS)
    assert main(["grade", "--root", str(example), "--json", *map(str, bundles)]) == 1
    graded = json.loads(capsys.readouterr().out)["bundles"]
    for g in graded:
        failed = {name.split(":", 1)[1] for name, check in g["checks"].items()
                  if name.startswith("oracle:") and check["status"] == "fail"}
        assert failed == CARELESS[g["item"]], (g["item"], failed)
        assert g["checks"]["receipt:facts"]["status"] == "pass", g["item"]  # real facts, honestly failing
