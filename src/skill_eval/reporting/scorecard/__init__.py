"""The scorecard (DESIGN §11): committed evidence -> scorecard.json, scorecard.md, scorecard.html.

`runs` reads and re-grades the bundles; `audit`, `build` and the renderers are pure. The JSON is
validated against schemas/scorecard.schema.json before anything is written, and each file is
written atomically, so a reader never sees a half scorecard.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval import __version__
from skill_eval.content.config import Config
from skill_eval.core import fsio, schemas, strict
from skill_eval.core.errors import InputError
from skill_eval.grading.graders import Catalog
from skill_eval.reporting import lift
from skill_eval.reporting.scorecard import audit as audit_mod
from skill_eval.reporting.scorecard import build as build_mod
from skill_eval.reporting.scorecard import calibration as calibration_mod
from skill_eval.reporting.scorecard import html as html_mod
from skill_eval.reporting.scorecard import markdown as md_mod
from skill_eval.reporting.scorecard.runs import RunRecord, collect

FILES = ("scorecard.json", "scorecard.md", "scorecard.html")


@dataclass
class Result:
    card: dict[str, Any]
    records: list[RunRecord]


def compute(cfg: Config, evidence_root: Path | None = None, *, catalog: Catalog | None = None,
            calibration_root: Path | None = None) -> Result:
    """`calibration_root`: the A/A calibration tree to show (default: the committed one, but only
    when the evidence root is the default too — a scorecard of some other evidence tree shows none)."""
    if evidence_root is not None and not evidence_root.is_dir():
        raise InputError("evidence root is not a directory", source=evidence_root,
                         fix="pass the evidence directory (default: <evals root>/evidence)")
    catalog = catalog or Catalog(cfg)
    records, problems = collect(cfg, evidence_root, catalog=catalog)
    infos = [audit_mod.ScenarioInfo(s.id, s.skill, s.prompt, s.holdout) for s in catalog.scenarios.values()]
    texts = {name: audit_mod.skill_text(cfg.root / cfg.skills_source / name) for name in {s.skill for s in infos}}
    audit = audit_mod.audit(infos, records, texts)
    card = build_mod.build(records, lift.Settings.of(cfg.stats), k=cfg.k, cost_regression=cfg.thresholds.cost_regression,
                           audit=audit, problems=problems, generated_by=f"skill-eval {__version__}")
    if calibration_root is not None or evidence_root is None:
        card["calibration"] = calibration_mod.read(cfg, lift.Settings.of(cfg.stats), catalog=catalog, tree=calibration_root)
    schemas.validate(card, "scorecard", "scorecard.json")
    return Result(card, records)


def write_atomic(path: Path, text: str) -> None:
    fsio.write_output(path, text)


def write(card: dict[str, Any], out_dir: Path, root: Path | None = None) -> list[Path]:
    """Write the three files into out_dir. Inside the repository `root` (a relative out_dir is taken
    from it) every component is reached without following a symlink (fsio.write_file); a directory
    outside it is the user's explicit choice (fsio.write_output)."""
    texts = {"scorecard.json": strict.dumps_json(card), "scorecard.md": md_mod.render(card),
             "scorecard.html": html_mod.render(card)}
    inside = fsio.within(root, out_dir) if root is not None else None
    paths = []
    for name in FILES:
        if root is not None and inside is not None:
            paths.append(fsio.write_file(root, inside / name, texts[name]))
        else:  # outside the repository (a relative one still taken from root): as named
            where = root / out_dir if root is not None else out_dir
            where.mkdir(parents=True, exist_ok=True)
            write_atomic(where / name, texts[name])
            paths.append(where / name)
    return paths
