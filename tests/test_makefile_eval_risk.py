"""Issue 28 item 9: `make eval-risk` takes the agent and the model, so the maintainer flow can be
rehearsed offline (scripted model turns or a local model) before credits are spent.

`make -n` prints the recipe without running it (nor the .venv bootstrap), so no agent, model or
network is involved. The target runs the nox session eval-risk (scripts/run_skill_eval.py, issue 35
item 5), which hands everything after `--` to `skill-eval run --suite risk`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def recipe(*assignments: str) -> str:
    proc = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(REPO), "eval-risk", *assignments],
                          capture_output=True, text=True, check=True)
    (line,) = [ln.rstrip() for ln in proc.stdout.splitlines() if "nox -s eval-risk -- " in ln]
    return "skill-eval run --suite risk " + line.split(" -- ", 1)[1]  # what the session runs it with


def test_the_session_runs_the_script_with_the_risk_suite():
    import ast

    tree = ast.parse((REPO / "noxfile.py").read_text())
    (fn,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "eval_risk"]
    runs = [[a.value for a in c.args if isinstance(a, ast.Constant)] for c in ast.walk(fn)
            if isinstance(c, ast.Call) and getattr(c.func, "attr", "") == "run"]
    assert runs[0] == ["python", "scripts/run_skill_eval.py", "--suite", "risk"]
    assert any(c.args and isinstance(c.args[-1], ast.Starred) for c in ast.walk(fn) if isinstance(c, ast.Call)
               and getattr(c.func, "attr", "") == "run")  # the Makefile's arguments reach `run`


def test_default_is_the_configured_agent_on_the_risk_suite_since_main():
    line = recipe()
    assert line.endswith("--base $(git merge-base HEAD main 2>/dev/null || echo HEAD)")
    assert "--agent" not in line and "--model" not in line


def test_scripted_rehearsal_passes_the_agent_and_the_model_server():
    line = recipe("AGENT=claude-code", "MODEL_SERVER=scripted:agent-evals/skills/model-scripts/careful", "RUN_ID=rehearsal",
                  "K=1", "EVAL_ARGS=--dry-run")
    assert line.split("skill-eval ", 1)[1] == (
        "run --suite risk --base $(git merge-base HEAD main 2>/dev/null || echo HEAD) --agent claude-code "
        "--model-server scripted:agent-evals/skills/model-scripts/careful --run-id rehearsal -k 1 --dry-run")


def test_local_model_rehearsal_passes_the_endpoint_and_the_model():
    line = recipe("AGENT=openai-compatible", "BASE_URL=http://127.0.0.1:8765/v1", "MODEL=smollm2-135m", "BASE=HEAD~1",
                  "ARM=baseline", "JOBS=2", "AGENT_BINARY=/opt/claude")
    assert "--base HEAD~1 " in line and "merge-base" not in line
    for part in ("--agent openai-compatible", "--model smollm2-135m", "--base-url http://127.0.0.1:8765/v1", "--arm baseline",
                 "-j 2", "--agent-binary /opt/claude"):
        assert part in line


def test_the_snippet_init_writes_takes_the_same_variables(tmp_path):
    from skill_eval.commands import init

    mk = init.render_snippets(["skills"], [], (None, "a test"))["skill-eval.mk"]
    (tmp_path / "skill-eval.mk").write_text(mk)
    (tmp_path / "Makefile").write_text("include skill-eval.mk\n")
    proc = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(tmp_path), "eval-risk", "SKILL_EVAL=skill-eval",
                           "AGENT=codex", "MODEL_SERVER=scripted:evals/scripts", "K=1"], capture_output=True, text=True, check=True)
    (line,) = [ln for ln in proc.stdout.splitlines() if "skill-eval run" in ln]
    assert line.endswith("--agent codex --model-server scripted:evals/scripts -k 1"), line
