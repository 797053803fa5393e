"""The real agent CLIs, end to end, against the scripted model servers (marker `e2e`).

Each run: a fresh workspace with one project skill where the agent discovers it, a fresh
HOME with the adapter's config files, the scripted server for the agent's API, the CLI
launched with exactly the adapter's argv and env, and its stdout parsed by the adapter.
The script activates the skill, runs `echo hi > out.txt` through the agent's shell tool
and answers. Pinned versions (measured in research/agent-cli/REPORT.md) are installed by
`npm install --prefix .cache/agent-clis @anthropic-ai/claude-code@2.1.197
@openai/codex@0.171.0 @google/gemini-cli@0.61.0`; a missing CLI skips with that command.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from skill_eval.harness.adapters import LaunchContext, get_adapter
from skill_eval.harness.modelserver import start_server

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CLI_DIR = Path(os.environ.get("SKILL_EVAL_AGENT_CLIS", ROOT / ".cache" / "agent-clis"))
PINNED = {"claude-code": ("claude", "2.1.197"), "codex": ("codex", "0.171.0"), "gemini-cli": ("gemini", "0.61.0")}
INSTALL = "npm install --prefix .cache/agent-clis @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @google/gemini-cli@0.61.0"

SKILL_MD = """---
name: demo-skill
description: Write greeting files. Use when the user asks to write a greeting file.
---

# Demo skill

DEMO-SKILL-BODY-MARKER-7731

Write the greeting with `echo hi > out.txt`.
"""

SCRIPT = """schema_version: 1
description: e2e - activate demo-skill, run echo hi through the shell tool, answer.
turns:
  - say: Loading the skill.
    tools:
      - skill: demo-skill
  - tools:
      - shell: echo hi > out.txt
        description: write the greeting
  - final: "Done: out.txt written."
