"""The shipped workflow .github/workflows/record-evidence.yml, run locally with the scripted agent.

Its three jobs run as GitHub would run them, in three kinds of checkout: the plan job's scripts
give the matrix; one record job per matrix entry runs in its own copy of the host (secrets and
matrix values substituted into the steps' `env:`, $GITHUB_OUTPUT / $GITHUB_ENV / $RUNNER_TEMP
honoured); the merge job downloads their artifacts, merges, and its evidence is what the pull
request would carry, on which `pr` is green.

What the test stands in for: the `uses:` steps (checkout = a copy of the host, setup-python =
this interpreter, upload/download-artifact = directory copies, create-pull-request = the
working-tree change it would commit) and the `install` steps (skill-eval is installed here;
pip would need the network). Every `run:` script runs as written, with bash -eo pipefail; an
expression the test does not know fails it, so the workflow cannot grow an input it skips.
Also checked: no `${{ }}` inside a script (expressions reach the shell through env only), every
action is pinned by version, and the workflow has a dispatch, a plan, a record matrix and a merge.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_evidence_merge import committed_host

from skill_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "record-evidence.yml"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
INPUTS = {"suite": "full", "agent": "scripted", "model": "", "model_server": "scripted:evals/model-scripts", "shards": "3"}


def load() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def test_workflow_shape() -> None:
    doc = load()
    assert set(doc["on"]) == {"workflow_dispatch"}
    assert {"suite", "agent", "shards"} <= set(doc["on"]["workflow_dispatch"]["inputs"])
    jobs = doc["jobs"]
    assert list(jobs) == ["plan", "record", "merge"]
    assert jobs["record"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert jobs["merge"]["needs"] == ["plan", "record"]
    for job in jobs.values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+\.\d+\.\d+", step["uses"]), step["uses"]  # pinned by version
            else:
                assert "${{" not in step["run"], step.get("name")  # expressions only through env
    uses = [s.get("uses", "").split("@")[0] for s in jobs["merge"]["steps"]]
    assert "peter-evans/create-pull-request" in uses


class Runner:
    """Runs one job's steps in `workdir`, as the Actions runner would (the parts this workflow uses)."""

    def __init__(self, tmp: Path, host: Path, context: dict[str, str], artifacts: Path):
        self.tmp, self.host, self.context, self.artifacts = tmp, host, context, artifacts
        self.workflow_env = {k: self.sub(v) for k, v in load().get("env", {}).items()}

    def sub(self, text: Any) -> str:
        return EXPR.sub(lambda m: self.context[m.group(1)], str(text))  # KeyError: an expression we do not know

    def condition(self, expr: str) -> bool:
        inner = EXPR.fullmatch(expr.strip())
        code = inner.group(1) if inner else expr
        code = re.sub(r"\b(inputs\.\w+)", lambda m: repr(self.context[m.group(1)]), code)
        code = code.replace("&&", " and ").replace("||", " or ").replace("always()", "True")
        return bool(eval(code, {"__builtins__": {}}))  # noqa: S307 - our own workflow's conditions

    def run_job(self, name: str, workdir: Path, extra: dict[str, str]) -> dict[str, str]:
        job = load()["jobs"][name]
        context = self.context | extra
        saved, self.context = self.context, context
        temp = self.tmp / f"runner-temp-{workdir.name}"
        temp.mkdir()
        output, genv = temp / "GITHUB_OUTPUT", temp / "GITHUB_ENV"
        output.touch()
        genv.touch()
        context["runner.temp"] = str(temp)
        self.workflow_env["EVIDENCE_DIR"] = context["env.EVIDENCE_DIR"]
        try:
            for step in job["steps"]:
                if "if" in step and not self.condition(str(step["if"])):
                    continue
                if "uses" in step:
                    self.action(step, workdir)
                elif step.get("id") != "install":
                    env = dict(self.base_env()) | self.workflow_env | self.read_kv(genv)
                    env |= {k: self.sub(v) for k, v in step.get("env", {}).items()}
                    env |= {"GITHUB_OUTPUT": str(output), "GITHUB_ENV": str(genv), "RUNNER_TEMP": str(temp)}
                    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                          cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
                    assert done.returncode == 0, (name, step.get("name"), done.stdout, done.stderr)
            outputs = self.read_kv(output)
            return {k: EXPR.sub(lambda m: outputs[m.group(1).removeprefix("steps.plan.outputs.")], v)
                    for k, v in job.get("outputs", {}).items()}
        finally:
            self.context = saved

    @staticmethod
    def read_kv(path: Path) -> dict[str, str]:
        return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)

    @staticmethod
    def base_env() -> dict[str, str]:
        keep = ("HOME", "LANG", "TMPDIR", "SKILL_EVAL_REAL")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
        return env

    def action(self, step: dict[str, Any], workdir: Path) -> None:
        action = step["uses"].split("@")[0]
        args = {k: self.sub(v) for k, v in step.get("with", {}).items()}
        if action == "actions/checkout":
            shutil.copytree(self.host, workdir, symlinks=True)
        elif action == "actions/upload-artifact":
            assert args["include-hidden-files"] == "True"  # else the .shards/ manifest is left behind
            shutil.copytree(workdir / args["path"], self.artifacts / args["name"], symlinks=True)
        elif action == "actions/download-artifact":
            for art in sorted(self.artifacts.iterdir()):
                if fnmatch.fnmatch(art.name, args["pattern"]):
                    shutil.copytree(art, Path(args["path"]) / art.name, symlinks=True)
        elif action == "peter-evans/create-pull-request":
            changed = subprocess.run(["git", "status", "--porcelain", "--", args["add-paths"]], cwd=workdir,
                                     capture_output=True, text=True, check=True).stdout
            assert changed.strip(), "the pull request would be empty"
            self.pull_request = changed
        elif action != "actions/setup-python":
            raise AssertionError(f"the test does not stand in for {action}")


