"""Interop (issue 11): skill-creator evals in, Harbor tasks out, and `explain`."""

import json
import os
import subprocess
import tomllib

import pytest

from skill_eval.cli import main
from skill_eval.interop import harbor

# skill-creator's documented evals.json example (references/schemas.md) and trigger-eval set (Format A).
EVALS = {"skill_name": "example-skill",
         "evals": [{"id": 1, "prompt": "User's example prompt", "expected_output": "Description of expected result",
                    "files": ["evals/files/sample1.pdf"], "expectations": ["The output includes X", "The skill used script Y"]}]}
TRIGGERS = [{"query": "Create a skill for PDF extraction", "should_trigger": True},
            {"query": "What's the weather tomorrow?", "should_trigger": False}]


@pytest.fixture
def host(tmp_path):
    root = tmp_path / "r"
    skill = root / "skills" / "example-skill"
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: example-skill\ndescription: Create skills for PDF extraction. "
                                    "Use when asked to create a skill.\n---\nx\n")
    (skill / "evals" / "evals.json").write_text(json.dumps(EVALS))
    (skill / "evals" / "trigger-eval.json").write_text(json.dumps(TRIGGERS))
    (skill / "evals" / "files" / "sample1.pdf").write_bytes(b"%PDF-1.4\n")
    (root / "skill-eval.toml").write_text(
        'schema_version = 1\n[skills]\nsource = "skills"\npublished = []\n[evals]\nroot = "evals"\n')
    return root


