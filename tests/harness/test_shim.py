"""The recording shim client and the runner-side recorder (DESIGN §7): each test proves one promise
the graders rely on.

Most tests drive a fake "real tool" (a small script written here) so outputs, exit codes and
signals are exact; one test runs the real abicheck on two tiny gcc-built libraries. The client is
the generated script on PATH, exactly as an agent meets it; the recorder runs in this process.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skill_eval.core import schemas
from skill_eval.harness import shim
from skill_eval.harness.runner.client import install_client
from skill_eval.harness.runner.outputs import OutputOptions, Substituter, parse_outputs
from skill_eval.harness.runner.recorder import Recorder, record_call

ROOT = Path(__file__).resolve().parents[2]
SHIM_SOURCE = ROOT / "src" / "skill_eval" / "harness" / "shim.py"

FAKE_TOOL = textwrap.dedent(
    """\
    #!{python} -S
    # A fake subject: writes each -o/--output/--output-dir destination, then exits as told.
    import os, sys, time
    args, outs, dirs = sys.argv[1:], [], []
    code, sig, content, sleep, cat, marker, write = 0, None, "report", 0.0, None, None, True
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "--output"):
            outs.append(args[i + 1]); i += 1
        elif a.startswith("--output="):
            outs.append(a.split("=", 1)[1])
        elif a.startswith("-o") and len(a) > 2:
            outs.append(a[2:])
        elif a == "--output-dir":
            dirs.append(args[i + 1]); i += 1
        elif a in ("--exit", "--signal", "--content", "--sleep", "--cat", "--marker"):
            v = args[i + 1]; i += 1
            if a == "--exit": code = int(v)
            elif a == "--signal": sig = int(v)
            elif a == "--content": content = v
            elif a == "--sleep": sleep = float(v)
            elif a == "--cat": cat = v
            else: marker = v
        elif a == "--both":
            n = int(args[i + 1]); i += 1
            for _ in range(n * 16):
                os.write(1, b"o" * 65536); os.write(2, b"e" * 65536)
        elif a == "--stdin":
            while chunk := os.read(0, 65536): os.write(1, chunk)
        elif a == "--no-write":
            write = False
        elif a == "--yes":
            import signal; signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            while True:
                os.write(1, b"y" * 65536)
        i += 1
    if marker:
        with open(marker + ".tmp", "w") as fh: fh.write(str(os.getpid()))
        os.rename(marker + ".tmp", marker)
    if cat:
        with open(cat, "rb") as fh:
            while chunk := fh.read(1 << 20): os.write(1, chunk)
    def write_dir(d):
        os.makedirs(d, exist_ok=True)
        for name in ("a.json", "sub/b.json"):
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as fh: fh.write(content + ":" + name)
        sys.stderr.write("Per-library reports written to " + d + "\\n")
    if write:
        for v in outs:
            fmt, _, dest = v.partition("=") if "=" in v else ("", "", v)
            if dest == "-":
                sys.stdout.write(content + ":" + fmt + "\\n")
            elif dest.endswith("/") or os.path.isdir(dest):
                write_dir(dest)
            else:
                with open(dest, "w") as fh: fh.write(content + ":" + fmt)
                sys.stderr.write("Report written to " + dest + "\\n")
                sys.stdout.write("full path " + os.path.abspath(dest) + "\\n")
        for d in dirs:
            write_dir(d)
    sys.stdout.flush(); sys.stderr.flush()
    time.sleep(sleep)
    if sig:
        os.kill(os.getpid(), sig)
    sys.exit(code)
    """
)


def profile(name: str = "abicheck") -> SimpleNamespace:
    return SimpleNamespace(
        name=name,
        format_dest_options=("-o", "--output"),
        path_options=("--legacy-out",),
        directory_options=("--output-dir",),
        stdout_token="-",
    )


class Rig:
    """A sandbox with the shim client installed, served by a recorder in front of a fake real tool."""

    def __init__(self, tmp: Path, real: Path | None = None):
        self.tmp = tmp
        self.sandbox = tmp / "sandbox"
        self.sandbox.mkdir(exist_ok=True)
        self.record = tmp / "record"
        if real is None:
            real = tmp / "real" / "fake-abicheck"
            real.parent.mkdir(exist_ok=True)
            real.write_text(FAKE_TOOL.format(python=sys.executable))
            real.chmod(0o755)
        self.real = real
        base = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_EVAL_")}
        self.recorder = Recorder(self.record, profile(), real, self.sandbox, env=base)
        self.socket = tmp / "run" / "recorder.sock"
        self.recorder.listen(self.socket)
        install_client(tmp / "bin", "abicheck", self.socket)
        self.env = {**base, "PATH": f"{tmp / 'bin'}{os.pathsep}{base.get('PATH', '')}"}

    def run(self, *args: str, cwd: Path | None = None, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["abicheck", *args], cwd=cwd or self.sandbox, env=env or self.env, capture_output=True, timeout=60, **kw
        )

    def popen(self, *args: str, **kw) -> subprocess.Popen:
        return subprocess.Popen(["abicheck", *args], cwd=self.sandbox, env=self.env, **kw)

    def calls(self) -> list[dict]:
        """The records, each validated against schemas/call.schema.json."""
        records = self.recorder.calls()
        for rec in records:
            assert schemas.errors(rec, "call") == [], rec
        return records

    def snap(self, rel: str) -> bytes:
        return (self.record / rel).read_bytes()


@pytest.fixture
def rig(tmp_path: Path):
    r = Rig(tmp_path)
    yield r
    r.recorder.close()


# ---------------------------------------------------------------- streams


def test_100mb_binary_stdout_is_teed_byte_identically_and_streamed(rig: Rig, tmp_path: Path):
    """100 MiB of random bytes reach the caller unchanged, are persisted and digested, in bounded memory."""
    blob = tmp_path / "blob.bin"
    with blob.open("wb") as fh:
        for _ in range(100):
            fh.write(os.urandom(1 << 20))
    expected = hashlib.sha256(blob.read_bytes()).hexdigest()
    # Drain the shim from a helper process so its peak RSS (children only) is measurable.
    probe = textwrap.dedent(
        f"""
        import hashlib, resource, subprocess, sys, json
        p = subprocess.Popen(["abicheck", "--cat", {str(blob)!r}], stdout=subprocess.PIPE)
        h, n = hashlib.sha256(), 0
        while chunk := p.stdout.read1(1 << 20):
            h.update(chunk); n += len(chunk)
        rc = p.wait()
        print(json.dumps({{"sha": h.hexdigest(), "n": n, "rc": rc,
                          "maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}}))
        """
    )
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", probe], cwd=rig.sandbox, env=rig.env, capture_output=True, timeout=30)
    elapsed = time.monotonic() - t0
    result = json.loads(out.stdout)
    assert result["rc"] == 0 and result["n"] == 100 << 20
    assert result["sha"] == expected
    assert result["maxrss_kb"] < 64 * 1024, "the shim (or its tool) buffered the stream in memory"
    assert elapsed < 30
    (call,) = rig.calls()
    assert call["stdout"] == {"path": "captured/1.out", "sha256": expected, "bytes": 100 << 20}
    assert hashlib.sha256(rig.snap("captured/1.out")).hexdigest() == expected


def test_interleaved_large_stdout_and_stderr_do_not_deadlock(rig: Rig):
    res = rig.run("--both", "8")  # 8 MiB on each stream, alternating 64 KiB writes
    assert res.returncode == 0
    assert res.stdout == b"o" * (8 << 20) and res.stderr == b"e" * (8 << 20)
    (call,) = rig.calls()
    assert call["stdout"]["bytes"] == call["stderr"]["bytes"] == 8 << 20


def test_stdin_is_passed_through_to_the_child(rig: Rig):
    data = os.urandom(300_000)
    res = rig.run("--stdin", input=data)
    assert res.returncode == 0 and res.stdout == data
    assert rig.snap("captured/1.out") == data


@pytest.mark.parametrize("code", [0, 1, 2, 4, 16])
def test_exit_code_propagates(rig: Rig, code: int):
    res = rig.run("compare", "a", "b", "--exit", str(code))
    assert res.returncode == code
    (call,) = rig.calls()
    assert call["status"] == "complete" and call["exit_code"] == code and call["signal"] is None


def test_signal_death_is_128_plus_n_and_snapshots_nothing(rig: Rig):
    res = rig.run("compare", "-o", "json=report.json", "--signal", str(int(signal.SIGTERM)))
    assert res.returncode == 128 + signal.SIGTERM
    (call,) = rig.calls()
    assert call["exit_code"] == 128 + signal.SIGTERM and call["signal"] == signal.SIGTERM
    assert call["outputs"][0]["snapshot"] is None and call["outputs"][0]["sha256"] is None
    assert not (rig.sandbox / "report.json").exists(), "a killed call copies nothing back"
    assert not (rig.record / "captured" / "1.out.d").exists()


def test_broken_stdout_pipe_reaches_the_child(rig: Rig):
    """`abicheck ... | head -c 10`: the child meets the broken pipe, as it would without the shim."""
    p = rig.popen("--yes", stdout=subprocess.PIPE)
    assert p.stdout.read(10) == b"y" * 10
    p.stdout.close()
    assert p.wait(timeout=20) == 128 + signal.SIGPIPE
    (call,) = rig.calls()
    assert call["signal"] == signal.SIGPIPE and call["stdout"]["bytes"] >= 10


# ---------------------------------------------------------------- records


def test_killed_client_kills_its_tool_and_the_call_is_still_recorded(rig: Rig, tmp_path: Path):
    """An agent timeout that SIGKILLs the client: the tool must not outlive it; the record is complete."""
    marker = tmp_path / "child-started"
    p = rig.popen("compare", "old.so", "new.so", "--marker", str(marker), "--sleep", "30",
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not marker.exists():
        assert time.monotonic() < deadline, "fake tool never started"
        time.sleep(0.02)
    child_pid = int(marker.read_text())
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    deadline = time.monotonic() + 10
    while not rig.recorder.calls() or rig.recorder.calls()[0]["status"] == "provisional":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    with pytest.raises(ProcessLookupError):
        os.kill(child_pid, 0)
    (call,) = rig.calls()
    assert call["status"] == "complete" and call["signal"] == signal.SIGKILL
    assert call["argv"][:4] == ["abicheck", "compare", "old.so", "new.so"] and call["cwd"] == "."


def test_sixteen_concurrent_calls_get_unique_complete_records(rig: Rig):
    procs = [
        rig.popen(
            "compare",
            "-o",
            f"json=out{i}.json",
            "--content",
            f"call-{i}",
            "--sleep",
            "0.2",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(16)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0] * 16
    calls = rig.calls()
    assert [c["call"] for c in calls] == list(range(1, 17))
    assert all(c["status"] == "complete" for c in calls)
    seen = set()
    for c in calls:
        out = c["outputs"][0]
        i = int(out["requested"][3:-5])
        seen.add(i)
        assert rig.snap(out["snapshot"]) == f"call-{i}:json".encode()
        assert out["snapshot"].startswith(f"captured/{c['call']}.out.d/")
    assert seen == set(range(16))


def test_records_hold_no_machine_local_paths(rig: Rig):
    sub = rig.sandbox / "work" / "dir"
    sub.mkdir(parents=True)
    rig.run("compare", "-o", "json=r.json", "--output-dir", "out", cwd=sub)
    (call,) = rig.calls()
    assert call["cwd"] == "work/dir"
    text = json.dumps(call) + (rig.record / "calls" / "1.json").read_text()
    for local in (str(rig.tmp), os.path.realpath(rig.tmp)):
        assert local not in text
    assert (rig.record / "captured" / "1.out").read_bytes().count(os.fsencode(os.path.realpath(rig.record))) == 0


def test_cwd_outside_the_sandbox_is_refused(rig: Rig, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = rig.run("compare", "--marker", str(tmp_path / "ran"), cwd=elsewhere)
    assert res.returncode == 2 and len(res.stderr.decode().splitlines()) == 1 and b"outside the sandbox" in res.stderr
    assert not (tmp_path / "ran").exists()
    (call,) = rig.calls()
    assert call["cwd"] == "<outside-sandbox>" and call["status"] == "spawn_failed"


def test_output_outside_the_sandbox_is_refused(rig: Rig, tmp_path: Path):
    res = rig.run("compare", "-o", f"json={tmp_path / 'escaped.json'}")
    assert res.returncode == 2 and b"outside the sandbox" in res.stderr
    assert not (tmp_path / "escaped.json").exists()
    assert rig.calls()[0]["status"] == "spawn_failed"


def test_input_digests_before_and_after(rig: Rig):
    (rig.sandbox / "old").mkdir()
    (rig.sandbox / "old" / "lib.so").write_bytes(b"old")
    (rig.sandbox / "new.so").write_bytes(b"new")
    rig.run("compare", "old", "new.so", "--cat", "new.so", "missing/x.so", "plain-word")
    (call,) = rig.calls()
    by_arg = {i["arg"]: i for i in call["inputs"]}
    assert set(by_arg) == {2, 3, 5, 6}  # `compare` and `plain-word` name no path
    assert by_arg[2]["kind"] == "dir" and by_arg[2]["path"] == "old" and by_arg[2]["stable"]
    assert by_arg[3] == {"arg": 3, "path": "new.so", "kind": "file", "sha256": hashlib.sha256(b"new").hexdigest(),
                         "stable": True}
    assert by_arg[6]["kind"] == "missing" and by_arg[6]["sha256"] is None
    # a different directory content is a different digest
    (rig.sandbox / "old" / "lib.so").write_bytes(b"swapped")
    rig.run("compare", "old")
    assert rig.calls()[1]["inputs"][0]["sha256"] != by_arg[2]["sha256"]


def test_at_file_operand_is_digested_as_the_file_it_names(rig: Rig):
    """`--required-symbol @host/list.txt` reads host/list.txt: an agent that edits the list (and
    restores it afterwards) must leave a digest that is not the fixture's."""
    (rig.sandbox / "host").mkdir()
    (rig.sandbox / "host" / "list.txt").write_bytes(b"sym_a\n")
    (rig.sandbox / "@named").write_bytes(b"literal")
    rig.run("compare", "--required-symbol", "@host/list.txt", "--flag=@host/list.txt", "@named", "@gone/x.txt")
    (call,) = rig.calls()
    by_arg = {i["arg"]: i for i in call["inputs"]}
    want = {"path": "host/list.txt", "kind": "file", "sha256": hashlib.sha256(b"sym_a\n").hexdigest(), "stable": True}
    assert by_arg[3] == {"arg": 3, **want} and by_arg[4] == {"arg": 4, **want}
    assert by_arg[5]["path"] == "@named" and by_arg[5]["sha256"] == hashlib.sha256(b"literal").hexdigest()
    assert by_arg[6]["kind"] == "missing" and by_arg[6]["path"] == "gone/x.txt"


def test_input_changed_by_the_call_is_unstable(rig: Rig):
    (rig.sandbox / "in.json").write_text("before")
    rig.run("compare", "in.json", "--legacy-out", "x.txt", "-o", "json=in.json")
    (call,) = rig.calls()
    (entry,) = [i for i in call["inputs"] if i["path"] == "in.json"]
    assert entry["stable"] is False  # the call rewrote its own input


def test_only_benign_agent_variables_reach_the_tool(rig: Rig, tmp_path: Path):
    """The subject's environment is the runner's, its own fresh state directories in the store (never
    the agent's HOME or XDG_CACHE_HOME, where the agent could plant a poisoned cache), the locale and
    terminal variables, and only the agent variables the profile names: no prefix forwarding."""
    probe = tmp_path / "env-probe"
    probe.write_text(f"#!{sys.executable} -I\nimport os, json\nos.environ.pop(\"LC_CTYPE\", None)\nprint(json.dumps(dict(os.environ)))\n")
    probe.chmod(0o755)
    state = tmp_path / "rec2" / "subject"
    own = {"HOME": f"{state}/home", "XDG_CACHE_HOME": f"{state}/home/.cache", "XDG_CONFIG_HOME": f"{state}/home/.config",
           "XDG_DATA_HOME": f"{state}/home/.local/share", "XDG_STATE_HOME": f"{state}/home/.local/state",
           "TMPDIR": f"{state}/tmp"}
    agent_env = {"LD_PRELOAD": "/x.so", "ABICHECK_MODE": "y", "ABICHECK_CACHE": "/work/.cache", "LANG": "C",
                 "PATH": "/evil", "HOME": "/home/agent", "XDG_CACHE_HOME": "/home/agent/.cache", "LC_ALL": "xx"}
    rec = Recorder(tmp_path / "rec2", profile(), probe, rig.sandbox, env={"PATH": "/usr/bin:/bin"})
    try:
        record, out, _ = record_call(rec, ["abicheck"], rig.sandbox)
        assert record["status"] == "complete"
        seen = json.loads(out)
        assert seen == {"PATH": "/usr/bin:/bin", **own}  # record_call forwards nothing
        assert all(Path(v).is_dir() for v in own.values())
        reply = rec.run_call(["abicheck"], str(rig.sandbox), agent_env, *_devnull_fds(tmp_path))
        assert reply == b"X0\n"
        seen = json.loads((tmp_path / "rec2" / "captured" / "2.out").read_bytes())
        assert seen == {"PATH": "/usr/bin:/bin", **own, "LANG": "C"}  # no ABICHECK_* without the allow-list
    finally:
        rec.close()
    named = SimpleNamespace(**{**vars(profile()), "env": ("ABICHECK_MODE",)})
    rec = Recorder(tmp_path / "rec3", named, probe, rig.sandbox, env={"PATH": "/usr/bin:/bin"})
    try:
        assert rec.run_call(["abicheck"], str(rig.sandbox), agent_env, *_devnull_fds(tmp_path)) == b"X0\n"
        seen = json.loads((tmp_path / "rec3" / "captured" / "1.out").read_bytes())
        assert seen["ABICHECK_MODE"] == "y" and "ABICHECK_CACHE" not in seen  # by name, exactly
    finally:
        rec.close()


def _devnull_fds(tmp_path: Path) -> tuple[int, int, int]:
    return (os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_WRONLY), os.open(os.devnull, os.O_WRONLY))


# ---------------------------------------------------------------- output isolation


def test_failed_call_snapshots_nothing_and_keeps_the_previous_file(rig: Rig):
    assert rig.run("compare", "-o", "json=report.json", "--content", "first").returncode == 0
    res = rig.run("compare", "-o", "json=report.json", "--no-write", "--exit", "1")
    assert res.returncode == 1
    first, second = rig.calls()
    assert rig.snap(first["outputs"][0]["snapshot"]) == b"first:json"
    assert second["outputs"][0]["snapshot"] is None and second["outputs"][0]["sha256"] is None
    assert not (rig.record / "captured" / "2.out.d").exists()
    assert (rig.sandbox / "report.json").read_text() == "first:json"


def test_reused_output_path_keeps_each_calls_own_report(rig: Rig):
    rig.run("compare", "-o", "json=report.json", "--content", "one")
    rig.run("compare", "-o", "json=report.json", "--content", "two", "--exit", "4")
    c1, c2 = rig.calls()
    assert rig.snap(c1["outputs"][0]["snapshot"]) == b"one:json"
    assert rig.snap(c2["outputs"][0]["snapshot"]) == b"two:json"
    assert c1["outputs"][0]["sha256"] == hashlib.sha256(b"one:json").hexdigest()
    assert c2["outputs"][0]["requested"] == "report.json" and c2["exit_code"] == 4
    assert (rig.sandbox / "report.json").read_text() == "two:json"  # copied back: the agent sees its file


def test_output_forms_are_all_redirected(rig: Rig):
    res = rig.run(
        "compare",
        "--output=json=a.json",
        "-omarkdown=b.md",
        "--output",
        "sarif=c.sarif",
        "-o",
        "oneline=-",
        "--legacy-out",
        "d.txt",
    )
    assert res.returncode == 0
    (call,) = rig.calls()
    by_req = {o["requested"]: o for o in call["outputs"]}
    assert set(by_req) == {"a.json", "b.md", "c.sarif", "-", "d.txt"}
    assert by_req["-"]["kind"] == "stdout" and by_req["-"]["snapshot"] is None  # its bytes are captured/1.out
    assert b"report:oneline\n" in rig.snap("captured/1.out")
    for i, req in enumerate(("a.json", "b.md", "c.sarif")):
        assert by_req[req]["snapshot"] == f"captured/1.out.d/{i}/{req}"
        assert rig.snap(by_req[req]["snapshot"]) == (rig.sandbox / req).read_bytes()
    assert call["argv"][1:3] == ["compare", "--output=json=a.json"], "argv is recorded as the agent gave it"


def test_directory_dest_snapshots_only_what_this_call_wrote(rig: Rig):
    (rig.sandbox / "reports").mkdir()
    (rig.sandbox / "reports" / "old.json").write_text("from an earlier call")
    res = rig.run("compare", "olddir", "newdir", "-o", "json=reports/", "--content", "rel")
    assert res.returncode == 0
    (call,) = rig.calls()
    out = call["outputs"][0]
    assert out["kind"] == "dir" and out["snapshot"] == "captured/1.out.d/0"
    assert set(out["files"]) == {"a.json", "sub/b.json"}, "the earlier file is not attributed to this call"
    assert out["files"]["a.json"] == hashlib.sha256(b"rel:a.json").hexdigest()
    assert (rig.sandbox / "reports" / "sub" / "b.json").read_text() == "rel:sub/b.json"
    assert (rig.sandbox / "reports" / "old.json").exists()
    assert res.stderr.decode().strip().endswith("Per-library reports written to reports/")


def test_existing_directory_dest_without_slash_is_a_directory(rig: Rig):
    (rig.sandbox / "outdir").mkdir()
    rig.run("compare", "-o", "json=outdir")
    (call,) = rig.calls()
    assert call["outputs"][0]["kind"] == "dir" and set(call["outputs"][0]["files"]) == {"a.json", "sub/b.json"}


def test_output_dir_option(rig: Rig):
    res = rig.run("compare", "--output-dir", "release-reports", "--content", "rr")
    assert res.returncode == 0
    (call,) = rig.calls()
    out = call["outputs"][0]
    assert (out["option"], out["kind"], out["format"]) == ("--output-dir", "dir", None)
    assert rig.snap(out["snapshot"] + "/a.json") == b"rr:a.json"
    assert (rig.sandbox / "release-reports" / "a.json").read_text() == "rr:a.json"


def test_private_paths_are_substituted_back_and_counted(rig: Rig):
    res = rig.run("compare", "-o", "json=report.json", "--output-dir", "out")
    private = os.fsencode(os.path.realpath(rig.record))
    assert private not in res.stdout and private not in res.stderr
    assert b"Report written to report.json\n" in res.stderr
    assert b"Per-library reports written to out\n" in res.stderr
    assert b"full path report.json\n" in res.stdout
    (call,) = rig.calls()
    assert call["substitutions"] == {"stdout": 1, "stderr": 2}
    assert rig.snap("captured/1.err") == res.stderr and rig.snap("captured/1.out") == res.stdout


# ---------------------------------------------------------------- refusal and failure


def test_unreachable_recorder_is_an_infrastructure_error_not_a_tool_status(rig: Rig, tmp_path: Path):
    rig.recorder.close()
    res = rig.run("compare", "--marker", str(tmp_path / "ran"))
    assert res.returncode == shim.EXIT_INFRA == 125
    lines = res.stderr.decode().splitlines()
    assert len(lines) == 1 and "recorder is unreachable" in lines[0]
    assert not (tmp_path / "ran").exists() and rig.recorder.calls() == []


def test_recording_failure_is_reported_to_the_client_and_the_runner(rig: Rig, monkeypatch):
    from skill_eval.harness.runner import recorder

    def broken(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(recorder, "_write_atomic", broken)
    res = rig.run("compare", "--exit", "0")
    assert res.returncode == 125 and b"No space left" in res.stderr and len(res.stderr.splitlines()) == 1
    (call,) = rig.recorder.calls()
    assert call["status"] == "record_failed" and rig.recorder.failures


def test_request_without_the_protocol_is_no_call(rig: Rig):
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(rig.socket))
        s.sendall(b"00000005hello")
    time.sleep(0.2)
    assert rig.recorder.calls() == []


@pytest.mark.parametrize(("mode", "code"), [(0o644, 126), (None, 127)])
def test_unrunnable_real_tool_is_a_spawn_failure(tmp_path: Path, mode, code):
    real = tmp_path / "not-runnable"
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    (tmp_path / "sb").mkdir()
    rec = Recorder(tmp_path / "rec", profile(), real, tmp_path / "sb", env={})
    if mode is None:
        real.unlink()
    else:
        real.chmod(mode)
    fds = _devnull_fds(tmp_path)
    assert rec.run_call(["abicheck", "compare", "-o", "json=r.json"], str(tmp_path / "sb"), {}, *fds) == b"X%d\n" % code
    (call,) = rec.calls()
    assert call["status"] == "spawn_failed" and call["outputs"][0]["snapshot"] is None
    assert not (tmp_path / "rec" / "captured" / "1.out.d").exists()


def test_recorder_refuses_a_relative_or_client_real_tool(rig: Rig, tmp_path: Path):
    with pytest.raises(ValueError, match="absolute"):
        Recorder(tmp_path / "r", profile(), Path("relative/abicheck"), rig.sandbox, env={})
    with pytest.raises(ValueError, match="shim client"):
        Recorder(tmp_path / "r", profile(), tmp_path / "bin" / "abicheck", rig.sandbox, env={})


def test_record_call_api_records_without_a_client(rig: Rig):
    record, out, err = record_call(rig.recorder, ["abicheck", "compare", "-o", "json=r.json", "--exit", "4"], rig.sandbox)
    assert record["exit_code"] == 4 and record["call"] == 1 and record["status"] == "complete"
    assert b"Report written to r.json" in err and (rig.sandbox / "r.json").read_text() == "report:json"


# ---------------------------------------------------------------- units


def test_parse_outputs_forms():
    cfg = OutputOptions(("-o", "--output"), ("--out",), ("--output-dir",))
    argv = [
        "t",
        "-o",
        "json=a.json",
        "--output=markdown=b.md",
        "-ojunit=c.xml",
        "--output",
        "json=-",
        "-o",
        "snap.json",
        "--out",
        "p.txt",
        "--output-dir",
        "d",
        "-o",
        "json=x/",
        "-o",
        "json=",
        "--",
        "-o",
        "json=ignored.json",
    ]
    got = [(o.option, o.format, o.requested, o.kind, o.arg_index, o.prefix) for o in parse_outputs(argv, cfg, "/")]
    assert got == [
        ("-o", "json", "a.json", "file", 2, "json="),
        ("--output", "markdown", "b.md", "file", 3, "--output=markdown="),
        ("-o", "junit", "c.xml", "file", 4, "-ojunit="),
        ("--output", "json", "-", "stdout", 6, "json="),
        ("-o", None, "snap.json", "file", 8, ""),
        ("--out", None, "p.txt", "file", 10, ""),
        ("--output-dir", None, "d", "dir", 12, ""),
        ("-o", "json", "x/", "dir", 14, "json="),
    ]


@settings(max_examples=300, deadline=None)
@given(
    # small alphabets make overlapping keys, prefixes of keys and keys inside keys common
    keys=st.lists(st.binary(min_size=1, max_size=6).map(lambda b: bytes(b"ab/"[x % 3] for x in b)),
                  min_size=1, max_size=4, unique=True),
    data=st.binary(max_size=60).map(lambda b: bytes(b"ab/c"[x % 4] for x in b)),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=8),
)
def test_substitution_with_overlapping_keys_is_chunking_independent(keys, data, cuts):
    mapping = {k: b"<" + k + b">" for k in keys}
    whole = Substituter(mapping)
    expected = whole.feed(data) + whole.flush()
    s = Substituter(mapping)
    bounds = sorted({0, len(data), *[c for c in cuts if c <= len(data)]})
    assert b"".join(s.feed(data[a:b]) for a, b in zip(bounds, bounds[1:])) + s.flush() == expected
    assert s.count == whole.count


def test_substituter_holds_back_only_a_possible_key_prefix():
    s = Substituter({b"/rec/captured/1.out.d/0/r.json": b"r.json"})
    assert s.feed(b"Enter value: ") == b"Enter value: ", "text that cannot start a key is not delayed"
    assert s.feed(b"wrote /rec/capt") == b"wrote "
    assert s.feed(b"ured/1.out.d/0/r.json!") == b"r.json!"
    assert s.flush() == b"" and s.count == 1


def test_substituter_prefers_the_longest_key():
    s = Substituter({b"/p/1": b"A", b"/p/10": b"B"})
    assert s.feed(b"x /p/10/f /p/1/g") + s.flush() == b"x B/f A/g" and s.count == 2


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        st.sampled_from([b"/priv/0/r.json", b"/priv/0/r", b"/priv/1", b"x", b"/", b"\n", b"priv"]), max_size=40
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_substitution_is_chunking_independent(pieces, cuts):
    """Whatever the chunk boundaries, the output and the count equal a one-shot replacement."""
    mapping = {b"/priv/0/r.json": b"r.json", b"/priv/1": b"outdir"}
    data = b"".join(pieces)
    whole = Substituter(mapping)
    expected = whole.feed(data) + whole.flush()
    s = Substituter(mapping)
    bounds = sorted({0, len(data), *[c for c in cuts if c <= len(data)]})
    out = b"".join(s.feed(data[a:b]) for a, b in zip(bounds, bounds[1:])) + s.flush()
    assert out == expected and s.count == whole.count
    assert b"/priv/0/r.json" not in out


def test_client_imports_only_builtin_modules():
    """The client runs in the sandbox without the repository: standard library only, and on the hot path
    nothing that costs start-up time (scripts/bench_shim.py)."""
    tree = ast.parse(SHIM_SOURCE.read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names}
    assert names <= {"posix", "sys", "_socket", "_signal"}
    probe = "import sys; sys.argv = ['x']; exec(open(%r).read().replace('__main__', '__skip__')); print(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-IS", "-c", probe % str(SHIM_SOURCE)], capture_output=True, text=True)
    loaded = set(ast.literal_eval(out.stdout))
    assert loaded.isdisjoint({"os", "json", "re", "enum", "hashlib", "subprocess", "socket", "signal", "threading",
                              "skill_eval"}), loaded


