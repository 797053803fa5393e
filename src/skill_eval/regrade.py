"""One pass over the evidence tree: read each bundle once, feed freshness, the gate and grading.

Why: `pr` used to read and validate every meta.json three times (the gate's scan, the
grader's load, the separate freshness step) and re-parse the whole bundle per consumer.
Here each bundle directory is loaded once by `bundle.load`; its meta feeds the layout/slot
check and freshness, and the same loaded bundle is graded. Inside `sharing()` (what `pr`
uses) the result is memoised for the process, so the freshness step and the evidence step
share one pass.

Results come back in a fixed (sorted path) order. Above `POOL_MIN` bundles the work is spread
over a fork process pool (both cores here) with `imap` in order, so output is byte-identical
to the serial pass. Messages for broken meta.json files are rebuilt by the original readers
(a rare path), so every error line stays exactly as before.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval import bundle as bundle_mod
from skill_eval.config import Config

LAYOUT_DEPTH = 5  # <skill|trigger>/<arm>/<run-id>/<item>/<k>
POOL_MIN = int(os.environ.get("SKILL_EVAL_POOL_MIN", "300"))
CHUNK = 16


@dataclass(slots=True)
class Result:
    """What the gate and the freshness command need from one bundle directory."""

    path: Path
    parts: tuple[str, ...]  # relative to the evidence root
    meta_ok: bool  # meta.json read and matched the schema
    slot_key: tuple[str, str, str, str, int] | None  # (kind, skill, arm, item, k) from meta
    run_id: str | None
    stale_label: str | None  # meta's skill or "trigger" (for `freshness`' re-record hint)
    stale: list[str]
    grade: Any  # graders.Grade, or None when not graded (outside the layout, unreadable meta)

    @property
    def in_layout(self) -> bool:
        return len(self.parts) == LAYOUT_DEPTH

    @property
    def visible(self) -> bool:
        """Counted by `freshness` (which skips dot directories such as writers' temp dirs)."""
        return not any(p.startswith(".") for p in self.parts)


def slot_key(meta: dict[str, Any]) -> tuple[str, str, str, str, int]:
    if meta["kind"] == "trigger":
        return ("trigger", "trigger", meta["arm"], meta["prompt_id"], meta["k"])
    return ("behavioral", meta.get("skill") or "", meta["arm"], meta["scenario"], meta["k"])


def meta_paths(root: Path) -> list[Path]:
    """Every meta.json below the evidence root, sorted (the order every consumer reports in)."""
    if not root.is_dir():
        return []
    return sorted(root.rglob("meta.json"))


# -- the per-bundle work (runs in the parent or in a forked worker) --------------------------
_STATE: dict[str, Any] = {}


def _one(index: int) -> Result:
    root: Path = _STATE["root"]
    meta_path: Path = _STATE["paths"][index]
    cfg: Config = _STATE["cfg"]
    path = meta_path.parent
    parts = path.relative_to(root).parts
    b = bundle_mod.load(path, max_bytes=cfg.max_bundle_file_bytes)
    meta = b.meta
    if meta is None:
        return Result(path, parts, False, None, None, None, [], None)
    key = slot_key(meta)
    stale = list(_STATE["fresh"](meta))
    grade = None
    if len(parts) == LAYOUT_DEPTH and _STATE["grade"]:
        from skill_eval.graders import grade_bundle

        grade = grade_bundle(path, _STATE["catalog"](), loaded=b)
    return Result(path, parts, True, key, meta["run_id"], meta.get("skill") or "trigger", stale, grade)


def run(cfg: Config, root: Path, fresh: Callable[[dict[str, Any]], list[str]], catalog: Callable[[], Any],
        *, jobs: int | None = None, grade: bool = True) -> Iterator[Result]:
    """Stream one Result per meta.json below `root`, in sorted path order.

    `catalog` is a zero-argument getter (the catalog is built only if a bundle needs grading).
    `jobs`: worker processes (default: every core once there are more than POOL_MIN bundles).
    """
    paths = meta_paths(root)
    if not paths:
        return
    _STATE.update(root=root, paths=paths, cfg=cfg, fresh=fresh, catalog=catalog, grade=grade)
    if jobs is None:
        jobs = (os.cpu_count() or 1) if len(paths) > POOL_MIN else 1
    try:
        if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
            for i in range(len(paths)):
                yield _one(i)
            return
        if grade:
            catalog()  # build shared state before forking, so workers inherit it instead of rebuilding it
        getattr(fresh, "prime", lambda: None)()
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            yield from pool.imap(_one, range(len(paths)), chunksize=CHUNK)
    finally:
        _STATE.clear()


# -- sharing one pass between the freshness and evidence steps of `pr` ----------------------
_SHARED: dict[str, Any] | None = None


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """Within this block, `survey` computes the pass once per evidence root and reuses it, and
    `freshness.current` is computed once per Config (nothing on disk changes during a check).
    Nested blocks share the outermost memo."""
    global _SHARED
    if _SHARED is not None:
        yield
        return
    _SHARED = {}
    try:
        yield
    finally:
        _SHARED = None


def shared_memo() -> dict[Any, Any] | None:
    """The memo of the active `sharing()` block, or None outside one."""
    return _SHARED


def is_sharing() -> bool:
    return _SHARED is not None


def survey(cfg: Config, root: Path, *, cur: Any = None, grade: bool = True) -> list[Result]:
    """The default pass (current freshness + grading) over `root`, memoised inside `sharing()`.

    `cur`: current digests already computed by the caller. Inside `sharing()` every bundle is
    graded regardless of `grade` (the evidence step will need it)."""
    key = str(root.resolve())
    if _SHARED is not None and key in _SHARED:
        return _SHARED[key]
    grade = grade or _SHARED is not None
    results = list(run(cfg, root, default_freshness(cfg, cur), default_catalog(cfg), grade=grade))
    if _SHARED is not None:
        _SHARED[key] = results
    return results


def default_freshness(cfg: Config, cur: Any = None) -> Callable[[dict[str, Any]], list[str]]:
    """Freshness against the current digests, computed on first use (only when there is evidence)."""
    box: list[Any] = [cur] if cur is not None else []

    def prime() -> Any:
        from skill_eval import freshness

        if not box:
            box.append(freshness.current(cfg))
        return box[0]

    def fresh(meta: dict[str, Any]) -> list[str]:
        from skill_eval import freshness

        return freshness.check_bundle_freshness(cfg, meta, prime())

    fresh.prime = prime  # type: ignore[attr-defined]
    return fresh


def default_catalog(cfg: Config) -> Callable[[], Any]:
    box: list[Any] = []

    def get() -> Any:
        if not box:
            from skill_eval.graders import Catalog

            box.append(Catalog(cfg))
        return box[0]

    return get
