"""`skill-eval propose` end to end, with the scripted agent in the real sandbox (bubblewrap where it works).

The acceptance path of the release contract's step 5: a trigger-corpus case fails `check-triggers`
because the beta skill's description lacks what users type; `propose --from-check triggers` runs the
scripted agent on a copy of the skill sources; the patch touches only skills-src/; `git apply` of it
from the repository root, then `check-triggers`, turns the failing cases green. The adversarial
scripts (a fixture and the scenarios written, a symlink planted) are refused with nothing written.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git, git_commit_all, write

from skill_eval.cli import main
from skill_eval.core import schemas
from skill_eval.harness.runner import isolation

DATA = Path(__file__).resolve().parents[1] / "data" / "propose"
FAILING = ("p-beta-depends", "p-beta-upgrade")


@pytest.fixture
def failing_repo(mini_repo: Path) -> Path:
    """mini_repo whose trigger corpus asks for beta in words its description lacks: L1s fails."""
    write(mini_repo, "evals/trigger_corpus.yaml", """\
        schema_version: 1
        prompts:
          - {id: p-alpha, prompt: "did the widget library build break widgets?", expected_skill: alpha}
          - {id: p-beta, prompt: "which gadget consumers are affected?", expected_skill: beta}
          - {id: p-beta-depends, prompt: "who depends on this package?", expected_skill: beta}
          - {id: p-beta-upgrade, prompt: "which downstream dependents could my upgrade hurt?", expected_skill: beta}
          - {id: n-sql, prompt: "write a SQL migration for the orders table", expected_skill: null}
        """)
    git_commit_all(mini_repo, "corpus")
    return mini_repo


def _propose(root: Path, out: Path, script: str | Path, *extra: str) -> int:
    return main(["propose", "--root", str(root), "--json", "--agent", "scripted", "--timeout", "120",
                 "--model-server", f"scripted:{DATA / script}", "--out", str(out), *extra])


def _json(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out)


def _status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


def test_propose_then_git_apply_turns_the_failing_trigger_cases_green(failing_repo, tmp_path, capsys):
    root, out = failing_repo, tmp_path / "proposal"
    assert main(["check-triggers", "--root", str(root), "--json"]) == 1
    before = _json(capsys)
    assert {c["prompt"] for c in before["metrics"]["confusions"]} == set(FAILING)

    rc = _propose(root, out, "widen-description.yaml", "--from-check", "triggers")
    result = _json(capsys)
    assert rc == 0, result
    assert _status(root) == ""  # propose never writes the working tree
    assert [c["path"] for c in result["patch"]["changes"]] == ["skills-src/beta/SKILL.md"]
    assert [c["id"] for c in result["cases"]] == list(FAILING)
    assert result["agent"]["adapter"] == "scripted" and result["agent"]["stop_reason"] == "completed"
    assert result["agent"]["model"].startswith("scripted:")
    assert result["agent"]["isolation"] == isolation.level()  # the sandbox `run` uses (bwrap where it works)
    record = json.loads((out / "proposal.json").read_text())
    schemas.validate(record, "proposal", "proposal.json")
    text = (out / "proposal.patch").read_text()
    assert record["patch"]["changes"] == result["patch"]["changes"] and record["cases"] == result["cases"]
    assert all(line[6:].startswith("skills-src/") for line in text.splitlines() if line.startswith(("--- ", "+++ ")))
    assert "+description: " in text and "who depends on a package" in text

    subprocess.run(["git", "-C", str(root), "apply", "--check", str(out / "proposal.patch")], check=True)
    subprocess.run(["git", "apply", str(out / "proposal.patch")], cwd=root, check=True)  # from the repository root
    assert _status(root) == " M skills-src/beta/SKILL.md\n"
    assert main(["check-triggers", "--root", str(root), "--json"]) == 0
    after = _json(capsys)
    assert after["ok"] and after["metrics"]["confusions"] == []


def test_nothing_to_propose_when_the_check_passes(mini_repo, tmp_path, capsys):
    rc = _propose(mini_repo, tmp_path / "out", "widen-description.yaml", "--from-check", "triggers")
    result = _json(capsys)
    assert rc == 0 and result["proposal"] is None and result["cases"] == []
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("script,needle", [
    ("edit-fixture.yaml", "adds evals/fixtures/case-one/old.w, outside the skill sources"),
    ("plant-symlink.yaml", "holds a symlink, skills-src/beta/references.md"),
])
def test_a_proposal_touching_more_than_skill_sources_is_refused(failing_repo, tmp_path, capsys, script, needle):
    out = tmp_path / "out"
    rc = _propose(failing_repo, out, script, "--case", "p-beta-depends")
    error = _json(capsys)["error"]
    assert rc == 1, error["message"]
    assert needle in error["message"] and error["fix"]
    assert not out.exists()  # no patch, no sidecar
    assert _status(failing_repo) == ""
    assert (failing_repo / "evals/fixtures/case-one/old.w").read_text() == "old\n"


@pytest.mark.skipif(isolation.available() != "bwrap", reason="the repository is hidden from the agent by bubblewrap")
def test_the_agent_sees_the_skill_sources_only(failing_repo, tmp_path, capsys):
    """The copy holds the skill sources and nothing else: the repository's ground truth and scenarios
    are neither in the copy nor reachable at their host paths."""
    script = tmp_path / "peek.yaml"
    truth = failing_repo / "evals" / "ground_truth.json"
    script.write_text(json.dumps({"schema_version": 1, "turns": [
        {"tools": [{"shell": f"(ls -a; cat /run/skill-eval/agent/propose/cases.json; ls evals; cat {truth})"
                             " > skills-src/beta/seen.md 2>&1; true"}]},
        {"final": "looked around"}]}))
    rc = _propose(failing_repo, tmp_path / "out", script, "--case", "p-beta-depends")
    result = _json(capsys)
    assert rc == 0, result
    seen = (tmp_path / "out" / "proposal.patch").read_text()
    assert "+++ b/skills-src/beta/seen.md" in seen and "+skills-src" in seen
    assert "BROKEN" not in seen and "expected_exit" not in seen and "No such file" in seen
    assert "p-beta-depends" in seen, seen  # the read-only context file the prompt names


def _script(tmp_path: Path, *turns: dict) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"schema_version": 1, "turns": list(turns)}))
    return path


@pytest.mark.parametrize("turns,needle", [
    ([{"tools": [{"shell": "cat skills-src/beta/SKILL.md"}]}, {"final": "looks fine to me"}],
     "the agent changed no skill source"),
    ([{"tools": [{"shell": "sed -i 's/gadget/widget/' skills-src/beta/SKILL.md"}], "delay": 30}, {"final": "done"}],
     "did not complete (timeout"),
])
def test_no_patch_is_exit_1(failing_repo, tmp_path, capsys, turns, needle):
    rc = _propose(failing_repo, tmp_path / "out", _script(tmp_path, *turns), "--case", "p-beta-depends", "--timeout", "3")
    error = _json(capsys)["error"]
    assert rc == 1 and needle in error["message"] and error["fix"]
    assert not (tmp_path / "out").exists() and _status(failing_repo) == ""


def test_a_credential_written_into_a_skill_is_refused(failing_repo, tmp_path, capsys, monkeypatch):
    key = "sk-ant-api03-propose-test-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    script = _script(tmp_path, {"tools": [{"shell": f"echo 'key: {key}' >> skills-src/beta/SKILL.md"}]}, {"final": "x"})
    rc = _propose(failing_repo, tmp_path / "out", script, "--case", "p-beta-depends")
    error = _json(capsys)["error"]
    assert rc == 1 and "wrote a credential into skills-src/beta/SKILL.md" in error["message"]
    assert key not in json.dumps(error)


def test_out_inside_the_skill_sources_is_a_config_error(failing_repo, capsys):
    rc = _propose(failing_repo, failing_repo / "skills-src" / "beta", "widen-description.yaml", "--case", "p-beta-depends")
    error = _json(capsys)["error"]
    assert rc == 2 and "--out" in error["message"] and "skills-src" in error["message"]


@pytest.mark.parametrize("argv,needle,code", [
    ([], "name the failing cases", 2),
    (["--case", "no-such-case"], "neither a trigger prompt id nor a scenario id", 2),
    (["--case", "p-beta-depends", "--model-server", "http://x"], "only scripted:FILE", 2),
    (["--from-check", "nope"], "invalid choice", 2),
])
def test_usage_errors_are_one_line_with_a_fix(failing_repo, capsys, argv, needle, code):
    rc = main(["propose", "--root", str(failing_repo), "--json", "--agent", "scripted", *argv])
    error = _json(capsys)["error"]
    assert rc == code and needle in error["message"] and error["fix"]


def test_a_holdout_scenario_is_never_proposed_on(failing_repo, capsys):
    path = failing_repo / "evals/scenarios.yaml"
    path.write_text(path.read_text().replace('prompt: "same?", fixture: case-two,',
                                             'prompt: "same?", holdout: true, fixture: case-two,'))
    rc = main(["propose", "--root", str(failing_repo), "--json", "--agent", "scripted", "--case", "alpha-same"])
    error = _json(capsys)["error"]
    assert rc == 2 and "holdout" in error["message"]


def test_help_explains_the_flow(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["propose", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for step in ("propose", "review", "git apply", "re-run", "untouched final case set"):
        assert step in text


@pytest.mark.e2e
@pytest.mark.parametrize("adapter", ["claude-code", "codex", "gemini-cli"])
def test_propose_through_a_real_agent_cli_with_scripted_turns(failing_repo, tmp_path, capsys, adapter):
    """The same proposal through a pinned agent CLI (scripted model server, credential proxy, bwrap):
    the CLI's own state stays in its HOME, so the copy changes in the skill sources only."""
    from test_e2e_clis import _binary  # skips when the pinned CLIs are not installed

    binary = _binary(adapter)
    out = tmp_path / "out"
    rc = main(["propose", "--root", str(failing_repo), "--json", "--agent", adapter, "--agent-binary", str(binary),
               "--model-server", f"scripted:{DATA / 'widen-description.yaml'}", "--from-check", "triggers",
               "--out", str(out), "--timeout", "240"])
    result = _json(capsys)
    assert rc == 0, result
    assert result["agent"]["adapter"] == adapter and result["agent"]["stop_reason"] == "completed"
    assert [c["path"] for c in result["patch"]["changes"]] == ["skills-src/beta/SKILL.md"]
    subprocess.run(["git", "apply", str(out / "proposal.patch")], cwd=failing_repo, check=True)
    assert main(["check-triggers", "--root", str(failing_repo)]) == 0