def test_encode_request_round_trips(tmp_path: Path):
    import socket

    from skill_eval.harness.runner.recorder import _read_request

    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    req = shim.encode_request(["abicheck", "a b", "é", ""], b"/w", {b"K": b"v=1", b"E": b""})
    socket.send_fds(a, [req], [0, 1, 2])
    argv, cwd, env, fds = _read_request(b)
    assert (argv, cwd, env) == (["abicheck", "a b", "é", ""], "/w", {"K": "v=1", "E": ""}) and len(fds) == 3
    for fd in fds:
        os.close(fd)
    a.close()
    b.close()


# ---------------------------------------------------------------- the real subject


@pytest.fixture(scope="module")
def tiny_libs(tmp_path_factory) -> Path:
    """old.so/new.so where new drops an export (BREAKING): the committed fixture if present, else gcc-built."""
    d = tmp_path_factory.mktemp("libs")
    committed = ROOT / "agent-evals" / "skills" / "fixtures" / "removed-export"
    if (committed / "old" / "libdemo.so.1").is_file() and (committed / "new" / "libdemo.so.1").is_file():
        for side in ("old", "new"):
            shutil.copy(committed / side / "libdemo.so.1", d / f"{side}.so")
        return d
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("neither the committed fixture nor gcc is available")
    (d / "old.c").write_text("int demo_add(int a, int b) { return a + b; }\nint demo_version(void) { return 1; }\n")
    (d / "new.c").write_text("int demo_add(int a, int b) { return a + b; }\n")
    for side in ("old", "new"):
        subprocess.run([gcc, "-g", "-O0", "-shared", "-fPIC", "-o", str(d / f"{side}.so"), str(d / f"{side}.c")],
                       check=True)
    return d


