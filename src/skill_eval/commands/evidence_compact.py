"""`skill-eval evidence compact` / `evidence expand`: how committed bundles lie on disk (core.stored).

compact: every bundle under the evidence tree (and the calibration tree, when there is one) gets its
raw streams gzip-compressed and its captured artifacts moved into the tree's content store
(`<evidence>/.objects/`), where identical bytes captured by many runs are kept once. No logical byte
changes: seals, call records and facts still verify, and the graders read the same bytes. Objects no
bundle lists any more are removed. Idempotent; an interrupted run is finished by the next.

expand: the inverse, every file plain again (for a tool that reads bundle files directly).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_eval.core.output import emit

if TYPE_CHECKING:
    from skill_eval.content.config import Config


@dataclass
class Report:
    bundles: int = 0
    before: int = 0
    after: int = 0
    objects: int = 0
    store_bytes: int = 0
    removed_objects: int = 0
    unreferenced: list[str] = field(default_factory=list)  # the objects removed: listed by no bundle
    trees: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def per(n: int) -> int:
            return round(n / self.bundles) if self.bundles else 0

        return {"bundles": self.bundles, "bytes_before": self.before, "bytes_after": self.after + self.store_bytes,
                "bundle_bytes_after": self.after, "store_bytes": self.store_bytes, "objects": self.objects,
                "removed_objects": self.removed_objects, "unreferenced": self.unreferenced, "per_bundle_before": per(self.before),
                "per_bundle_after": per(self.after + self.store_bytes), "trees": self.trees}


def trees(cfg: Config) -> list[Path]:
    from skill_eval.grading import evidence

    out = [evidence.evidence_dir(cfg)]
    calibration = cfg.evals_dir / "calibration"
    if calibration.is_dir() and not calibration.is_symlink():
        out.append(calibration)
    return [t for t in out if t.is_dir()]


def _bundles(tree: Path) -> list[Path]:
    from skill_eval.reporting.scorecard.runs import bundle_dirs

    return [b for b in bundle_dirs(tree) if not any(p.startswith(".") for p in b.relative_to(tree).parts)]


def _store_size(store: Path) -> tuple[int, int]:
    n = size = 0
    for dirpath, _dirs, files in os.walk(store):
        for name in files:
            n += 1
            size += os.lstat(f"{dirpath}/{name}").st_size
    return n, size


def _audit(store: Path, root: Path) -> Any:
    """The store's contents (core.stored.audit); anything in it that is not an object file (a FIFO, a link,
    a device, a directory where an object belongs) is refused before a byte is written (issue 34)."""
    from skill_eval.core import stored

    found = stored.audit(os.fspath(store))
    if found.problems:
        rel = store.relative_to(root).as_posix()
        raise stored.StoredError(f"{rel}/ holds what is not an object file: " + "; ".join(found.problems[:5]),
                                 source=store, fix="remove it (a content store holds only <sha[:2]>/<sha256>.gz files), "
                                                   "then compact again")
    return found


def _prune(store: Path, bundles: list[Path], root: Path) -> list[str]:
    """Remove objects no bundle of the tree lists (after a re-record replaced the bundles that did); their paths."""
    from skill_eval.core import stored

    wanted = {sha for b in bundles for sha in stored.index_of(b).values()}
    gone = _audit(store, root).unreferenced(wanted)
    for path in gone:
        os.unlink(path)
    return [Path(p).relative_to(root).as_posix() for p in gone]


def compact(args: argparse.Namespace, cfg: Config) -> int:
    from skill_eval.core import stored

    report = Report()  # (no DIR: `evidence compact|expand` take none, argparse refuses one)
    for tree in trees(cfg):
        store = tree / stored.STORE
        bundles = _bundles(tree)
        if getattr(args, "action", None) == "expand":
            for b in bundles:
                stored.expand(b, cfg.max_bundle_file_bytes)
            report.bundles += len(bundles)
            continue
        _audit(store, cfg.root)
        store.mkdir(exist_ok=True)
        for n, b in enumerate(bundles, 1):
            saved = stored.compact(b, os.fspath(store), cfg.max_bundle_file_bytes)
            report.before += saved.before
            report.after += saved.after
            if not args.json and n % 500 == 0:
                print(f"compact: {n}/{len(bundles)} bundles of {tree.relative_to(cfg.root).as_posix()}", flush=True)
        removed = _prune(store, bundles, cfg.root)
        report.removed_objects += len(removed)
        report.unreferenced += removed
        count, size = _store_size(store)
        report.objects += count
        report.store_bytes += size
        report.bundles += len(bundles)
        report.trees.append(tree.relative_to(cfg.root).as_posix())
    if getattr(args, "action", None) == "expand":
        for tree in trees(cfg):
            store = tree / stored.STORE
            if store.is_dir() and not store.is_symlink():
                import shutil

                shutil.rmtree(store)
        emit(args, [f"expand: {report.bundles} bundle(s) plain again"], {"bundles": report.bundles})
        return 0
    j = report.to_json()
    emit(args, [f"compact: {report.bundles} bundle(s): {report.before:,} -> {j['bytes_after']:,} bytes "
                f"({j['per_bundle_before']:,} -> {j['per_bundle_after']:,} per bundle; {report.objects} shared "
                f"object(s), {report.removed_objects} unreferenced removed)",
                *(f"  removed (listed by no bundle): {rel}" for rel in report.unreferenced[:20])], j)
    return 0
