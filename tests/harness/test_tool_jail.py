"""The runner's own tool processes run jailed (runner/isolation.ToolJail).

Seed, setup and action commands, the git digests of facts.json and the subject behind the
recorder all run outside the agent's sandbox, on trees the agent wrote. A hook the agent plants
for them (a `core.fsmonitor` in `.git/config`, a wrapper the tool is told to run) must not reach
anything the agent could not: not the record store, not the sandbox root, not the repository.
Each test shows the attack succeeding without the jail (level "none"), so it can fail.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from skill_eval.content.inputs import InputRecorder
from skill_eval.harness.runner import isolation
from skill_eval.harness.runner.sandbox import Sandbox

pytestmark = pytest.mark.skipif(isolation.available() != "bwrap", reason="needs bubblewrap (installed by .ci/run)")

SETUP = [["git", "init", "-q"], ["git", "-c", "user.name=f", "-c", "user.email=f@x", "add", "-A"],
         ["git", "-c", "user.name=f", "-c", "user.email=f@x", "commit", "-q", "-m", "fixture"]]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "fixtures" / "case").mkdir(parents=True)
    (repo / "fixtures" / "case" / "notes.txt").write_text("fixture\n")
    tool = tmp_path / "tools" / "tool"
    tool.parent.mkdir()
    # a subject whose config (the agent's) can name a program it runs: like a template or a hook
    tool.write_text('#!/bin/sh\n[ -x ./tool-hook ] && ./tool-hook\necho tool ran\n')
    tool.chmod(0o755)
    return repo


def _box(tmp_path: Path, repo: Path, level: str) -> Sandbox:
    profile = SimpleNamespace(name="tool", real_env="SKILL_EVAL_REAL", format_dest_options=("-o",), path_options=(),
                              directory_options=(), stdout_token="-")
    parent = tmp_path / f"runs-{level}"
    return Sandbox.create(parent, InputRecorder(repo), "fixtures/case", profile=profile, real=tmp_path / "tools" / "tool",
                          setup=SETUP, deny=isolation.hidden_roots(repo, parent), level=level)


def _plant(box: Sandbox, name: str) -> list[Path]:
    """What an agent could write in its work tree: a program that tries to forge a call record, write
    into the sandbox root and into the repository. Returns the paths it targets."""
    targets = [box.record / "calls" / "999.json", box.root / "escaped", box.work.parents[3] / "repo" / "escaped"]
    body = "#!/bin/sh\n" + "".join(f"echo forged > {t} 2>/dev/null\n" for t in targets)
    (box.work / name).write_text(body)
    (box.work / name).chmod(0o755)
    return targets


@pytest.mark.parametrize("level", ["bwrap", "none"])
def test_a_git_hook_planted_by_the_agent_runs_jailed(tmp_path: Path, repo: Path, level: str):
    box = _box(tmp_path, repo, level)
    try:
        targets = _plant(box, "hook.sh")
        with (box.work / ".git" / "config").open("a") as fh:  # the agent's repository config
            fh.write(f"[core]\n\tfsmonitor = {box.work / 'hook.sh'}\n")
        facts = box.run_actions([["git", "status", "--short"]]).facts["actions"][0]
        escaped = [t for t in targets if t.exists()]
        if level == "bwrap":
            assert escaped == [], f"the hook wrote outside the work tree: {escaped}"
            assert facts["git_before"] is not None
        else:
            assert escaped, "without the jail the hook reaches the runner's files (what the jail exists for)"
    finally:
        box.cleanup()
        shutil.rmtree(tmp_path / "repo" / "escaped", ignore_errors=True)


@pytest.mark.parametrize("level", ["bwrap", "none"])
def test_the_subject_runs_jailed_for_the_agents_calls(tmp_path: Path, repo: Path, level: str):
    box = _box(tmp_path, repo, level)
    try:
        targets = _plant(box, "tool-hook")
        res = subprocess.run(["tool"], cwd=box.work, env=box.env, capture_output=True, timeout=60)
        assert res.returncode == 0 and b"tool ran" in res.stdout, res.stderr
        calls = box.calls()
        escaped = [t for t in targets if t.exists()]
        if level == "bwrap":
            assert escaped == [], f"the subject's hook wrote outside the work tree: {escaped}"
            assert [c["status"] for c in calls] == ["complete"] and len(calls) == 1
        else:
            assert escaped, "without the jail the subject's hook reaches the record store"
    finally:
        box.cleanup()


def test_the_jail_has_no_network_and_a_read_only_system(tmp_path: Path, repo: Path):
    box = _box(tmp_path, repo, "bwrap")
    try:
        facts = box.run_actions([["sh", "-c", "touch /usr/escaped"], ["sh", "-c", "test $(wc -l < /proc/net/dev) -le 3"],
                                 ["sh", "-c", "echo ok > inside.txt"]]).facts["actions"]
        assert facts[0]["exit_code"] != 0 and not Path("/usr/escaped").exists()
        assert facts[1]["exit_code"] == 0, "only a loopback interface: no network namespace shared"
        assert facts[2]["exit_code"] == 0 and (box.work / "inside.txt").read_text() == "ok\n"
    finally:
        box.cleanup()


def test_no_capabilities_in_the_jail_or_the_agents_view(tmp_path: Path, repo: Path):
    """Root inside bwrap keeps its capabilities unless dropped: umount/remount would undo every hiding."""
    box = _box(tmp_path, repo, "bwrap")
    try:
        facts = box.run_actions([["sh", "-c", "grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/self/status"],
                                 ["sh", "-c", f"umount -l {box.root.parent} 2>/dev/null"],
                                 ["sh", "-c", "mount -o remount,rw / 2>/dev/null"]]).facts["actions"]
        assert [f["exit_code"] == 0 for f in facts] == [True, False, False]
        view = isolation.agent_view(repo, box.root.parent, writable=[box.work], readonly=[], cwd=box.work)
        res = subprocess.run(isolation.wrap("bwrap", ["grep", "^CapEff", "/proc/self/status"], view),
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and res.stdout.split()[1] == "0000000000000000", res.stdout
    finally:
        box.cleanup()