@pytest.mark.slow
def test_real_abicheck_json_report_is_redirected_and_snapshotted(tmp_path: Path, tiny_libs: Path):
    real = Path(sys.executable).parent / "abicheck"
    if not real.exists():
        pytest.skip("abicheck is not installed next to this interpreter")
    rig = Rig(tmp_path, real=real)
    rig.recorder.env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    for side in ("old", "new"):
        shutil.copy(tiny_libs / f"{side}.so", rig.sandbox / f"{side}.so")
    res = rig.run("compare", "old.so", "new.so", "-o", "json=report.json")
    assert res.returncode == 4, res.stderr.decode()[-500:]  # demo_version removed: BREAKING
    rig.run("compare", "new.so", "new.so", "-o", "json=report.json")
    c1, c2 = rig.calls()
    r1 = json.loads(rig.snap(c1["outputs"][0]["snapshot"]))
    r2 = json.loads(rig.snap(c2["outputs"][0]["snapshot"]))
    assert (r1["verdict"], r2["verdict"]) == ("BREAKING", "NO_CHANGE")
    assert c1["exit_code"] == 4 and c2["exit_code"] == 0
    assert (rig.sandbox / "report.json").read_bytes() == rig.snap(c2["outputs"][0]["snapshot"])
    assert c1["outputs"][0]["sha256"] == hashlib.sha256(rig.snap(c1["outputs"][0]["snapshot"])).hexdigest()
    assert b"Report written to report.json" in res.stderr and c1["substitutions"]["stderr"] >= 1
    assert os.fsencode(os.path.realpath(rig.record)) not in res.stderr


def test_signal_sent_to_the_shim_is_forwarded_to_the_child(rig: Rig, tmp_path: Path):
    """A SIGTERM to the client goes through the recorder to the tool: 143, and the record is complete."""
    marker = tmp_path / "started"
    p = rig.popen("compare", "--marker", str(marker), "--sleep", "30", stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not marker.exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=10) == 128 + signal.SIGTERM
    (call,) = rig.calls()
    assert call["status"] == "complete" and call["signal"] == signal.SIGTERM
