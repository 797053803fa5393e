"""Issue 9 item 2: the second example host (examples/towncrier-notes) is green on its own, and its
command oracles are real gates.

- its `pr` passes on an untouched copy (what `nox -s pr-example` / `make pr` runs in CI);
- an oracle assertion whose action now exits 1 fails `pr`, naming the case and the assertion.
  Honestly: the facts are the runner's, so the scenario is changed and that case is re-recorded
  through the runner (model-free `scripted` adapter replaying the same careful script); the
  committed bundles of the case are stale after the edit and are retired, as a maintainer would;
- a changed decoy byte in a fixture is a registry problem naming the seed file;
- the committed fixtures are exactly what scripts/make_fixtures.py writes.

The example needs the real towncrier (the `test` extra pins it).
"""

from __future__ import annotations

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

pytestmark = pytest.mark.skipif(shutil.which("towncrier") is None and not (Path(sys.executable).parent / "towncrier").exists(),
                                reason="towncrier (the example's subject) is not installed: pip install -e '.[test]'")


@pytest.fixture
def example(tmp_path: Path) -> Path:
    dest = tmp_path / "towncrier-notes"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
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


def test_action_that_now_exits_1_fails_naming_case_and_assertion(example: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # The CI check without --staged cannot see a fragment that is staged but not committed:
    # towncrier exits 1 ("No new newsfragments found on this branch").
    scenarios = example / "agent-evals/skills/scenarios.yaml"
    text = scenarios.read_text(encoding="utf-8")
    old = "      - [towncrier, check, --compare-with, main, --staged]\n      - [towncrier, build, --draft, --version, 1.5.0"
    assert text.count(old) == 1
    scenarios.write_text(text.replace(old, old.replace(", --staged]", "]")), encoding="utf-8")
    for bundle_root in (example / "agent-evals/skills/evidence/add-changelog-fragment/skill-agent").glob(f"*/{CASE}"):
        shutil.rmtree(bundle_root)  # stale after the edit: retired, then re-recorded below
    script = "scripted:agent-evals/skills/model-scripts/careful"
    rc = main(["run", "--root", str(example), CASE, "--agent", "scripted", "--model-server", script,
               "--run-id", "claude-code-scripted", "--no-trigger"])
    capsys.readouterr()
    assert rc == 0
    rc, out = run_pr(example, capsys)
    assert rc == 1, out
    failing = [line for line in out.splitlines() if CASE in line and ASSERTION in line]
    assert failing, out
    assert any("exited 1" in line for line in failing), failing


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