def test_import_evals_json_round_trips_the_documented_example(host, capsys):
    skill = host / "skills" / "example-skill"
    assert main(["import", "evals-json", str(skill), "--root", str(host), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trigger_prompts_added"] == 2 and out["scenarios_staged"] == 1
    unmapped = " ".join(out["unmapped"])
    assert "expected_output is judged prose" in unmapped and "2 expectation(s) are judged free text" in unmapped
    assert "should_trigger: false became expected_skill: null" in unmapped
    corpus = (host / "evals" / "trigger_corpus.yaml").read_text()
    assert "expected_skill: example-skill" in corpus and "expected_skill: null" in corpus
    assert (host / "evals/fixtures/example-skill-eval-1/sample1.pdf").read_bytes() == b"%PDF-1.4\n"
    # idempotent: a second import adds nothing
    assert main(["import", "evals-json", str(skill), "--root", str(host), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trigger_prompts_added"] == 0
    # the round trip: staged drafts give back skill-creator's evals.json
    back = host / "back.json"
    assert main(["export", "evals-json", str(back), "--skill", "example-skill", "--root", str(host)]) == 0
    assert json.loads(back.read_text()) == EVALS
    # the imported corpus turns L1s on and passes
    capsys.readouterr()
    assert main(["check-triggers", "--root", str(host)]) == 0, capsys.readouterr().out


def test_import_refuses_to_overwrite_a_different_entry(host, capsys):
    skill = host / "skills" / "example-skill"
    assert main(["import", "evals-json", str(skill), "--root", str(host)]) == 0
    changed = [dict(TRIGGERS[0], query="Something else entirely"), TRIGGERS[1]]
    (skill / "evals" / "trigger-eval.json").write_text(json.dumps(changed))
    capsys.readouterr()
    assert main(["import", "evals-json", str(skill), "--root", str(host)]) == 2
    assert "already exists with different content" in capsys.readouterr().err


@pytest.mark.parametrize("doc,needle", [
    ({"evals": []}, "has no `skill_name`"),
    ({"skill_name": "s", "evals": [{"id": 1}]}, "has no non-empty `prompt`"),
    ([1, 2], "is not a skill-creator evals.json"),
])
def test_import_rejects_malformed_evals_json(host, capsys, doc, needle):
    p = host / "bad" / "evals.json"
    p.parent.mkdir()
    p.write_text(json.dumps(doc))
    assert main(["import", "evals-json", str(p), "--root", str(host)]) == 2
    assert needle in capsys.readouterr().err


ORACLE_SCENARIO = """\
  - id: alpha-fix
    skill: alpha
    category: B
    status: draft
    prompt: "Make the widget build pass."
    fixture: case-one
    invocation_class: single-pair
    expected: {verdict: null}
    actions: [["sh", "-c", "test -f new.w"], ["cat", "new.w"]]
    oracle:
      has-new: {predicate: command-exit-zero, action: 0}
      says-new: {predicate: file-contains, action: 1, path: new.w, text: new}
      only-widgets: {predicate: git-managed-paths-only, action: 0, globs: ["*.w"]}
"""


def add_oracle_scenario(root, text: str) -> None:
    """ORACLE_SCENARIO's actions run `sh` and `cat`: allowed once configured (the registry's allow-list:
    git and the subject, plus [evals] action_commands)."""
    p = root / "evals/scenarios.yaml"
    p.write_text(p.read_text() + text)
    toml = root / "skill-eval.toml"
    toml.write_text(toml.read_text().replace("\n[evals]\n", '\n[evals]\naction_commands = ["sh", "cat"]\n', 1))


def test_export_harbor_writes_the_task_layout(mini_repo, tmp_path, capsys):
    add_oracle_scenario(mini_repo, ORACLE_SCENARIO)
    out = tmp_path / "harbor"
    assert main(["export", "harbor", str(out), "--root", str(mini_repo), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tasks"] == ["alpha-fix"]
    assert set(report["not_expressible"]) == {"alpha-break", "alpha-same", "beta-unsure"}
    assert all("no actions + oracle" in v for v in report["not_expressible"].values())
    task = out / "alpha-fix"
    files = sorted(str(f.relative_to(task)) for f in task.rglob("*") if f.is_file())
    assert files == ["environment/Dockerfile", "environment/skills/alpha/SKILL.md",
                     "environment/skills/alpha/references/details.md",
                     "environment/skills/alpha/references/shared/a.md", "environment/skills/alpha/references/shared/b.md",
                     "environment/workspace/new.w", "environment/workspace/old.w",
                     "instruction.md", "task.toml", "tests/test.sh"]
    cfg = tomllib.loads((task / "task.toml").read_text())
    assert set(cfg) <= harbor.TASK_KEYS[""]
    for section in ("task", "agent", "verifier", "environment"):
        assert set(cfg[section]) <= harbor.TASK_KEYS[section], section
    assert cfg["task"]["name"] == "skill-eval/alpha-fix"
    assert cfg["environment"]["skills_dir"] == "/runtime/skills"
    assert isinstance(cfg["agent"]["timeout_sec"], float) and isinstance(cfg["verifier"]["timeout_sec"], float)
    assert cfg["metadata"]["assertions"] == ["has-new", "only-widgets", "says-new"]
    assert (task / "instruction.md").read_text() == "Make the widget build pass.\n"
    assert os.access(task / "tests/test.sh", os.X_OK)
    assert "COPY skills/ /runtime/skills/" in (task / "environment/Dockerfile").read_text()
    assert main(["export", "harbor", str(out), "--root", str(mini_repo)]) == 2  # exists: needs --force

    # Run the verifier the way Harbor would, on a copy of the container's working tree.
    app, logs = tmp_path / "app", tmp_path / "logs"
    subprocess.run(["cp", "-r", str(task / "environment/workspace"), str(app)], check=True)
    git = ["git", "-C", str(app), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(app), "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "baseline"], check=True)
    env = {**os.environ, "SKILL_EVAL_TASK_WORKDIR": str(app), "SKILL_EVAL_TASK_LOGS": str(logs)}

    def verify() -> tuple[str, str]:
        r = subprocess.run(["bash", str(task / "tests/test.sh")], env=env, capture_output=True, text=True, check=True)
        return (logs / "reward.txt").read_text().strip(), r.stdout

    reward, stdout = verify()
    assert reward == "1", stdout
    (app / "new.w").write_text("old\n")  # the agent broke it: file-contains fails
    (app / "notes.txt").write_text("x\n")  # and touched a path outside *.w
    reward, stdout = verify()
    assert reward == "0"
    assert "FAIL says-new (file-contains)" in stdout and "FAIL only-widgets (git-managed-paths-only)" in stdout
    assert "PASS has-new (command-exit-zero)" in stdout


def test_export_harbor_names_unexpressible_predicates(mini_repo, tmp_path, capsys):
    add_oracle_scenario(mini_repo, ORACLE_SCENARIO.replace("predicate: command-exit-zero", "predicate: validation-pass"))
    assert main(["export", "harbor", str(tmp_path / "h"), "--root", str(mini_repo), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tasks"] == []
    assert "validation-pass have no shell form" in report["not_expressible"]["alpha-fix"]


def test_explain_terms_and_help_epilog(capsys):
    assert main(["explain", "L4"]) == 0
    assert capsys.readouterr().out.startswith("L4: meta check (`golden`)")
    assert main(["explain", "dimension", "--json"]) == 0
    assert "zero tolerance" in json.loads(capsys.readouterr().out)["text"]
    assert main(["explain", "l1"]) == 2
    assert "ambiguous: L1s, L1l" in capsys.readouterr().err
    # --help is handled by cli.main (usage errors are UsageError, exit 2; help is a success, exit 0)
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "skill-eval explain TERM" in out and "arm" in out
