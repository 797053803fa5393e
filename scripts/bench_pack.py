#!/usr/bin/env python3
"""Benchmark: how pack generation and freshness scale.

Synthesizes a host repository with N skills x F files each (plus shared fragments cited
by half of them), one scenario per skill, and B evidence bundles whose meta.json carries
the current digests, then times: pack compute, pack write, pack --check, and freshness
over every bundle (meta.json read + schema validation + digest comparison + routing).

    python scripts/bench_pack.py [--skills 100] [--files 20] [--bundles 1000] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from skill_eval.content import config, freshness, pack  # noqa: E402
from skill_eval.core import schemas, strict

CONFIG = """\
schema_version = 1
[skills]
source = "skills-src"
published = [".claude/skills"]
[evals]
root = "evals"
k = 3
harness = ["evals/prompts"]
[subject]
name = "tool"
verdicts = ["OK", "BROKEN"]
green = ["OK"]
evidence_commands = ["compare"]
[subject.exit_codes]
0 = "green"
4 = "BROKEN"
[subject.report]
format = "json"
verdict_path = "verdict"
[subject.outputs]
format_dest = ["-o"]
[subject.surface]
cli_reference = "evals/cli.json"
files = ["evals/cli.json"]
[subject.invocation_classes.single-pair]
command = "compare"
"""


def synthesize(root: Path, n_skills: int, n_files: int) -> None:
    (root / "skill-eval.toml").write_text(CONFIG)
    shared = root / "skills-src/shared"
    shared.mkdir(parents=True)
    for i in range(10):
        (shared / f"frag{i}.md").write_text(f"fragment {i}\n" * 20)
    scenarios, cases = [], {}
    for s in range(n_skills):
        d = root / f"skills-src/skill-{s:03d}"
        (d / "references").mkdir(parents=True)
        cite = f"\nSee [f](../shared/frag{s % 10}.md).\n" if s % 2 == 0 else "\n"
        (d / "SKILL.md").write_text(f"---\nname: skill-{s:03d}\ndescription: Skill number {s} for widgets.\n---\n# S{s}\n{cite}")
        for f in range(n_files - 1):
            (d / "references" / f"ref{f:02d}.md").write_text(f"reference {f} of skill {s}\n" * 50)
        fx = root / f"evals/fixtures/case-{s:03d}"
        fx.mkdir(parents=True)
        (fx / "old.bin").write_bytes(bytes(range(256)) * 16)
        (fx / "new.bin").write_bytes(bytes(range(256)) * 16 + bytes([s % 256]))
        cases[f"case-{s:03d}"] = {"description": "x", "old": "old.bin", "new": "new.bin", "expected": "BROKEN", "expected_exit": 4,
                                  "expected_kinds": [], "min_evidence": [], "platforms": ["any"]}
        scenarios.append({"id": f"sc-{s:03d}", "skill": f"skill-{s:03d}", "category": "A", "status": "ready",
                          "prompt": "p", "fixture": f"case-{s:03d}", "invocation_class": "single-pair"})
    ev = root / "evals"
    (ev / "ground_truth.json").write_text(json.dumps({"schema_version": 1, "subject": "tool", "cases": cases}))
    (ev / "scenarios.yaml").write_text(json.dumps({"schema_version": 1, "scenarios": scenarios}))
    (ev / "trigger_corpus.yaml").write_text(json.dumps({"schema_version": 1, "prompts": [
        {"id": "p1", "prompt": "widgets", "expected_skill": "skill-000"}, {"id": "n1", "prompt": "sql", "expected_skill": None}]}))
    rubric = Path(__file__).resolve().parents[1] / "src/skill_eval/templates/init/agent-evals/skills/rubric.yaml"
    (ev / "rubric.yaml").write_text(rubric.read_text())
    (ev / "prompts").mkdir()
    (ev / "prompts/behavioral.md").write_text("{prompt}\n")
    (ev / "cli.json").write_text(json.dumps({"schema_version": 1, "tool": "tool", "version": "1", "commands": {"compare": {"options": ["-o"]}}}))


def write_bundles(cfg, cur, n: int) -> list[Path]:
    out = []
    skills = sorted(cur.skills)
    for b in range(n):
        skill = skills[b % len(skills)]
        sc = f"sc-{skill[-3:]}"
        meta = {"schema_version": 1, "kind": "behavioral", "scenario": sc, "skill": skill, "arm": "skill-agent",
                "run_id": "bench", "k": b // len(skills), "agent": {"name": "scripted", "version": "0"},
                "model": "scripted:x", "adapter_tier": "1", "runner_version": "0", "started_at": "t", "finished_at": "t",
                "status": "complete",
                "observed_inputs": [{"path": f"skills-src/{skill}/SKILL.md", "sha256": "0" * 64},
                                    {"path": f"evals/fixtures/case-{skill[-3:]}/old.bin", "sha256": "0" * 64},
                                    {"path": "evals/prompts/behavioral.md", "sha256": "0" * 64}]}
        keys = freshness.required_keys(meta, cur)
        meta["digests"] = {k: cur.digest(k) for k in keys}
        d = cfg.evals_dir / "evidence" / skill / "skill-agent" / "bench" / sc / str(meta["k"])
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps(meta))
        out.append(d)
    return out


def timed(fn):
    t = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skills", type=int, default=100)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--bundles", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        synthesize(root, args.skills, args.files)
        cfg = config.load(root)
        entries, t_compute = timed(lambda: pack.compute(cfg))
        _, t_write = timed(lambda: pack.write(cfg, entries))
        problems, t_check = timed(lambda: pack.check(cfg))
        assert not problems, problems
        cur, t_current = timed(lambda: freshness.current(cfg))
        bundles = write_bundles(cfg, cur, args.bundles)

        def fresh_all():
            bad = 0
            for b in bundles:
                meta = schemas.validate(strict.load_json(b / "meta.json"), "meta", b)
                bad += bool(freshness.check_bundle_freshness(cfg, meta, cur))
            return bad

        bad, t_fresh = timed(fresh_all)
        assert bad == 0
        result = {
            "skills": args.skills, "files_per_skill": args.files, "entries": len(entries), "bundles": len(bundles),
            "pack_compute_s": round(t_compute, 3), "pack_write_s": round(t_write, 3), "pack_check_s": round(t_check, 3),
            "current_digests_s": round(t_current, 3), "freshness_all_bundles_s": round(t_fresh, 3),
            "freshness_bundles_per_s": round(len(bundles) / t_fresh, 1),
        }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:28} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
