"""Judging a release session before its stage is sealed (issue 28 item 1).

Dimensions 4 and 5 are judged (grading/judge.py: blinded, stamped, nothing written on failure)
and a release requires them. They are judged *before* the stage is rendered, so the stage
freezes each run's `judgments.json` as its own layer (`judgments_sha256`, apart from the raw
files the recorder sealed): a judgment added or changed after staging is refused on resume by
name, and the worksheet a person fills in is about judged evidence.

Why judgments.json is outside the bundle's seal (core/seal.UNSEALED): the recorder seals a run
when it ends, before any judge has seen it, and the judge holds no evidence-signing key. The
judgments layer is therefore attested by the stage (its seal, and the maintainer's signature
with `--sign`), not by the recorder; the bundle's own files stay verifiable as recorded.

The release judges with a panel of at least two models (commands/release.py refuses fewer):
their per-dimension agreement over the session is printed by `release stage`, and an item the
panel disagrees on (or of a dimension whose κ is below the floor) is written `needs_human_review`,
which the grader replays as not judged — so the stage shows that case `incomplete`, never a pass.

Every complete behavioural run in the session's raw tree that lacks a current-rubric judgment
is judged; a run that did not complete is not (it is incomplete whatever a judge says). A host
with no rubric.yaml grades no judged dimension, so there is nothing to judge.
"""

from __future__ import annotations

from pathlib import Path

from skill_eval.content.config import Config
from skill_eval.grading import judge as judge_mod
from skill_eval.grading.graders import Catalog
from skill_eval.reporting.release import snapshot as snap


def targets(cfg: Config, raw_root: Path, catalog: Catalog, dims: list[int], rejudge: bool = False) -> list[Path]:
    """Complete behavioural runs under a session's raw root still needing a judgment (sorted)."""
    version = catalog.rubric.version if catalog.rubric else None
    out = []
    for runs in snap.scan_raw(cfg, raw_root).values():
        for rel, meta, problem in runs:
            if meta is None or problem or meta.get("status") != "complete":
                continue
            path = raw_root / rel
            if rejudge or judge_mod.needs_judging(path, version, dims):
                out.append(path)
    return sorted(out)


def judge_session(cfg: Config, raw_root: Path, eps: list[judge_mod.Endpoint], dims: list[int] | None = None,
                  rejudge: bool = False, floor: float = 0.6) -> tuple[list[judge_mod.Judged], dict[int, judge_mod.Agreement]]:
    """Judge the session's runs with the panel `eps`: (per-bundle results, per-dimension agreement)."""
    catalog = Catalog(cfg)
    if catalog.rubric is None:  # the host grades no judged dimension (4/5 do not apply): nothing to judge
        return [], {}
    chosen = sorted(set(dims or judge_mod.JUDGED))
    return judge_mod.judge_panel(cfg, catalog, eps, targets(cfg, raw_root, catalog, chosen, rejudge), chosen, floor=floor)

