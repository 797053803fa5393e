#!/usr/bin/env python3
"""Benchmark replay grading: synthesize N bundles (default 1000) and grade them all.

Bundles are written in the ARCHITECTURE.md format against this repository's scenarios
and fixtures (report side digests are the fixtures' real sha256), cycling through good
answers and the common bad shapes (false green, suppression, missing envelope, shallow
confident claim), so every grader path is exercised. Reports bundles/second for the
grading step alone (loading + all checks), excluding synthesis.

Usage: python scripts/bench_grading.py [-n 1000] [--root DIR] [--json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from skill_eval.content import config  # noqa: E402
from skill_eval.core.formats import FORMATS  # noqa: E402
from skill_eval.grading.golden import RecordedCall, RecordedOutput, envelope, file_input, write_bundle  # noqa: E402
from skill_eval.grading.graders import Catalog, grade_bundle  # noqa: E402

SHAPES = [
    # (scenario, report verdict, exit, extra argv, claim, tiers)
    ("review-removed-export", "BREAKING", 4, [], {"verdict": "BREAKING", "confident": True, "evidence": [1]}, ["elf", "dwarf"]),
    ("review-removed-export", "BREAKING", 4, [], {"verdict": "COMPATIBLE", "confident": True, "evidence": [1]}, ["elf", "dwarf"]),
    ("review-compatible-addition", "COMPATIBLE", 0, ["--policy", "sdk_vendor"],
     {"verdict": "COMPATIBLE", "confident": True, "evidence": [1]}, ["elf", "dwarf"]),
    ("review-field-rename", "API_BREAK", 2, [], None, ["elf", "dwarf"]),
    ("review-stripped-layout", "NO_CHANGE", 0, [], {"verdict": "NO_CHANGE", "confident": True, "evidence": [1]}, ["elf"]),
    ("review-stripped-layout", "NO_CHANGE", 0, [], {"verdict": "NO_CHANGE", "confident": False, "evidence": [1],
                                                    "uncertainty": {"kind": "evidence_too_shallow", "unresolved": ["no DWARF"]}}, ["elf"]),
]


def sha_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def synthesize(cfg: config.Config, catalog: Catalog, dest: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        scenario_id, verdict, code, extra, claim, tiers = SHAPES[i % len(SHAPES)]
        sc = catalog.scenarios[scenario_id]
        truth = catalog.truth[sc.fixture].record
        fx = cfg.evals_dir / "fixtures" / sc.fixture
        report = {"verdict": verdict, "evidence_tiers": tiers, "contract_coverage_failures": [],
                  "old_file": {"path": truth["old"], "sha256": sha_file(fx / truth["old"])},
                  "new_file": {"path": truth["new"], "sha256": sha_file(fx / truth["new"])},
                  "changes": [{"kind": "func_removed", "symbol": f"sym{j}"} for j in range(40)]}
        call = RecordedCall(["abicheck", "compare", truth["old"], truth["new"], *extra, "-o", "json=report.json"], code,
                            stderr=b"Report written to report.json\n",
                            outputs=[RecordedOutput("-o", "json", "report.json", "file", json.dumps(report).encode())],
                            inputs=[file_input(2, truth["old"], (fx / truth["old"]).read_bytes()),
                                    file_input(3, truth["new"], (fx / truth["new"]).read_bytes())])
        meta = {"schema_version": FORMATS["meta"], "kind": "behavioral", "scenario": sc.id, "skill": sc.skill, "arm": "skill-agent",
                "run_id": "bench", "k": i % cfg.k, "agent": {"name": "bench", "version": "1"}, "model": "scripted:bench",
                "adapter_tier": "1", "runner_version": "bench", "digests": {}, "observed_inputs": [],
                "started_at": "2026-11-30T00:00:00Z", "finished_at": "2026-11-30T00:00:01Z", "status": "complete",
                "isolation": "none", "outcome": "completed"}
        final = envelope(claim) if claim else "The library is API_BREAK.\n"
        paths.append(write_bundle(dest / f"b{i:05d}", meta=meta, calls=[call], final=final, subject=cfg.subject,
                                  events=[{"type": "skill_activated", "skill": sc.skill, "tier": "1"}]))
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1000, help="number of bundles (default 1000)")
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", type=Path, default=None, help="write the bundles here instead of a temp dir")
    args = ap.parse_args(argv)
    cfg = config.load(args.root)
    catalog = Catalog(cfg)
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        dest = args.keep or Path(tmp)
        t0 = time.perf_counter()
        paths = synthesize(cfg, catalog, dest, args.n)
        t1 = time.perf_counter()
        failures = 0
        for p in paths:
            failures += bool(grade_bundle(p, catalog).failures())
        t2 = time.perf_counter()
    result = {"bundles": len(paths), "synthesis_s": round(t1 - t0, 3), "grading_s": round(t2 - t1, 3),
              "bundles_per_second": round(len(paths) / (t2 - t1), 1), "bundles_with_failures": failures}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"graded {result['bundles']} bundles in {result['grading_s']} s: {result['bundles_per_second']} bundles/s "
              f"({failures} with failures; synthesis took {result['synthesis_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
