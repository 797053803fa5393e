"""`export harbor` (issue 26 item 4): tasks loaded by the real harbor package, verifiers run for real.

The exported tasks of both hosts are loaded and linted by harbor's own Task model and task linter,
and the job directory the import reads is written by harbor's own pydantic models, both in a
Python >= 3.12 venv with harbor pinned (tests/interop/harbor_side.py; .ci/run and `nox -s harbor`
install it). The verifiers are run for real on work trees built by replaying each task's
Dockerfile seed lines: no container runtime is needed, and none is used.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.interop import harbor

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "towncrier-notes"
SIDE = Path(__file__).with_name("harbor_side.py")
# The harbor venv: SKILL_EVAL_HARBOR_PYTHON, else the one .ci/run makes (.cache/harbor-venv).
HARBOR_PY = Path(os.environ.get("SKILL_EVAL_HARBOR_PYTHON") or REPO / ".cache" / "harbor-venv" / "bin" / "python")
needs_harbor = pytest.mark.skipif(not HARBOR_PY.exists(), reason=f"no harbor interpreter at {HARBOR_PY} "
                                  "(.ci/run creates it: Python 3.12 venv + harbor pinned)")
TOOLS = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])  # towncrier of this venv

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


def _mini_host(root: Path, oracle: str = ORACLE_SCENARIO) -> Path:
    """mini_repo with an oracle scenario (its actions allowed) and a pinned subject package."""
    p = root / "evals/scenarios.yaml"
    p.write_text(p.read_text() + oracle)
    toml = root / "skill-eval.toml"
    text = toml.read_text().replace("\n[evals]\n", '\n[evals]\naction_commands = ["sh", "cat"]\n', 1)
    toml.write_text(text.replace('[subject]\nname = "tool"\n', '[subject]\nname = "tool"\npackage = "tool"\nversion = "1.0"\n', 1))
    return root


def export(root: Path, out: Path, capsys, *extra: str) -> dict:
    assert main(["export", "harbor", str(out), "--root", str(root), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def container(task: Path, app: Path) -> None:
    """The task image's /app, built the way its Dockerfile does: the workspace copied, then every seed
    RUN line (and the HEAD check after them) executed as written."""
    shutil.copytree(task / "environment" / "workspace", app, symlinks=True)
    for line in (task / "environment" / "Dockerfile").read_text().splitlines():
        if line.startswith("RUN env ") or line.startswith('RUN test "$(git rev-parse'):
            subprocess.run(["bash", "-c", line[4:]], cwd=app, check=True, capture_output=True)


def verify(task: Path, app: Path, logs: Path) -> tuple[dict, str]:
    env = {**os.environ, "PATH": TOOLS, "SKILL_EVAL_TASK_WORKDIR": str(app), "SKILL_EVAL_TASK_LOGS": str(logs)}
    r = subprocess.run(["bash", str(task / "tests/test.sh")], env=env, capture_output=True, text=True, check=True)
    return json.loads((logs / "reward.json").read_text()), r.stdout


def git(app: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(app), "-c", "user.name=a", "-c", "user.email=a@a", *args], check=True,
                   capture_output=True)


def test_export_counts_and_reasons_on_both_hosts(tmp_path, capsys):
    here = export(REPO, tmp_path / "dogfood", capsys)
    probes = {"review-no-change", "review-compatible-addition", "matrix-complete-evidence-free",
              "matrix-complete-suppression", "consumer-addition-evidence-free", "consumer-plugin-suppression"}
    assert set(here["not_expressible"]) == probes
    assert all(v.startswith("probe scenario") and "recorded calls" in v for v in here["not_expressible"].values())
    assert len(here["tasks"]) == 13 and "review-not-comparable" in here["tasks"]
    example = export(EXAMPLE, tmp_path / "example", capsys)
    assert example["not_expressible"] == {} and len(example["tasks"]) == 8
    assert here["harbor_version"] == harbor.HARBOR_VERSION

    task = tmp_path / "example" / "fragment-custom-type"
    spec = json.loads((task / "tests/spec.json").read_text())
    docker = (task / "environment/Dockerfile").read_text()
    assert "RUN pip install --no-cache-dir towncrier==26.9.0" in docker
    assert f'RUN test "$(git rev-parse --verify HEAD)" = {spec["seed_head"]}' in docker
    assert not (task / "environment/workspace/seed.json").exists()  # the recipe is the image's, not the agent's
    assert "newsfragments/+scratch.fixed.md" in spec["baseline"]  # the decoy is part of what the agent receives
    claim = json.loads((tmp_path / "dogfood/review-not-comparable/tests/spec.json").read_text())["claim"]
    assert (claim["verdict"], claim["confident"], claim["uncertainty_kind"]) == (None, False, "not_comparable")
    consumer = json.loads((tmp_path / "dogfood/consumer-unaffected/tests/spec.json").read_text())["claim"]
    assert (consumer["verdict"], consumer["consumer_verdict"]) == ("BREAKING", "COMPATIBLE")
    instruction = (tmp_path / "dogfood/review-removed-export/instruction.md").read_text()
    assert "skill-eval-claim" in instruction and "/app/skill-eval-claim.json" in instruction
    assert main(["export", "harbor", str(tmp_path / "example"), "--root", str(EXAMPLE)]) == 2  # exists: needs --force


@needs_harbor
def test_every_exported_task_loads_with_harbor(tmp_path, capsys):
    v = subprocess.run([str(HARBOR_PY), str(SIDE), "version"], capture_output=True, text=True, check=True)
    assert v.stdout.strip() == harbor.HARBOR_VERSION, "the harbor venv is not the pinned release"
    export(REPO, tmp_path / "a", capsys)
    export(EXAMPLE, tmp_path / "b", capsys)
    dirs = sorted(str(d) for d in [*(tmp_path / "a").iterdir(), *(tmp_path / "b").iterdir()])
    assert len(dirs) == 21
    bogus = tmp_path / "bogus"  # the ignored-key check can fail: a key harbor's TaskConfig does not declare
    shutil.copytree(dirs[0], bogus)
    (bogus / "task.toml").write_text((bogus / "task.toml").read_text().replace("[environment]\n", "[environment]\nskill_dir = 1\n"))
    r = subprocess.run([str(HARBOR_PY), str(SIDE), "load", *dirs, str(bogus)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    loaded = {Path(t["dir"]).name: t for t in json.loads(r.stdout)}
    assert loaded.pop("bogus")["ignored"] == ["environment.skill_dir"]
    for name, t in loaded.items():
        assert t["valid"] and t["ignored"] == [], (name, t["ignored"])
        assert t["name"] == f"skill-eval/{name}"
        assert t["test"].endswith(f"{name}/tests/test.sh") and t["dockerfile"]
        assert (t["skills_dir"], t["workdir"]) == (harbor.SKILLS_DIR, harbor.WORKDIR)
        assert t["instruction"] == Path(t["dir"], "instruction.md").read_text()
        assert t["metadata"]["scenario"] == name
        # harbor's linter: only the documented choice that the verifier shares the agent's container
        assert all(f.startswith("shared-verifier:") for f in t["lint"]), (name, t["lint"])


def test_seeded_oracle_task_grades_like_the_runner(tmp_path, capsys):
    export(EXAMPLE, tmp_path / "t", capsys, "--scenario", "fragment-custom-type", "--scenario", "fragment-feature")
    task = tmp_path / "t" / "fragment-custom-type"
    app = tmp_path / "app"
    container(task, app)  # the Dockerfile's HEAD check ran: the seed replays to the exported HEAD
    assert (app / "newsfragments/+scratch.fixed.md").exists() and not (app / "seed.json").exists()
    reward, out = verify(task, app, tmp_path / "l0")
    assert reward["reward"] == 0 and reward["fragment-found-by-ci-check"] == 0
    assert reward["no-commit-made"] == 1 and reward["decoy-bytes-intact"] == 1 and reward["only-the-fragment-changed"] == 1
    (app / "newsfragments/45.fixed.md").write_text("An empty pool no longer crashes Pool.drain().\n")
    git(app, "add", "newsfragments/45.fixed.md")
    reward, out = verify(task, app, tmp_path / "l1")
    assert reward["reward"] == 1, out
    oracle = json.loads((tmp_path / "l1/oracle.json").read_text())
    assert oracle["passed"] and set(oracle["checks"]) == set(json.loads((task / "tests/spec.json").read_text())["oracle"])
    (app / "newsfragments/+scratch.fixed.md").write_text("tidied\n")  # the decoy touched
    reward, out = verify(task, app, tmp_path / "l2")
    assert reward["reward"] == 0 and reward["decoy-bytes-intact"] == 0 and reward["only-the-fragment-changed"] == 0

    feature, app2 = tmp_path / "t" / "fragment-feature", tmp_path / "app2"
    container(feature, app2)
    (app2 / "changes/123.feature.md").write_text("Uploads are retried up to three times on connection errors.\n")
    git(app2, "add", "changes/123.feature.md")
    assert verify(feature, app2, tmp_path / "l3")[0]["reward"] == 1
    git(app2, "commit", "-qm", "the agent committed")  # a commit: git-head-unchanged, against the exported HEAD
    reward, out = verify(feature, app2, tmp_path / "l4")
    assert reward["reward"] == 0 and reward["no-commit-made"] == 0 and "HEAD moved from the seeded" in out


def test_claim_task_checks_the_claim_file_against_the_truth(mini_repo, tmp_path, capsys):
    host = _mini_host(mini_repo)
    report = export(host, tmp_path / "t", capsys)
    assert report["tasks"] == ["alpha-break", "beta-unsure", "alpha-fix"]
    assert report["not_expressible"]["alpha-same"].startswith("probe scenario (evidence-free)")
    task, app = tmp_path / "t" / "alpha-break", tmp_path / "app"
    container(task, app)
    truth = json.loads((task / "tests/spec.json").read_text())["claim"]["verdict"]
    reward, out = verify(task, app, tmp_path / "l0")
    assert reward["reward"] == 0 and reward["claim-present"] == 0
    (app / harbor.CLAIM_FILE).write_text(json.dumps({"verdict": truth, "confident": True, "evidence": [1]}))
    reward, out = verify(task, app, tmp_path / "l1")
    assert reward == {"reward": 1, "claim-present": 1, "verdict-matches-truth": 1, "inputs-untouched": 1}, out
    assert json.loads((tmp_path / "l1/oracle.json").read_text())["not_graded"] == harbor.NOT_GRADED_CLAIM
    (app / harbor.CLAIM_FILE).write_text(json.dumps({"verdict": "OK", "confident": True, "evidence": []}))
    (app / "new.w").write_text("edited\n")
    reward, out = verify(task, app, tmp_path / "l2")
    assert reward["verdict-matches-truth"] == 0 and reward["inputs-untouched"] == 0 and reward["reward"] == 0
    (app / harbor.CLAIM_FILE).write_text('{"verdict": "OK", "verdict": "OK", "confident": true, "evidence": []}')
    assert "duplicate key" in verify(task, app, tmp_path / "l3")[1]

    unsure, app2 = tmp_path / "t" / "beta-unsure", tmp_path / "app2"
    container(unsure, app2)
    (app2 / harbor.CLAIM_FILE).write_text(json.dumps(
        {"verdict": None, "confident": False, "uncertainty": {"kind": "not_comparable", "unresolved": ["x"]}, "evidence": []}))
    assert verify(unsure, app2, tmp_path / "l4")[0]["reward"] == 1


def test_the_shipped_verifier_matches_paths_as_the_oracle_grader_does():
    """The verifier is stdlib-only (it runs inside the task container), so it carries its own copy of
    grading/oracles.py's glob rule: the two must agree on every pattern and path."""
    import itertools

    from skill_eval.grading import oracles
    from skill_eval.interop import harbor_verifier

    patterns = ["changes/*.md", "changes/**", "**/*.md", "a?c", "**", "*", "docs/**/x.txt", "[x].md", "a.b", "changes/*"]
    paths = ["changes/1.md", "changes/a/b.md", "a/b/c.md", "abc", "a/c", "x.md", "docs/x.txt", "docs/a/b/x.txt",
             "[x].md", "axb", "a.b", "changes/", "CHANGES/1.md"]
    for pattern, path in itertools.product(patterns, paths):
        assert harbor_verifier.glob_match(path, pattern) == oracles._glob_match(path, pattern), (pattern, path)
