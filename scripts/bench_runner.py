#!/usr/bin/env python3
"""Benchmark: runner throughput at -j 1 vs -j N with the model-free scripted agent.

Copies this repository's host content to a temp dir, then records K bundles of one scenario
(scripted agent -> recording shim -> real abicheck -> sealed bundle) at each parallelism.

    python scripts/bench_runner.py [-k 8] [--jobs 1 4] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = ("skill-eval.toml", "skills-src", ".agents", ".claude", "agent-evals")
SCRIPT = "agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for part in PARTS:
            src = REPO / part
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, root / part)
        shutil.rmtree(root / "agent-evals/skills/evidence", ignore_errors=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        for j in args.jobs:
            cmd = [sys.executable, "-m", "skill_eval", "run", "--root", str(root), "review-removed-export", "--agent", "scripted",
                   "--model-server", f"scripted:{SCRIPT}", "--no-trigger", "-k", str(args.k), "-j", str(j), "--run-id", f"bench-j{j}", "--json"]
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - t
            counts = json.loads(proc.stdout)["counts"] if proc.stdout.strip() else {}
            results.append({"jobs": j, "bundles": args.k, "seconds": round(seconds, 2), "bundles_per_s": round(args.k / seconds, 2), "counts": counts})
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            print(f"-j {r['jobs']}: {r['bundles']} bundles in {r['seconds']} s = {r['bundles_per_s']} bundles/s {r['counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
