"""`skill-eval freshness`: reject evidence bundles recorded against other content."""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval import formats, freshness, schemas, strict
from skill_eval.commands._common import load_config, plural
from skill_eval.errors import EXIT_CHECK_FAILED, EXIT_OK, InputError
from skill_eval.output import emit

NAME = "freshness"
HELP = "check every evidence bundle's recorded digests against the current content (+ round trips)"
DESCRIPTION = freshness.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundles", nargs="*", type=Path, help="bundle directories (default: every bundle under the evidence root)")
    p.add_argument("--evidence", type=Path, default=None, help="evidence root (default <evals root>/evidence)")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    cur = freshness.current(cfg)
    problems: list[str] = [f"mapping: {p}" for p in freshness.check_mapping(cur)]
    root = args.evidence or cfg.evals_dir / "evidence"
    bundles = args.bundles or freshness.find_bundles(root)
    stale_skills: set[str] = set()
    for b in bundles:
        try:
            meta = schemas.validate(formats.upgrade(strict.load_json(b / "meta.json"), "meta", b / "meta.json"), "meta", b / "meta.json")
        except InputError as exc:
            problems.append(f"{b}: unreadable meta.json: {exc}")
            continue
        found = freshness.check_bundle_freshness(cfg, meta, cur)
        if found:
            stale_skills.add(meta.get("skill") or "trigger")
        problems += [f"{b}: {p}" for p in found]
    lines = [f"  {p}" for p in problems]
    if stale_skills:
        lines.append(f"  re-record evidence for: {', '.join(sorted(stale_skills))} (make eval-risk, then commit the new bundles)")
    lines.append(f"freshness: {'FAIL' if problems else 'ok'} — {plural(len(bundles), 'bundle')} checked, {len(cur.entries)} digests")
    emit(args, lines, {"ok": not problems, "problems": problems, "bundles": len(bundles), "stale_skills": sorted(stale_skills)})
    return EXIT_CHECK_FAILED if problems else EXIT_OK
