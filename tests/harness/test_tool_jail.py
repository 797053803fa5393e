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
    tool.write_text('#!/bin/sh\n[ -x "$1" ] && "$1"\necho tool ran\n')
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
        # the hook is an operand, so it is in the call's snapshot: the tool can run it
        argv = ["tool", "./tool-hook"]
        if level == "bwrap":  # the agent's calls come from inside its own view (fixed paths: runner/layout.py)
            cmd = isolation.wrap("bwrap", argv, isolation.agent_view(repo, box.root.parent, box.layout))
        else:
            cmd = isolation.Command(argv)
        res = subprocess.run(cmd.argv, cwd=box.work, env=box.env, capture_output=True, timeout=60, pass_fds=cmd.fds)
        cmd.close()
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
        view = isolation.agent_view(repo, box.root.parent, box.layout)
        cmd = isolation.wrap("bwrap", ["grep", "^CapEff", "/proc/self/status"], view)
        res = subprocess.run(cmd.argv, capture_output=True, text=True, timeout=60, pass_fds=cmd.fds)
        cmd.close()
        assert res.returncode == 0 and res.stdout.split()[1] == "0000000000000000", res.stdout
    finally:
        box.cleanup()


SCAN = r"""
import json, os
out = {"mountinfo": open("/proc/self/mountinfo").read().splitlines(), "environ": [], "cmdline": [], "cwd": []}
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for key in ("environ", "cmdline"):
            try:
                out[key].append(open(f"/proc/{pid}/{key}", "rb").read().decode("utf-8", "replace"))
            except OSError:
                pass
        try:
            out["cwd"].append(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            pass
print(json.dumps(out))
"""


def test_the_agent_sees_fixed_paths_and_no_host_path(tmp_path: Path, repo: Path):
    """Issue 24 item 3: a scan from inside the agent's sandbox (every process's environment, command line
    and cwd, and the mount table) names none of the repository, the sandbox parent, the record store,
    the runner's home or its venv. The one residual the kernel imposes: mountinfo's `root` field of the
    sandbox's own bind mounts names the sandbox directory within its filesystem (never one of those)."""
    import json
    import sys

    box = _box(tmp_path, repo, "bwrap")
    try:
        view = isolation.agent_view(repo, box.root.parent, box.layout)
        cmd = isolation.wrap("bwrap", ["python3", "-c", SCAN], view)
        res = subprocess.run(cmd.argv, cwd=box.work, env=box.env, capture_output=True, text=True, timeout=60,
                             pass_fds=cmd.fds)
        cmd.close()
        assert res.returncode == 0, res.stderr
        seen = json.loads(res.stdout)
        host = {"repository": str(repo), "sandbox parent": str(box.root.parent), "record store": str(box.record),
                "runner home": str(Path.home()), "venv": sys.prefix, "pytest tmp": str(tmp_path)}
        flat = "\n".join(seen["environ"] + seen["cmdline"] + seen["cwd"])
        assert "/work" in flat and "/run/skill-eval/bin" in flat, "the scan reads what the agent sees"
        assert {k: v for k, v in host.items() if v in flat} == {}
        for line in seen["mountinfo"]:
            fields = line.split()
            root, point, rest = fields[3], fields[4], " ".join(fields[5:])
            assert not any(v in point or v in rest for v in host.values()), line
            residual = root.startswith(str(box.root) + "/")  # the sandbox's own work/home/tmp/bin/run/agent
            assert residual or not any(v in root for v in host.values()), line
            assert not any(v in root for k, v in host.items() if k in ("repository", "record store", "runner home", "venv"))
        assert {f.split()[4] for f in seen["mountinfo"]} >= {"/work", "/home/agent", "/tmp", "/run/skill-eval/bin"}
    finally:
        box.cleanup()


@pytest.mark.parametrize("live", [False, True])
def test_the_subject_jail_shows_its_tree_at_the_agents_path_writable_only_when_live(tmp_path: Path, live: bool):
    # The jail shows the subject's tree at the agent's own root (`at`, /work where the host allows).
    # An operand snapshot is read-only there; the live tree of a tree-mode subject (towncrier writing
    # its fragment) must be writable there too, not only at its host path (a CI clone outside /work
    # put it read-only at /work and every fragment the subject wrote failed with EROFS).
    tree = tmp_path / "tree"
    tree.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    at = "/skill-eval-jail-test"
    prefix = isolation.subject_jail("bwrap", [], [], tree, [state], at=at, live=live).argv(at)
    done = subprocess.run([*prefix, "sh", "-c", f"echo state > {state}/s; echo made > {at}/made"],
                          capture_output=True, text=True, check=False)
    assert (state / "s").read_text() == "state\n"
    if live:
        assert done.returncode == 0, done.stderr
        assert (tree / "made").read_text() == "made\n"
    else:
        assert done.returncode != 0 and "Read-only file system" in done.stderr
        assert not (tree / "made").exists()
