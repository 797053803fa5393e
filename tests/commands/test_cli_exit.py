"""cli's fast exit (FAST_EXIT commands end in exit_now when main is the process entry).

The real entry runs in a subprocess, in the form pip writes for the console script
(`sys.exit(main())` from `__main__`), next to a reference that calls `main(argv)` (never the
entry: the interpreter's usual teardown, i.e. the behaviour before the fast exit). Both carry
two probes on stderr: an atexit handler (must run either way) and a `__del__` of a module
global (runs only in the interpreter's teardown, so its absence shows the fast path was taken).
Exit code, stdout and stderr must be the same either way, also when the reader of stdout goes
away (`| head -c 10`) or was never there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_host, git, git_commit_all

from skill_eval import cli

SRC = str(Path(__file__).resolve().parents[2] / "src")
PROBES = """import atexit, os, sys
atexit.register(os.write, 2, b"@atexit\\n")
class _Probe:
    def __del__(self, write=os.write):
        write(2, b"@teardown\\n")
_probe = _Probe()
from skill_eval.cli import main
"""
ENTRY = PROBES + "if __name__ == '__main__':\n    sys.exit(main())\n"  # the console script's form
REFERENCE = PROBES + "sys.exit(main(sys.argv[1:]))\n"  # not the entry: the usual teardown


@pytest.fixture
def scripts(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in (("entry", ENTRY), ("reference", REFERENCE)):
        out[name] = tmp_path / f"{name}.py"
        out[name].write_text(text)
    return out


def run(script: Path, argv: list[str], stdout: str = "all", unbuffered: bool = False) -> tuple[int, bytes, bytes, list[str]]:
    """(exit code, stdout as read, stderr without the probes, the probes seen). `stdout`: "all" reads
    everything; "head" reads 10 bytes, then closes the pipe (`| head -c 10`); "closed" closes it first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update(PYTHONPATH=SRC, **({"PYTHONUNBUFFERED": "1"} if unbuffered else {}))
    proc = subprocess.Popen([sys.executable, str(script), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    if stdout == "all":
        out, err = proc.communicate(timeout=120)
    else:
        out = proc.stdout.read(10) if stdout == "head" else b""
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=120)
    probes = [line for line in err.decode().splitlines() if line.startswith("@")]
    err = b"".join(line for line in err.splitlines(keepends=True) if not line.startswith(b"@"))
    return proc.returncode, out, err, probes


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """This repository's host content (its evidence passes), a copy where one skill moved (every
    bundle of it stale), and a directory with no skill-eval.toml: made once for the module."""
    out = {}
    for name in ("fresh", "stale"):
        out[name] = copy_host(tmp_path_factory.mktemp(name))
    with (out["stale"] / "skills-src" / "abi-release-matrix" / "SKILL.md").open("a") as fh:
        fh.write("\nOne more line: every bundle of this skill is stale now.\n")
    for name in ("fresh", "stale"):  # the trust policy is read from the base's git objects (content/trust.py)
        git(out[name], "init", "-q")
        git_commit_all(out[name], "host")
    out["none"] = tmp_path_factory.mktemp("none")
    return out


@pytest.mark.parametrize(("host", "extra", "code"), [
    ("fresh", [], 0), ("fresh", ["--json"], 0),
    ("stale", ["--verbose"], 1), ("stale", ["--json"], 1),  # 18 KiB / 230 KiB: more than stdout's buffer
    ("none", [], 2), ("none", ["--json"], 2),  # no skill-eval.toml: a SkillEvalError raised in run
])
def test_entry_exits_early_with_the_same_code_and_output(scripts, hosts, host, extra, code):
    argv = ["evidence", "--root", str(hosts[host]), *extra]
    fast, ref = run(scripts["entry"], argv), run(scripts["reference"], argv)
    assert fast[0] == ref[0] == code
    assert fast[1] == ref[1] and fast[2] == ref[2]
    assert fast[3] == ["@atexit"]  # atexit handlers ran; no teardown followed
    assert ref[3] == ["@atexit", "@teardown"]
    if "--json" in extra:
        body = json.loads(fast[1])
        assert ("error" in body) == (code == 2)
    elif code == 2:
        assert fast[1] == b"" and fast[2].startswith(b"skill-eval: ") and fast[2].count(b"\n") == 1
    else:
        last = fast[1].decode().splitlines()[-1]
        assert last == "evidence: ok" if code == 0 else (last.startswith("evidence: ") and last.endswith(" problem(s)"))


@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize(("extra", "stdout"), [
    (["--json"], "head"),  # 216 KiB: the pipe fills, the reader goes away while it is written
    ([], "closed"),  # 183 bytes, still in stdout's buffer when the command returns (unless unbuffered)
])
def test_a_reader_that_goes_away_is_handled_as_before(scripts, hosts, extra, stdout, unbuffered):
    argv = ["evidence", "--root", str(hosts["fresh"]), *extra]
    fast = run(scripts["entry"], argv, stdout, unbuffered)
    ref = run(scripts["reference"], argv, stdout, unbuffered)
    assert fast[:3] == ref[:3]
    assert "@atexit" in fast[3]
    assert fast[1] == (b'{\n  "error' if stdout == "head" else b"")  # the JSON's first 10 bytes
    if stdout == "closed" and not unbuffered:  # the flush at exit fails: the interpreter reports it (exit 120)
        assert fast[0] == 120 and b"BrokenPipeError" in fast[2]
        assert fast[3] == ["@atexit", "@teardown"]  # exit_now left it to the usual teardown


def test_main_called_in_process_returns(hosts, monkeypatch, capsys):
    """Tests and embedding code call main in-process: never the entry, even with argv None."""
    called = []
    monkeypatch.setattr(cli, "exit_now", called.append)
    monkeypatch.setattr(sys, "argv", ["skill-eval", "registry", "--root", str(hosts["fresh"])])
    assert cli.main() == 0
    assert cli.main(["registry", "--root", str(hosts["fresh"])]) == 0
    assert called == []
    assert "registry" in capsys.readouterr().out


def test_only_commands_that_declare_it_exit_early():
    def fast(argv: list[str]) -> bool:
        args = cli.build_parser(argv[0]).parse_args(argv)
        return bool(args._fast_exit)

    assert fast(["evidence"]) and fast(["pr"]) and fast(["pack", "--check"]) and fast(["freshness"])
    assert not fast(["run"]) and not fast(["explain", "L0"]) and not fast(["digest", "x"])


GUARDED = """import os, sys, threading, time
from skill_eval import cli
case = sys.argv[1]
if case == "thread":
    threading.Thread(target=lambda: (time.sleep(0.3), os.write(1, b"@thread-done\\n"))).start()
elif case == "trace":
    sys.settrace(lambda *a: None)
cli.exit_now(5)
sys.stdout.write("@returned\\n")
"""


@pytest.mark.parametrize("case", ["thread", "trace"])
def test_exit_now_leaves_it_to_the_interpreter_when_it_would_differ(tmp_path, case):
    """A non-daemon thread still running (the interpreter waits for it), a tracer attached (coverage
    saves its data after the program): exit_now returns and the program goes on."""
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED)
    out = subprocess.run([sys.executable, str(script), case], capture_output=True, text=True, check=False,
                         env={**os.environ, "PYTHONPATH": SRC}, timeout=60)
    assert out.returncode == 0, out
    assert "@returned" in out.stdout
    assert ("@thread-done" in out.stdout) == (case == "thread")


def test_exit_now_ends_the_process_with_its_code(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(GUARDED.replace('case = sys.argv[1]', 'case = ""; print("@before")'))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False,
                         env={**os.environ, "PYTHONPATH": SRC}, timeout=60)
    assert (out.returncode, out.stdout) == (5, "@before\n")