"""


def _binary(adapter_name: str) -> Path:
    exe, _ = PINNED[adapter_name]
    path = CLI_DIR / "node_modules" / ".bin" / exe
    if not path.exists():
        pytest.skip(f"{exe} is not installed at {path}; install the pinned CLIs with: {INSTALL}")
    return path


def run_cli(
    adapter_name: str,
    base: Path,
    *,
    max_turns: int = 8,
    drop_args: tuple[str, ...] = (),
    extra_args: tuple[str, ...] = (),
    script_text: str = SCRIPT,
    path_prefix: Path | None = None,
    extra_env: dict[str, str] | None = None,
):
    """One real run; returns (adapter, parsed run, server requests, workspace, proc).

    `drop_args` / `extra_args` (inserted before the prompt) change the adapter's argv to
    reproduce a known silent failure.
    """
    binary = _binary(adapter_name)
    adapter = get_adapter(adapter_name)
    ws, home = base / "workspace", base / "home"
    ws.mkdir(parents=True)
    home.mkdir()
    skill_dir = adapter.skill_dirs(home, ws)[0] / "demo-skill"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(SKILL_MD)
    script = base / "script.yaml"
    script.write_text(script_text)
    with start_server(adapter.model_server_kind, script) as server:
        ctx = LaunchContext("Write a greeting file.", home=home, workdir=ws, max_turns=max_turns, binary=str(binary), base_url=server.url)
        for rel, data in adapter.home_files(ctx).items():
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_bytes(data)
        argv = adapter.build_command(ctx)
        argv = [a for a in argv[:-1] if a not in drop_args] + list(extra_args) + argv[-1:]
        path = f"{Path(os.sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
        env = {"PATH": f"{path_prefix}:{path}" if path_prefix else path, "LANG": "C.UTF-8"}
        env.update(extra_env or {})
        env.update(adapter.env(ctx))
        proc = subprocess.run(argv, cwd=ws, env=env, input=adapter.stdin(), capture_output=True, timeout=180, check=False)
        requests = server.requests
    (base / "requests.jsonl").write_text("".join(json.dumps(r.to_json(), sort_keys=True) + "\n" for r in requests))
    (base / "stdout.jsonl").write_bytes(proc.stdout)
    (base / "stderr.log").write_bytes(proc.stderr)
    run = adapter.parse(proc.stdout, adapter.skill_dirs(home, ws), cwd=ws, installed_skills=["demo-skill"], exit_code=proc.returncode)
    return adapter, run, requests, ws, proc


def _e2e_base(tmp_path_factory, name: str) -> Path:
    """A sandbox outside any git checkout: Claude Code and Codex walk up to the git root for
    project skills and instructions, so a sandbox inside this repository would load its
    published .claude/skills, .agents/skills and AGENTS.md."""
    base = tmp_path_factory.mktemp(name)
    probe = subprocess.run(["git", "-C", str(base), "rev-parse", "--show-toplevel"], capture_output=True, check=False)
    assert probe.returncode != 0, f"e2e sandbox {base} is inside a git work tree"
    return base


@pytest.mark.parametrize("adapter_name", ["claude-code", "codex", "gemini-cli"])
def test_real_cli_against_scripted_server(adapter_name, tmp_path_factory):
    base = _e2e_base(tmp_path_factory, adapter_name)
    adapter, run, requests, ws, proc = run_cli(adapter_name, base)
    detail = f"rc={proc.returncode}\nstderr tail: {proc.stderr.decode(errors='replace')[-1500:]}\nerrors: {run.errors}\nsee {base}"
    assert proc.returncode == 0, detail
    assert run.ok, detail
    assert (ws / "out.txt").read_text() == "hi\n", detail
    activations = [e for e in run.events if e["type"] == "skill_activated"]
    assert activations == [{"type": "skill_activated", "skill": "demo-skill", "tier": adapter.tier}], detail
    assert run.final_text == "Done: out.txt written.", detail
    scripted = [r for r in requests if r.turn is not None]
    assert [r.turn for r in scripted] == [0, 1, 2], [(r.method, r.path, r.turn, r.note) for r in requests]
    assert all(r.note != "exhausted" for r in requests)
    info = adapter.binary_info(_binary(adapter_name), env={"HOME": str(base / "home"), "PATH": "/usr/local/bin:/usr/bin:/bin"})
    assert info.version and PINNED[adapter_name][1] in info.version
    assert len(info.sha256) == 64 and info.package and info.package.endswith("@" + PINNED[adapter_name][1])
    if adapter_name == "codex":
        assert len(info.extra) == 1 and next(iter(info.extra)).endswith("/bin/codex")
    json.dumps(run.events)


@pytest.mark.parametrize("adapter_name", ["claude-code", "codex", "gemini-cli"])
def test_sandbox_path_reaches_the_shell_tool(adapter_name, tmp_path_factory):
    """The recording shim works only if the agent's shell keeps the sandbox PATH. Codex runs
    `bash -lc` by default, and the login shell's /etc/profile resets PATH (measured: the
    subject became "command not found"); the adapter sets allow_login_shell = false."""
    base = _e2e_base(tmp_path_factory, f"{adapter_name}-path")
    shim_dir = base / "shim-bin"
    shim_dir.mkdir()
    probe = shim_dir / "skill-eval-probe"
    probe.write_text('#!/bin/sh\necho "SHIM-REACHED $SKILL_EVAL_RECORD_DIR $SKILL_EVAL_SHIM_CONFIG $SKILL_EVAL_REAL"\n')
    probe.chmod(0o755)
    script = "schema_version: 1\nturns:\n  - tools: [{shell: skill-eval-probe > probe.txt}]\n  - final: probed\n"
    # the shim's own variables must reach it too (Codex filters names containing KEY/SECRET/TOKEN)
    shim_env = {"SKILL_EVAL_RECORD_DIR": "/rec", "SKILL_EVAL_SHIM_CONFIG": "/cfg.json", "SKILL_EVAL_REAL": "/real"}
    _, run, _, ws, proc = run_cli(adapter_name, base, script_text=script, path_prefix=shim_dir, extra_env=shim_env)
    assert (ws / "probe.txt").read_text() == "SHIM-REACHED /rec /cfg.json /real\n", (run.events, proc.stderr[-500:])


# -- the silent failures of REPORT.md, reproduced with the real CLIs ------------------------


def test_claude_default_permission_mode_is_a_run_error(tmp_path_factory):
    base = _e2e_base(tmp_path_factory, "claude-denied")
    _, run, _, ws, proc = run_cli("claude-code", base, drop_args=("--dangerously-skip-permissions",))
    assert proc.returncode == 0  # the CLI itself reports success
    assert any(r.startswith("permission_denied: Bash") for r in run.errors), run.errors
    assert not (ws / "out.txt").exists()


def test_claude_max_turns_is_a_run_error(tmp_path_factory):
    base = _e2e_base(tmp_path_factory, "claude-maxturns")
    _, run, _, _, proc = run_cli("claude-code", base, max_turns=1)
    assert proc.returncode == 1 and run.stop_reason == "max_turns", (run.errors, proc.stdout[-800:])
    assert [r.split(":")[0] for r in run.errors] == ["max_turns", "agent_error"]


def test_gemini_without_yolo_is_a_run_error(tmp_path_factory):
    base = _e2e_base(tmp_path_factory, "gemini-noyolo")
    _, run, _, ws, proc = run_cli("gemini-cli", base, drop_args=("--yolo",))
    assert proc.returncode == 0  # the CLI itself reports success
    assert run.errors == [
        "tool_not_registered: activate_skill (headless Gemini CLI registers it only with --yolo)",
        "tool_not_registered: run_shell_command (headless Gemini CLI registers it only with --yolo)",
    ], (run.errors, proc.stdout[-800:])
    assert not [e for e in run.events if e["type"] == "skill_activated"] and not (ws / "out.txt").exists()


def test_gemini_max_turns_is_a_run_error(tmp_path_factory):
    base = _e2e_base(tmp_path_factory, "gemini-maxturns")
    _, run, _, _, proc = run_cli("gemini-cli", base, max_turns=1)
    assert proc.returncode == 53 and run.stop_reason == "max_turns", (run.errors, proc.stdout[-800:])
    assert [r.split(":")[0] for r in run.errors] == ["max_turns", "agent_error"]


def test_claude_bare_mode_cannot_activate(tmp_path_factory):
    """--bare drops the Skill tool and project skills (REPORT §1): both become run errors."""
    base = _e2e_base(tmp_path_factory, "claude-bare")
    _, run, _, _, proc = run_cli("claude-code", base, extra_args=("--bare",))
    kinds = [r.split(":")[0] for r in run.errors]
    assert kinds[:2] == ["tool_not_registered", "skill_not_loaded"], (run.errors, proc.stdout[-800:])
    assert not [e for e in run.events if e["type"] == "skill_activated"]
