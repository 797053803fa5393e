"""The agent under test as an adversary (issue 7 items 1, 2, 6): through the real runner with the
scripted agent and the real abicheck, each test tries one forgery and proves it cannot produce
evidence: forged or edited records, the runner's environment through /proc, swapped inputs,
a killed runner leaving orphans or unredacted sandboxes, a failed recording sealed complete."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.harness.runner import isolation

REPO = Path(__file__).resolve().parents[2]
EVIDENCE = "agent-evals/skills/evidence/abi-compat-review/skill-agent"
FIXTURE = "agent-evals/skills/fixtures/removed-export"
CLAIM = ('      ```skill-eval-claim\n      {"verdict": "BREAKING", "confident": true, "evidence": [1]}\n      ```\n')

pytestmark = pytest.mark.skipif(isolation.available() != "bwrap", reason="needs a working bubblewrap")


def write_script(root: Path, name: str, shells: list[str], final: str = "Removed export: BREAKING.") -> str:
    rel = f"agent-evals/skills/model-scripts/{name}.yaml"
    lines = ["schema_version: 1", f"description: {name}", "turns:", "  - tools:", "      - skill: abi-compat-review"]
    for cmd in shells:
        lines += ["  - tools:", "      - shell: " + json.dumps(cmd)]
    lines += ["  - final: |", f"      {final}", "", CLAIM]
    (root / rel).write_text("\n".join(lines))
    return rel


def run(root: Path, script: str, run_id: str, *extra: str) -> int:
    return main(["run", "--root", str(root), "review-removed-export", "--agent", "scripted", "--model-server",
                 f"scripted:{script}", "--no-trigger", "-k", "1", "--run-id", run_id, *extra])


def bundle(root: Path, run_id: str) -> Path:
    return root / EVIDENCE / run_id / "review-removed-export" / "0"


def calls_of(b: Path) -> list[dict]:
    text = (b / "calls.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def grade(root: Path, b: Path, capsys) -> dict:
    capsys.readouterr()
    main(["grade", "--root", str(root), "--json", str(b)])
    return json.loads(capsys.readouterr().out)


FORGED_RECORD = json.dumps({
    "schema_version": 2, "call": 1, "status": "complete", "argv": ["abicheck", "compare", "old/libdemo.so.1",
    "new/libdemo.so.1", "-o", "json=report.json"], "cwd": ".", "started_at": "x", "finished_at": "x",
    "duration_ms": 1, "exit_code": 4, "signal": None, "stdout": None, "stderr": None, "outputs": [],
    "substitutions": {"stdout": 0, "stderr": 0}, "inputs": []})


def test_forged_record_files_are_not_evidence(repo_copy: Path, capsys):
    """Records and a report written wherever the agent can reach, without running abicheck."""
    forge = (
        "for d in ../record ../record/calls \"$SKILL_EVAL_RECORD_DIR\" \"$TMPDIR/record\" /tmp/record $HOME/record; do "
        "mkdir -p \"$d/calls\" \"$d/captured\" 2>/dev/null; "
        f"printf '%s' '{FORGED_RECORD}' > \"$d/calls/1.json\" 2>/dev/null; "
        "echo '{\"verdict\": \"BREAKING\"}' > \"$d/captured/1.out\" 2>/dev/null; done; "
        "for f in /proc/*/cwd; do ls -d \"$f/../record\" 2>/dev/null; done; "
        "echo '{\"verdict\": \"BREAKING\", \"exit_code\": 4}' > report.json; true")
    script = write_script(repo_copy, "forge", [forge])
    run(repo_copy, script, "forge")
    b = bundle(repo_copy, "forge")
    assert calls_of(b) == []  # no request came through the channel: no call exists
    assert not (b / "captured").exists()
    result = grade(repo_copy, b, capsys)
    assert result["passed"] is False
    failed = set(result["failed_dimensions"]) | set(result["zero_tolerance_failed"])
    assert {"3", "6"} <= {str(d) for d in failed}, result


def test_agent_cannot_edit_or_delete_records_of_its_real_calls(repo_copy: Path, capsys):
    tamper = ("find / -xdev \\( -name '1.json' -o -name '1.out' \\) 2>/dev/null | while read f; do "
              "echo forged > \"$f\" 2>/dev/null; rm -f \"$f\" 2>/dev/null; done; rm -rf ../record ../run 2>/dev/null; "
              "echo '{\"verdict\": \"NO_CHANGE\"}' > report.json; true")
    script = write_script(repo_copy, "tamper", ["abicheck compare old/libdemo.so.1 new/libdemo.so.1 -o json=report.json",
                                                 tamper])
    assert run(repo_copy, script, "tamper") == 0
    b = bundle(repo_copy, "tamper")
    (call,) = calls_of(b)
    assert call["status"] == "complete" and call["exit_code"] == 4
    snap = (b / call["outputs"][0]["snapshot"]).read_bytes()
    assert hashlib.sha256(snap).hexdigest() == call["outputs"][0]["sha256"]
    assert json.loads(snap)["verdict"] == "BREAKING"
    assert (b / call["stdout"]["path"]).is_file()
    assert grade(repo_copy, b, capsys)["passed"] is True


def test_runner_environment_is_not_readable_through_proc(repo_copy: Path, monkeypatch, capsys):
    canary = "canary-value-not-a-credential-name-4711"
    monkeypatch.setenv("SKILL_EVAL_INTEGRITY_CANARY", canary)
    probe = ("ls /proc | grep -c '^[0-9]' > /dev/stderr; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; "
             "cat /proc/1/cmdline | tr '\\0' ' '; ls ..; true")
    script = write_script(repo_copy, "proc", [probe])
    run(repo_copy, script, "proc")
    b = bundle(repo_copy, "proc")
    raw = (b / "raw" / "stream.jsonl").read_bytes()
    assert b"SKILL_EVAL_SANDBOX_DIR" not in raw and canary.encode() not in raw
    assert b"XDG_CACHE_HOME=" in raw  # the probe did read the environ files it could see (its own)
    for f in b.rglob("*"):
        if f.is_file():
            assert canary.encode() not in f.read_bytes(), f
    meta = json.loads((b / "meta.json").read_text())
    assert meta["isolation"] == "bwrap"


def test_swapped_inputs_are_visible_in_the_input_digests(repo_copy: Path):
    script = write_script(repo_copy, "swap", [
        "cp new/libdemo.so.1 old/libdemo.so.1",
        "abicheck compare old/libdemo.so.1 new/libdemo.so.1 -o json=report.json"])
    run(repo_copy, script, "swap")
    (call,) = calls_of(bundle(repo_copy, "swap"))
    fixture = {side: hashlib.sha256((repo_copy / FIXTURE / side / "libdemo.so.1").read_bytes()).hexdigest()
               for side in ("old", "new")}
    by_path = {i["path"]: i for i in call["inputs"]}
    assert by_path["old/libdemo.so.1"]["sha256"] != fixture["old"]
    assert by_path["old/libdemo.so.1"]["sha256"] == fixture["new"]
    assert by_path["new/libdemo.so.1"]["sha256"] == fixture["new"]
    assert all(i["stable"] and i["kind"] == "file" for i in call["inputs"])
    assert [i["arg"] for i in call["inputs"]] == [2, 3]


def test_recording_failure_is_sealed_incomplete_as_infra_error(repo_copy: Path, monkeypatch):
    from skill_eval.harness.runner import tee

    def full_disk(path: str):
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(tee, "_open_capture", full_disk)
    script = write_script(repo_copy, "fulldisk", ["abicheck compare old/libdemo.so.1 new/libdemo.so.1 -o json=report.json; "
                                                  "echo exit=$?"])
    assert run(repo_copy, script, "fulldisk") == 1
    b = bundle(repo_copy, "fulldisk")
    meta = json.loads((b / "meta.json").read_text())
    assert meta["status"] == "incomplete" and meta["outcome"] == "infra_error"
    assert "recording failed" in meta["status_reason"] and "No space left" in meta["status_reason"]
    (call,) = calls_of(b)
    assert call["status"] == "record_failed"
    assert b"exit=125" in (b / "raw" / "stream.jsonl").read_bytes()  # the client's infrastructure code


def _proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, start time, argv) of every live, non-zombie process."""
    table = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            stat_fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if stat_fields[0] != "Z":  # a zombie is already dead
            table[int(pid)] = (int(stat_fields[1]), stat_fields[19], cmd)
    return table


