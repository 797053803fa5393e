#!/usr/bin/env python3
"""Measure what the recording shim costs: per-call overhead and tee throughput.

Why: the shim runs on every subject call an agent makes, so its start-up cost and its
streaming rate bound how much it can distort a run (timeouts, wall clock in usage.json).

    python scripts/bench_shim.py [--calls 200] [--mb 100] [--json]

Per-call overhead: a trivial fake real tool (`#!/bin/sh` + `exit 0`) is run --calls times
directly and through each wrapper style; median and p95 wall time are reported.
Tee throughput: a fake tool `cat`s an --mb file of random bytes; the shim tees it to a pipe
the benchmark drains (and persists + digests it); MB/s is reported, with the direct rate, and
again with an `-o` output redirected so the stream also passes the path substitution.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from skill_eval.shim import install_shim  # noqa: E402


def _profile(name: str) -> SimpleNamespace:
    return SimpleNamespace(
        name=name,
        real_env="SKILL_EVAL_REAL",
        format_dest_options=("-o", "--output"),
        path_options=(),
        directory_options=("--output-dir",),
        stdout_token="-",  # noqa: S106
    )


def _tool(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def _timed(argv: list[str], env: dict[str, str], cwd: Path, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        out.append((time.perf_counter() - t) * 1000)
    return out


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[max(0, int(round(0.95 * len(ordered))) - 1)], 2),
        "n": len(ordered),
    }


def _drain(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    t = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    total = 0
    assert proc.stdout is not None
    while chunk := proc.stdout.read1(1 << 20):
        total += len(chunk)
    proc.wait()
    return time.perf_counter() - t, total


def run(calls: int, mb: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-shim-") as tmp:
        root = Path(tmp)
        sandbox = root / "sandbox"
        sandbox.mkdir()
        trivial = _tool(root / "trivial", "exit 0")
        result: dict = {"calls": calls, "python": sys.executable}
        base = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_EVAL_")}
        result["direct"] = _stats(_timed([str(trivial)], base, sandbox, calls))
        for style in ("python", "sh"):
            env = {
                **base,
                **install_shim(
                    root / f"bin-{style}", _profile("subject"), trivial, root / f"rec-{style}", sandbox, style=style
                ),
            }
            _timed(["subject"], env, sandbox, 5)  # warm the bytecode cache
            result[f"shim_{style}"] = _stats(_timed(["subject"], env, sandbox, calls))
            result[f"shim_{style}"]["overhead_median_ms"] = round(
                result[f"shim_{style}"]["median_ms"] - result["direct"]["median_ms"], 2
            )

        blob = root / "blob.bin"
        with blob.open("wb") as fh:
            for _ in range(mb):
                fh.write(os.urandom(1 << 20))
        cat = _tool(root / "cat-tool", f"exec cat '{blob}'")
        secs, n = _drain([str(cat)], base, sandbox)
        result["tee_direct"] = {"mb": mb, "seconds": round(secs, 3), "mb_per_s": round(n / 2**20 / secs, 1)}
        env = {**base, **install_shim(root / "bin-tee", _profile("subject"), cat, root / "rec-tee", sandbox)}
        secs, n = _drain(["subject"], env, sandbox)
        assert n == mb << 20, f"shim teed {n} bytes, expected {mb << 20}"
        result["tee_shim"] = {"mb": mb, "seconds": round(secs, 3), "mb_per_s": round(n / 2**20 / secs, 1)}
        # the same, with an output redirected: the streams now go through path substitution
        secs, n = _drain(["subject", "-o", "json=report.json"], env, sandbox)
        assert n == mb << 20
        result["tee_shim_subst"] = {"mb": mb, "seconds": round(secs, 3), "mb_per_s": round(n / 2**20 / secs, 1)}
        return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200, help="calls per variant (default 200)")
    p.add_argument("--mb", type=int, default=100, help="tee payload in MiB (default 100)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args()
    res = run(args.calls, args.mb)
    if args.json:
        print(json.dumps(res, indent=2, sort_keys=True))
        return 0
    print(f"per-call wall time over {args.calls} calls (trivial fake tool)")
    print(f"{'variant':<14}{'median ms':>12}{'p95 ms':>10}{'overhead ms':>14}")
    for key in ("direct", "shim_python", "shim_sh"):
        s = res[key]
        print(f"{key:<14}{s['median_ms']:>12.2f}{s['p95_ms']:>10.2f}{s.get('overhead_median_ms', 0.0):>14.2f}")
    print(f"\ntee of {args.mb} MiB random stdout")
    for key in ("tee_direct", "tee_shim", "tee_shim_subst"):
        s = res[key]
        print(f"{key:<14}{s['seconds']:>10.3f} s{s['mb_per_s']:>10.1f} MiB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
