"""Run bad-input cases through the real CLI, one process per case, measuring each one.

    python tests/bad_input_harness.py MANIFEST REPO OUT.json CASE_ID...

A worker imports skill-eval and every command module once, then for each case puts the bad file
in place inside REPO (a scratch copy), forks, and the child runs `cli.main(argv)` exactly as the
console script would, with its own stdout/stderr files, an address-space limit and an alarm.
The worker waits with os.wait4, so every case gets its own exit status, wall time, CPU time and
peak RSS (ru_maxrss of that child alone), then restores the original file. Forking from a warm
worker keeps ~800 cases affordable on two cores while still giving each case a separate process.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from pathlib import Path

ADDRESS_SPACE_LIMIT = 2 * 1024**3  # a runaway case dies here instead of taking the machine down
HARD_TIMEOUT_S = 20  # SIGALRM in the child; the test's limit (5 s) is checked on the measured time
OVERSIZE = 32 * 1024 * 1024 + 1


def _case_plan(manifest: dict, data_dir: Path, case_id: str) -> tuple[list[str], str | None, bytes | None, str]:
    """(argv, target rel path or None, bytes to write or None, name the error must mention)."""
    kind, _, name = case_id.partition(":")
    if kind == "cli":
        spec = manifest["cli"][name]
        return spec["argv"], None, None, spec["names"]
    if kind == "oversize":
        target = manifest["oversize"][name]
        fmt = manifest["formats"][name]
        return fmt["argv"], target, None, fmt["names"]
    fmt_name = name.split("/", 1)[0]
    fmt = manifest["formats"][fmt_name]
    return fmt["argv"], fmt["target"], (data_dir / name).read_bytes(), fmt["names"]


def _child(repo: Path, argv: list[str], out: Path, err: Path) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))
        os.chdir(repo)
        for fd, path in ((1, out), (2, err)):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(handle, fd)
            os.close(handle)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child's own streams
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.argv = ["skill-eval", *argv]
        signal.alarm(HARD_TIMEOUT_S)
        from skill_eval.cli import main

        rc = main(argv)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - anything escaping main is itself a finding
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        rc = 99
    os._exit(rc)


def run_case(manifest: dict, data_dir: Path, repo: Path, scratch: Path, case_id: str) -> dict:
    argv, target, payload, names = _case_plan(manifest, data_dir, case_id)
    path = repo / target if target else None
    original = path.read_bytes() if path is not None and path.exists() else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if payload is None:  # oversize: a sparse file one byte over the cap
            with path.open("wb") as fh:
                fh.truncate(OVERSIZE)
        else:
            path.write_bytes(payload)
    out, err = scratch / "stdout", scratch / "stderr"
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        _child(repo, argv, out, err)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    if path is not None:
        if original is None:
            path.unlink()
        else:
            path.write_bytes(original)
    return {
        "case": case_id, "argv": argv, "names": names,
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "stderr": err.read_text(encoding="utf-8", errors="replace"),
        "stdout_head": out.read_text(encoding="utf-8", errors="replace")[:65536],  # check-skills findings live here
    }


def warm_up() -> None:
    """Import the CLI and every command module before forking (each child then starts warm)."""
    import importlib

    from skill_eval import cli
    from skill_eval.core import schemas

    for name, info in cli.COMMANDS.items():
        path = getattr(info, "module_path", f"skill_eval.commands.{info}")  # (older tables held module names)
        try:
            importlib.import_module(path)
        except ImportError:
            continue
    for path in sorted(schemas.schema_dir().glob("*.schema.json")):  # compiled validators are per schema name
        schemas.errors({}, path.name.removesuffix(".schema.json"))


def main(argv: list[str]) -> int:
    manifest_path, repo, out_path, *case_ids = argv
    manifest = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    data_dir = Path(manifest_path).parent
    scratch = Path(out_path).parent / f"scratch-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    warm_up()
    results = [run_case(manifest, data_dir, Path(repo), scratch, c) for c in case_ids]
    Path(out_path).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