def _descendants(root: int) -> dict[int, tuple[str, str]]:
    """The live processes below `root`: pid -> (start time, argv). Found by parentage, since under
    bubblewrap an agent's command line and working directory name only the fixed /work paths."""
    table = _proc_table()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, start, cmd) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = (start, cmd)
                frontier.append(pid)
    return found


def _still_alive(procs: dict[int, tuple[str, str]]) -> list[str]:
    table = _proc_table()
    return [f"{pid}: {cmd[:150]}" for pid, (start, cmd) in procs.items() if pid in table and table[pid][1] == start]


def _readable_by_another_uid(path: Path) -> bool:
    """Can uid 65534 list `path` or anything below it (needs root and setpriv)?"""
    probe = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "find", str(path), "-maxdepth", "3", "-type", "f"]
    res = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    return res.returncode == 0 or bool(res.stdout.strip())


def test_kill_9_of_the_runner_leaves_no_orphan_and_resume_completes(repo_copy: Path, tmp_path: Path):
    """kill -9 of `run -j 2` mid-run: within 5 s no process of the run is left and nothing of it is
    readable by another uid (the sandbox parent is 0700); the next `run` removes the dead sandboxes
    and completes (issue 24 item 5)."""
    sandboxes = tmp_path / "sandboxes"
    script = write_script(repo_copy, "slow", ["abicheck compare old/libdemo.so.1 new/libdemo.so.1 -o json=report.json",
                                              "sleep 2"])
    env = {**os.environ, "SKILL_EVAL_SANDBOX_DIR": str(sandboxes), "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, str(REPO / "scripts/run_skill_eval.py"), "--root", str(repo_copy), "review-removed-export",
           "--agent", "scripted", "--model-server", f"scripted:{script}", "--no-trigger", "-k", "4", "--run-id", "kill",
           "-j", "2"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not list((repo_copy / EVIDENCE / "kill").rglob("meta.json")):
        time.sleep(0.05)
    while time.monotonic() < deadline and not any(c.startswith("sleep 2") for _s, c in _descendants(proc.pid).values()):
        time.sleep(0.05)  # an agent is mid-run
    procs = _descendants(proc.pid)
    assert any(c.startswith("sleep 2") for _s, c in procs.values()), "the runner had agents running when it was killed"
    assert list(sandboxes.iterdir()), "the killed run has sandboxes on disk"
    proc.kill()  # SIGKILL the runner only (not its group): its children must follow on their own
    proc.wait()
    killed = time.monotonic()
    while time.monotonic() < killed + 5 and _still_alive(procs):
        time.sleep(0.1)
    assert _still_alive(procs) == [], "a process of the killed run outlived it by 5 s"
    assert stat.S_IMODE(sandboxes.stat().st_mode) == 0o700
    if os.geteuid() == 0 and shutil.which("setpriv"):
        assert not _readable_by_another_uid(sandboxes), "another uid can read the killed run's sandboxes"
        control = Path(tempfile.mkdtemp(prefix="skill-eval-probe-"))  # /tmp: traversable by everyone
        try:
            control.chmod(0o755)
            (control / "f").write_text("x")
            assert _readable_by_another_uid(control), "the probe can read what is readable"
        finally:
            shutil.rmtree(control)
    assert subprocess.run(cmd, env=env, capture_output=True, timeout=300).returncode == 0
    metas = list((repo_copy / EVIDENCE / "kill").rglob("meta.json"))
    assert len(metas) == 4 and all(json.loads(m.read_text())["status"] == "complete" for m in metas)
    assert list(sandboxes.iterdir()) == []  # the dead run's sandboxes (unredacted output) are gone


def test_sigterm_to_the_runner_kills_its_agents(repo_copy: Path, tmp_path: Path):
    sandboxes = tmp_path / "sandboxes"
    script = write_script(repo_copy, "slow2", ["sleep 30"])
    env = {**os.environ, "SKILL_EVAL_SANDBOX_DIR": str(sandboxes), "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, str(REPO / "scripts/run_skill_eval.py"), "--root", str(repo_copy), "review-removed-export",
           "--agent", "scripted", "--model-server", f"scripted:{script}", "--no-trigger", "-k", "1", "--run-id", "term"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(c.startswith("sleep 30") for _s, c in _descendants(proc.pid).values()):
        time.sleep(0.05)
    procs = _descendants(proc.pid)
    assert any(c.startswith("sleep 30") for _s, c in procs.values())
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)
    time.sleep(2)
    assert _still_alive(procs) == []


@pytest.mark.parametrize("level", ["uid", "none"])
def test_weaker_isolation_levels_record_and_say_so(repo_copy: Path, monkeypatch, level: str):
    """Without bubblewrap the run still goes through the recorder, and meta names the weaker level."""
    monkeypatch.setenv(isolation.ISOLATION_ENV, level)
    if level == "uid" and isolation.available() == "none":
        pytest.skip("needs root and setpriv")
    script = write_script(repo_copy, f"weak-{level}", ["abicheck compare old/libdemo.so.1 new/libdemo.so.1 -o json=report.json"])
    assert run(repo_copy, script, f"weak-{level}") == 0
    b = bundle(repo_copy, f"weak-{level}")
    meta = json.loads((b / "meta.json").read_text())
    assert meta["isolation"] == level and meta["outcome"] == "completed"
    (call,) = calls_of(b)
    assert call["exit_code"] == 4 and len(call["inputs"]) == 2


def test_timeout_before_any_turn_is_an_infra_error(repo_copy: Path):
    script = write_script(repo_copy, "quick", ["true"])
    assert run(repo_copy, script, "t0", "--timeout", "0.05") == 1
    meta = json.loads((bundle(repo_copy, "t0") / "meta.json").read_text())
    assert meta["status"] == "incomplete" and meta["outcome"] == "infra_error"


def test_interrupt_kills_agents_and_seals_nothing(repo_copy: Path, tmp_path: Path):
    sandboxes = tmp_path / "sandboxes"
    script = write_script(repo_copy, "slow3", ["sleep 30"])
    env = {**os.environ, "SKILL_EVAL_SANDBOX_DIR": str(sandboxes), "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, str(REPO / "scripts/run_skill_eval.py"), "--root", str(repo_copy), "review-removed-export",
           "--agent", "scripted", "--model-server", f"scripted:{script}", "--no-trigger", "-k", "2", "-j", "2",
           "--run-id", "int"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    def sleepers() -> int:
        return sum(c.startswith("sleep 30") for _s, c in _descendants(proc.pid).values())

    while time.monotonic() < deadline and sleepers() < 2:
        time.sleep(0.05)
    assert sleepers() == 2  # both agents are mid-run
    procs = _descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)  # seconds alone; >30 s seen only late in a loaded full-suite run (under investigation)
    assert _still_alive(procs) == []
    assert not list((repo_copy / EVIDENCE / "int").rglob("meta.json")), "an interrupted run is not evidence"


def test_subject_is_refused_paths_the_agent_may_not_read(repo_copy: Path):
    """The tool runs outside the agent's view: naming a repository file would make it read the file for
    the agent, so such a call is refused (and recorded as refused)."""
    truth = repo_copy / "agent-evals/skills/ground_truth.json"
    script = write_script(repo_copy, "peek", [f"abicheck compare {truth} new/libdemo.so.1; echo exit=$?"])
    run(repo_copy, script, "peek")
    b = bundle(repo_copy, "peek")
    (call,) = calls_of(b)
    assert call["status"] == "spawn_failed" and call["exit_code"] is None
    assert b"may not read" in (b / "raw/stream.jsonl").read_bytes() and b"exit=2" in (b / "raw/stream.jsonl").read_bytes()


def test_unreachable_recorder_makes_the_run_incomplete(repo_copy: Path, monkeypatch):
    """Unisolated, the agent can remove the socket: its calls fail with the client's infra code, and the
    runner, finding the client's marker in the transcript, seals the run incomplete (infra_error)."""
    monkeypatch.setenv(isolation.ISOLATION_ENV, "none")
    script = write_script(repo_copy, "nosock", ["rm -f ../run/recorder.sock; abicheck compare old/libdemo.so.1 "
                                                "new/libdemo.so.1; echo exit=$?"])
    assert run(repo_copy, script, "nosock") == 1
    b = bundle(repo_copy, "nosock")
    meta = json.loads((b / "meta.json").read_text())
    assert meta["status"] == "incomplete" and meta["outcome"] == "infra_error" and meta["isolation"] == "none"
    assert b"exit=125" in (b / "raw/stream.jsonl").read_bytes() and calls_of(b) == []


def test_a_tree_the_runner_cannot_digest_is_sealed_as_the_agents_failure(repo_copy: Path, capsys):
    """A symlink left in the work tree makes the tree undigestable: sealing nothing would erase the run
    (and give the agent a fresh try on resume); it is sealed as an agent_error that grades failed."""
    script = write_script(repo_copy, "leave-a-link", ["ln -s /etc/passwd escape-link"])
    run(repo_copy, script, "link")
    b = bundle(repo_copy, "link")
    meta = json.loads((b / "meta.json").read_text())
    assert meta["status"] == "error" and meta["outcome"] == "agent_error", meta
    assert "escape-link is a symlink" in meta["status_reason"] and "/tmp/" not in meta["status_reason"]
    graded = grade(repo_copy, b, capsys)
    assert graded["passed"] is False and "bundle" in graded["failures"], graded
