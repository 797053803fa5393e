"""Measure `skill-eval --help` against the Python start-up floor (`python -I -S -c pass`).

The command table (cli.COMMANDS) holds every command's help, so `--help` imports no command
module; this script checks that it stays within 3x the bare interpreter start. Prints both
best-of-N times and the ratio; exits 1 when the ratio exceeds --max-ratio (default 3.0).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path


def _best_ms(cmd: list[str], runs: int, env: dict[str, str]) -> float:
    """The best of `runs` (start-up is a floor; slower runs measure the machine's other load)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--max-ratio", type=float, default=3.0)
    args = parser.parse_args()
    env = dict(os.environ)
    src = Path(__file__).resolve().parents[1] / "src"
    env["PYTHONPATH"] = f"{src}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(src)
    floor = _best_ms([sys.executable, "-I", "-S", "-c", "pass"], args.runs, env)
    helptime = _best_ms([sys.executable, "-m", "skill_eval", "--help"], args.runs, env)
    ratio = helptime / floor
    print(f"python start-up floor {floor:.1f} ms; skill-eval --help {helptime:.1f} ms; ratio {ratio:.2f} (max {args.max_ratio})")
    return 0 if ratio <= args.max_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
