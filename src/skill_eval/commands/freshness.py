"""`skill-eval freshness`: reject evidence bundles recorded against other content."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from skill_eval.commands._common import load_config, plural
from skill_eval.content import freshness
from skill_eval.content.config import Config
from skill_eval.core import formats, fsio, schemas, strict
from skill_eval.core.errors import EXIT_CHECK_FAILED, EXIT_OK, InputError, SkillEvalError
from skill_eval.core.output import emit
from skill_eval.grading import evidence as evidence_mod
from skill_eval.grading import regrade, rerecord

FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)
DESCRIPTION = freshness.__doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundles", nargs="*", type=Path, help="bundle directories (default: every bundle under the evidence root)")
    p.add_argument("--evidence", type=Path, default=None, help="evidence root (default <evals root>/evidence)")
    p.add_argument("--verbose", action="store_true", help="list every stale bundle, not only the per-skill summary")
    p.add_argument("--defer", metavar="REASON", default=None,
                   help=f"write {rerecord.FILE}: defer the current stale evidence (merge stage only) while it is re-recorded")
    p.add_argument("--days", type=int, default=14, help=f"--defer: days until the deferral expires (max {rerecord.MAX_DAYS})")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    cur = freshness.current(cfg)
    other: list[str] = [f"mapping: {p}" for p in freshness.check_mapping(cur)]  # problems besides stale bundles
    root = evidence_mod.evidence_tree(cfg, args.evidence)  # never through a symlink leaving the repository
    if args.bundles:
        bundles = list(args.bundles)
        suspects = bundles
    else:  # the shared one-pass survey (inside `pr`, the evidence step reuses it); only stale or
        # unreadable bundles get the second, per-bundle look below (deferrals, moved digests, wording)
        results = sorted((r for r in regrade.survey(cfg, root, cur=cur, grade=False) if r.visible), key=lambda r: r.path)
        bundles = [r.path for r in results]
        suspects = [r.path for r in results if not r.meta_ok or r.stale]
    deferrals = rerecord.Deferrals(cfg, cur)
    stale: dict[str, list[str]] = {}  # skill (or "trigger") -> stale bundle lines
    moved: dict[str, set[str]] = {}  # skill (or "trigger") -> digests that moved under its bundles
    counts: dict[str, int] = {}
    stale_metas = []
    for b in suspects:
        try:
            meta = schemas.validate(formats.upgrade(strict.load_json(b / "meta.json"), "meta", b / "meta.json"), "meta", b / "meta.json")
        except InputError as exc:
            other.append(f"{b}: unreadable meta.json: {exc}")
            continue
        found = freshness.check_bundle_freshness(cfg, meta, cur)
        if not found or deferrals.excuses(meta, found):
            continue
        stale_metas.append(meta)
        who = meta.get("skill") or "trigger"
        stale.setdefault(who, []).extend(f"{_rel(cfg, b)}: {p}" for p in found)
        moved.setdefault(who, set()).update(rerecord.moved_keys(meta, cur))
        counts[who] = counts.get(who, 0) + 1
    other += deferrals.problems()
    problems = other + [i for items in stale.values() for i in items]
    if args.defer is not None:
        return _write_deferrals(args, cfg, cur, stale_metas)
    lines = []
    if stale:  # the fix first, one line per skill; per-bundle detail only with --verbose
        lines.append(f"  fix: re-record the evidence of {', '.join(sorted(stale))}: `make eval-risk` (skill-eval run --suite risk "
                     "--base <merge-base>), then commit the bundles — or, while that runs, defer it for review: "
                     "`skill-eval freshness --defer REASON` (writes " + rerecord.FILE + ")")
        for skill in sorted(stale):
            why = f"moved: {', '.join(sorted(moved[skill]))}" if moved[skill] else "see --verbose"
            lines.append(f"  {skill}: {plural(counts[skill], 'bundle')} stale ({why})")
    lines += [f"  {p}" for p in deferrals.pending_lines()]
    lines += [f"  {p}" for p in other]
    if args.verbose:
        lines += [f"  {i}" for items in stale.values() for i in items]
    elif stale:
        lines.append("  (per-bundle detail: skill-eval freshness --verbose)")
    lines.append(f"freshness: {'FAIL' if problems else 'ok'} — {plural(len(bundles), 'bundle')} checked, {len(cur.entries)} digests")
    emit(args, lines, {"ok": not problems, "problems": problems, "bundles": len(bundles), "stale_skills": sorted(stale),
                       "pending": deferrals.pending_lines()})
    return EXIT_CHECK_FAILED if problems else EXIT_OK


def _rel(cfg: Config, b: Path) -> str:
    try:
        return b.resolve().relative_to(cfg.root).as_posix()
    except ValueError:
        return str(b)


def _write_deferrals(args: argparse.Namespace, cfg: Config, cur: freshness.Current, stale_metas: list[dict[str, Any]]) -> int:
    import yaml

    if not stale_metas:
        raise SkillEvalError("no stale bundle to defer", fix="nothing to do: the evidence is fresh (or already deferred)")
    body = rerecord.entries_for(cfg, stale_metas, cur, args.defer, args.days)
    path = cfg.evals_dir / rerecord.FILE
    head = ("# Stale evidence being re-recorded (schemas/evidence_rerecord.schema.json): each entry is bound to the\n"
            "# current digest, expires, and must be removed once the evidence is re-recorded. Reviewed in the PR.\n")
    text = head + yaml.safe_dump(body, sort_keys=False, width=120)
    schemas.validate(strict.loads_yaml(text, path), "evidence_rerecord", path)
    fsio.write_file(cfg.root, path, text)  # atomic, never through a symlink
    keys = [e["key"] for e in body["rerecord"]]
    emit(args, [f"wrote {_rel(cfg, path)}: {', '.join(keys)} deferred until {body['rerecord'][0]['expires']} — commit it for review"],
         {"ok": True, "path": str(path), "rerecord": body["rerecord"]})
    return EXIT_OK
