"""`skill-eval freshness`: reject evidence bundles recorded against other content."""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval import freshness, regrade, schemas, strict
from skill_eval.commands._common import load_config, plural
from skill_eval.errors import InputError
from skill_eval.output import emit

NAME = "freshness"
HELP = "check every evidence bundle's recorded digests against the current content (+ round trips)"
DESCRIPTION = freshness.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundles", nargs="*", type=Path, help="bundle directories (default: every bundle under the evidence root)")
    p.add_argument("--evidence", type=Path, default=None, help="evidence root (default <evals root>/evidence)")


def _one_bundle(cfg, cur: freshness.Current, b: Path, stale_skills: set[str]) -> list[str]:
    try:
        meta = schemas.validate(strict.load_json(b / "meta.json"), "meta", b / "meta.json")
    except InputError as exc:
        return [f"{b}: unreadable meta.json: {exc}"]
    found = freshness.check_bundle_freshness(cfg, meta, cur)
    if found:
        stale_skills.add(meta.get("skill") or "trigger")
    return [f"{b}: {p}" for p in found]


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    cur = freshness.current(cfg)
    problems: list[str] = [f"mapping: {p}" for p in freshness.check_mapping(cur)]
    root = args.evidence or cfg.evals_dir / "evidence"
    stale_skills: set[str] = set()
    if args.bundles:
        bundles = args.bundles
        for b in bundles:
            problems += _one_bundle(cfg, cur, b, stale_skills)
    else:  # the shared one-pass survey (inside `pr`, the evidence step reuses it)
        results = sorted((r for r in regrade.survey(cfg, root, cur=cur, grade=False) if r.visible), key=lambda r: r.path)
        bundles = [r.path for r in results]
        for r in results:
            if not r.meta_ok:  # rare: the original reader words the message
                problems += _one_bundle(cfg, cur, r.path, stale_skills)
                continue
            if r.stale:
                stale_skills.add(r.stale_label or "trigger")
            problems += [f"{r.path}: {p}" for p in r.stale]
    lines = [f"  {p}" for p in problems]
    if stale_skills:
        lines.append(f"  re-record evidence for: {', '.join(sorted(stale_skills))} (make eval-risk, then commit the new bundles)")
    lines.append(f"freshness: {'FAIL' if problems else 'ok'} — {plural(len(bundles), 'bundle')} checked, {len(cur.entries)} digests")
    emit(args, lines, {"ok": not problems, "problems": problems, "bundles": len(bundles), "stale_skills": sorted(stale_skills)})
    return 1 if problems else 0
