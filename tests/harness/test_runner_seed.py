"""The runner executes a fixture's seed.json before the agent and records its receipt (issue 9 item 1).

End to end with the model-free scripted adapter and the real subject: the recipe runs outside the
agent's control (seed.json itself never reaches the work tree), facts.json carries `case` and the
`seed` receipt, the oracle grades it, and a broken assertion — an action that now exits 1 —
fails `skill-eval grade` naming the case and the assertion.
"""

import json

from skill_eval.cli import main

SCRIPT = "agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml"
CASE = "review-removed-export"


def add_oracle(root, action: str) -> None:
    fx = root / "agent-evals/skills/fixtures/removed-export"
    (fx / "seed.json").write_text(json.dumps({"schema_version": 1, "commands": [
        ["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "seed"]]}))
    sc = root / "agent-evals/skills/scenarios.yaml"
    anchor = f"  - id: {CASE}\n"
    head, rest = sc.read_text().split(anchor, 1)
    extra = (f"    actions:\n      - [git, log, --oneline]\n      - {action}\n"
             "    oracle:\n"
             "      seeded-history: {predicate: command-exit-zero, action: 0, zero_tolerance: true}\n"
             "      check-passes: {predicate: command-exit-zero, action: 1}\n")
    sc.write_text(head + anchor + extra + rest)
    toml = root / "skill-eval.toml"  # `test` runs as an action only when configured (the registry's allow-list: git and the subject, plus [evals] action_commands)
    toml.write_text(toml.read_text().replace("\n[evals]\n", '\n[evals]\naction_commands = ["test"]\n', 1))
    assert main(["pack", "--root", str(root)]) == 0


def record(root, run_id):
    assert main(["run", "--root", str(root), CASE, "--agent", "scripted", "--model-server", f"scripted:{SCRIPT}",
                 "--no-trigger", "-k", "1", "--run-id", run_id]) == 0
    [meta] = (root / "agent-evals/skills/evidence/abi-compat-review/skill-agent" / run_id / CASE).glob("*/meta.json")
    return meta.parent


def test_seed_runs_before_the_agent_and_its_receipt_is_graded(repo_copy, capsys):
    add_oracle(repo_copy, "[test, -d, .git]")
    b = record(repo_copy, "s1")
    facts = json.loads((b / "facts.json").read_text())
    assert facts["case"] == CASE
    assert [c["argv"] for c in facts["seed"]["commands"]] == [["git", "init", "-q"], ["git", "add", "-A"],
                                                              ["git", "commit", "-qm", "seed"]]
    assert all(c["exit_code"] == 0 for c in facts["seed"]["commands"]) and facts["seed"]["files"] == {}
    assert facts["actions"][0]["exit_code"] == 0  # git log: the seed's commit exists
    changed = json.loads((b / "meta.json").read_text())["sandbox"]["changed"]
    assert "seed.json" not in changed
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), "--json", str(b)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["checks"]["receipt:facts"]["status"] == "pass" and out["checks"]["oracle"]["status"] == "pass"


def test_a_broken_assertion_fails_naming_case_and_assertion(repo_copy, capsys):
    add_oracle(repo_copy, "[test, -f, seed.json]")  # the recipe is the runner's: never in the work tree
    b = record(repo_copy, "s2")
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), str(b)]) == 1
    out = capsys.readouterr().out
    assert CASE in out and "check-passes" in out and "exited 1" in out


def test_a_failing_seed_command_is_an_infrastructure_error(tmp_path):
    """The recipe runs before the agent; a command that fails leaves no sandbox to run in."""
    import pytest
    from oracle_host import make_host

    from skill_eval.content import evals
    from skill_eval.content.inputs import InputRecorder
    from skill_eval.harness.runner.sandbox import Sandbox, SandboxError

    cfg = make_host(tmp_path)
    fx = cfg.evals_dir / "fixtures" / "notes-add-committed" / "seed.json"
    fx.write_text(json.dumps({"schema_version": 1, "commands": [["git", "init", "-q"], ["git", "checkout", "-q", "nope"]]}))
    [sc] = [s for s in evals.load_scenarios(cfg) if s.id == "notes-add-committed"]
    with pytest.raises(SandboxError, match=r"seed command 1 \['git', 'checkout', '-q', 'nope'\] exited 1"):
        Sandbox.for_scenario(tmp_path / "boxes", cfg, InputRecorder(cfg.root), sc, tmp_path / "no-tool")
    assert not any((tmp_path / "boxes").iterdir())  # the half-built sandbox is removed
