#!/usr/bin/env python3
"""Measure what recording a subject call costs: per-call overhead and tee throughput.

Why: every subject call an agent makes goes through the shim client and the runner's recorder,
so their start-up cost and streaming rate bound how much recording can distort a run (timeouts,
wall clock in usage.json). Issue 8's targets: overhead <= 1.5x the interpreter floor, tee >= 60 %
of a `cat | cat` pipe.

    python scripts/bench_shim.py [--calls 200] [--mb 200] [--json]

Per-call: the floor `python3 -I -S -c pass`, a trivial tool run directly, and the same tool through
the client + recorder (as production: setpriv --pdeathsig prefix), interleaved round by round;
medians reported, overhead = through-shim minus direct, as a ratio to the floor.
Tee: a tool that `cat`s --mb MiB of random bytes, drained through the shim (the recorder persists
and digests it), against `cat FILE | cat`; again with an `-o` output redirected (substitution on).
The recorder runs in a separate process, as it does in the runner (not in this drain loop's GIL).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from skill_eval.harness.runner import isolation  # noqa: E402
from skill_eval.harness.runner.client import install_client  # noqa: E402
from skill_eval.harness.runner.recorder import Recorder  # noqa: E402


def _profile(name: str) -> SimpleNamespace:
    return SimpleNamespace(name=name, format_dest_options=("-o", "--output"), path_options=(),
                           directory_options=("--output-dir",), stdout_token="-")  # noqa: S106


def _tool(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def _once(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t) * 1000


def _drain(argv: list[str], env: dict[str, str], cwd: Path, shell: bool = False) -> tuple[float, int]:
    t = time.perf_counter()
    proc = subprocess.Popen(argv if not shell else " ".join(argv), env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, shell=shell)
    total = 0
    assert proc.stdout is not None
    while chunk := proc.stdout.read1(1 << 20):
        total += len(chunk)
    proc.wait()
    return time.perf_counter() - t, total


def _forget(paths) -> None:
    """Delete a round's persisted copies at once. Why: this machine's page cache throttles writers hard
    once ~1 GB is dirty (measured: `cat | tee FILE` falls from ~700 to ~200 MiB/s), so without this every
    round after the first few would time the disk's writeback of the rounds before it, not the tee;
    deleting a file drops its unwritten pages. Done alike for coreutils `tee FILE` and the recorder."""
    for p in list(paths):
        p.unlink()


def serve(store: str, real: str, sandbox: str, sock: str) -> int:
    """--serve: a recorder process (the runner's role) until stdin closes."""
    rec = Recorder(Path(store), _profile("subject"), Path(real), Path(sandbox), env=dict(os.environ),
                   prefix=isolation.subject_prefix())
    rec.listen(Path(sock))
    print("ready", flush=True)
    sys.stdin.read()
    rec.close()
    return 0


class _Server:
    def __init__(self, root: Path, real: Path, sandbox: Path, name: str):
        sock = root / f"{name}.sock"
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(root / f"store-{name}"), str(real),
                                      str(sandbox), str(sock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == b"ready"
        install_client(root / f"bin-{name}", "subject", sock)
        self.path = str(root / f"bin-{name}")

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def run(calls: int, mb: int, tee_rounds: int = 3) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-shim-") as tmp:
        root = Path(tmp)
        sandbox = root / "sandbox"
        sandbox.mkdir()
        base = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_EVAL_")}
        trivial = _tool(root / "trivial", "exit 0")
        srv = _Server(root, trivial, sandbox, "trivial")
        env = {**base, "PATH": f"{srv.path}{os.pathsep}{base.get('PATH', '')}"}
        variants = {"floor": [sys.executable, "-I", "-S", "-c", "pass"], "direct": [str(trivial)], "shim": ["subject"]}
        samples: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(5):
            _once(["subject"], env, sandbox)  # warm caches
        for _ in range(calls):  # interleaved, so drift hits every variant alike
            for key, argv in variants.items():
                samples[key].append(_once(argv, env, sandbox))
        srv.stop()
        med = {k: round(statistics.median(v), 2) for k, v in samples.items()}
        result: dict = {"calls": calls, "python": sys.executable, "median_ms": med, "samples_ms": samples,
                        "overhead_ms": round(med["shim"] - med["direct"], 2),
                        "overhead_vs_floor": round((med["shim"] - med["direct"]) / med["floor"], 2)}

        blob = root / "blob.bin"
        with blob.open("wb") as fh:
            for _ in range(mb):
                fh.write(os.urandom(1 << 20))
        os.sync()  # the blob's own writeback must not land inside the timed rounds (see _forget)
        cat = _tool(root / "cat-tool", f"exec cat '{blob}'")
        srv = _Server(root, cat, sandbox, "tee")
        env = {**base, "PATH": f"{srv.path}{os.pathsep}{base.get('PATH', '')}"}
        rates: dict[str, list[float]] = {"cat_cat": [], "coreutils_tee": [], "shim": [], "shim_subst": []}
        captured = root / "store-tee" / "captured"
        for i in range(tee_rounds):
            secs, n = _drain(["cat", str(blob), "|", "cat"], env, sandbox, shell=True)  # noqa: S604 - the reference pipe
            rates["cat_cat"].append(n / 2**20 / secs)
            # the same persisting work in C (a new capture file per round, like the recorder's per call)
            secs, n = _drain(["cat", str(blob), "|", "tee", str(root / f"coreutils-tee-{i}.out")], env, sandbox, shell=True)  # noqa: S604
            rates["coreutils_tee"].append(n / 2**20 / secs)
            _forget(root.glob("coreutils-tee-*.out"))
            secs, n = _drain(["subject"], env, sandbox)
            assert n == mb << 20, f"shim teed {n} bytes, expected {mb << 20}"
            rates["shim"].append(n / 2**20 / secs)
            _forget(captured.glob("*.out"))
            secs, n = _drain(["subject", "-o", "json=report.json"], env, sandbox)
            assert n == mb << 20
            rates["shim_subst"].append(n / 2**20 / secs)
            _forget(captured.glob("*.out"))
        srv.stop()
        tee = {k: round(statistics.median(v), 1) for k, v in rates.items()}
        result["tee_mib_per_s"] = tee
        result["tee_samples_mib_per_s"] = rates
        result["tee_vs_cat_cat"] = round(tee["shim"] / tee["cat_cat"], 2)
        result["tee_subst_vs_cat_cat"] = round(tee["shim_subst"] / tee["cat_cat"], 2)
        result["coreutils_tee_vs_cat_cat"] = round(tee["coreutils_tee"] / tee["cat_cat"], 2)
        result["tee_vs_coreutils_tee"] = round(tee["shim"] / tee["coreutils_tee"], 2)
        return result


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == "--serve":
        return serve(*sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200, help="rounds of interleaved calls (default 200)")
    p.add_argument("--mb", type=int, default=200, help="tee payload in MiB (default 200)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args()
    res = run(args.calls, args.mb)
    if args.json:
        print(json.dumps(res, indent=2, sort_keys=True))
        return 0
    med = res["median_ms"]
    print(f"per call, median of {args.calls} interleaved rounds: floor (python3 -I -S -c pass) {med['floor']} ms, "
          f"direct {med['direct']} ms, through shim {med['shim']} ms")
    print(f"overhead {res['overhead_ms']} ms = {res['overhead_vs_floor']}x the floor (target <= 1.5x)")
    tee = res["tee_mib_per_s"]
    print(f"tee of {args.mb} MiB: cat|cat {tee['cat_cat']} MiB/s, shim {tee['shim']} MiB/s "
          f"({res['tee_vs_cat_cat']:.0%}), with substitution {tee['shim_subst']} MiB/s "
          f"({res['tee_subst_vs_cat_cat']:.0%}) (target >= 60 %); coreutils tee FILE {tee['coreutils_tee']} MiB/s "
          f"({res['coreutils_tee_vs_cat_cat']:.0%}: the persisting floor here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