def test_workflow_records_three_shards_merges_and_pr_is_green(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             test_signing_key: tuple[Path, str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    host = committed_host(tmp_path, monkeypatch, test_signing_key)
    monkeypatch.delenv("SKILL_EVAL_SIGNING_KEY")  # the record jobs get it from the secret, through $GITHUB_ENV
    context = {f"inputs.{k}": v for k, v in INPUTS.items()} | {
        "env.PYTHON_VERSION": "3.11", "env.EVIDENCE_DIR": "evals/evidence",  # the host's [evals] root
        "secrets.EVIDENCE_SIGNING_KEY": test_signing_key[0].read_text(), "secrets.ANTHROPIC_API_KEY": "",
        "secrets.OPENAI_API_KEY": "", "secrets.GEMINI_API_KEY": "", "github.run_id": "42", "github.ref": "refs/heads/main"}
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    runner = Runner(tmp_path, host, context, artifacts)

    outputs = runner.run_job("plan", tmp_path / "plan", {})
    matrix = json.loads(outputs["matrix"])
    assert [m["shard"] for m in matrix["include"]] == ["1/3", "2/3", "3/3"]
    for entry in matrix["include"]:
        runner.run_job("record", tmp_path / f"record-{entry['slug']}", {
            **{f"matrix.{k}": str(v) for k, v in entry.items()}, "needs.plan.outputs.digest": outputs["digest"]})
    assert sorted(p.name for p in artifacts.iterdir()) == ["evidence-1-of-3", "evidence-2-of-3", "evidence-3-of-3"]
    merged = tmp_path / "merge"
    runner.run_job("merge", merged, {"needs.plan.outputs.digest": outputs["digest"]})
    assert "evals/evidence/" in runner.pull_request

    capsys.readouterr()
    assert main(["pr", "--root", str(merged)]) == 0, capsys.readouterr().out
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("pr: ok") and "UNSIGNED" not in last, last  # signed with the key from the secret
