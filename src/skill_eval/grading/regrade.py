"""One pass over the evidence tree: read each bundle once, feed freshness, the gate and grading.

Why: `pr` used to read and validate every meta.json three times (the gate's scan, the
grader's load, the separate freshness step) and re-parse the whole bundle per consumer.
Here each bundle directory is loaded once by `bundle.load`; its meta feeds the layout/slot
check and freshness, and the same loaded bundle is graded. Inside `sharing()` (what `pr`
uses) the result is memoised for the process, so the freshness step and the evidence step
share one pass.

Results come back in a fixed (sorted path) order. Above `POOL_MIN` bundles on a machine with
at least `POOL_CORES` cores the work is spread over forked workers (`ProcessPoolExecutor`, chunks
delivered in order), so output is byte-identical to the serial pass; below either, a pool's
start-up and pickling cost more than it saves, and the pass grades serially (measured on 2 cores:
1,000 bundles 1.1 s pooled against 1.8 s serial, 3,000 bundles 2.2 s against 3.1 s). Messages for broken
meta.json files are rebuilt by the original readers (a rare path), so every error line stays exactly
as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import memo as memo_mod
from skill_eval.core import seal
from skill_eval.grading import isolation
from skill_eval.grading.slimgrade import SlimGrade

LAYOUT_DEPTH = 5  # <skill|trigger>/<arm>/<run-id>/<item>/<k>
POOL_MIN = int(os.environ.get("SKILL_EVAL_POOL_MIN", "300"))
POOL_CORES = 2  # a single core grades serially (a pool on 2 cores: 3,000 bundles in ~0.8x the serial wall time)
CHUNK = 16


@dataclass(slots=True)
class Result:
    """What the gate and the freshness command need from one bundle directory."""

    where: str  # the bundle directory (a str crosses the pool's pipe ~5x cheaper than a Path)
    parts: tuple[str, ...]  # relative to the evidence root
    meta_ok: bool  # meta.json read and matched the schema
    slot_key: tuple[str, str, str, str, int] | None  # (kind, skill, arm, item, k) from meta
    run_id: str | None
    stale_label: str | None  # meta's skill or "trigger" (for `freshness`' re-record hint)
    stale: list[str]
    grade: Any  # graders.Grade, or None when not graded (outside the layout, unreadable meta)
    contamination: list[str] | None = None  # a comparison-arm bundle's reasons ([] clean); None: not a control
    fresh_meta: dict[str, Any] | None = None  # a forked worker's meta, for the parent's freshness check (then None)
    seal: tuple[str, str | None, str | None] | None = None  # (state, principal, reason) of its seal (core.seal)
    judgments: tuple[str, str | None, str | None] | None = None  # an ignored judgments file (grading/judgments.py)

    @property
    def path(self) -> Path:
        return Path(self.where)

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


def meta_paths(root: Path) -> list[str]:
    """Every meta.json below the evidence root, in Path order (the order every consumer reports in).

    Kept as strings (a Path costs ~4x the memory); sorting with "/" mapped below every other
    character orders them exactly as their Paths' part tuples would."""
    memo = memo_mod.shared_memo()
    if memo is not None and ("meta_paths", str(root)) in memo:
        cached: list[str] = memo[("meta_paths", str(root))]
        return cached
    if not root.is_dir():
        return []
    return _path_order(str(p) for p in root.rglob("meta.json"))


def _path_order(paths: Iterable[str]) -> list[str]:
    return sorted(paths, key=lambda s: s.replace("/", "\0"))


def units_of(found: Iterable[str], below: Iterable[str]) -> list[str]:
    """The units of a tree-walking pass, in its order, from fsio.scan_top's (found, below): the
    meta.json paths above bundle depth, and each bundle directory ending in "/"."""
    return _path_order([*found, *(d + "/" for d in below)])


def remember_meta_paths(root: Path, paths: list[str]) -> None:
    """Keep a listing of root's meta.json files (from a walk the caller made anyway) for this
    `sharing()` block, so `meta_paths` does not walk the tree again."""
    shared = memo_mod.shared_memo()
    if shared is not None:
        shared[("meta_paths", str(root))] = _path_order(paths)


# -- the per-bundle work (runs in the parent or in a forked worker) --------------------------
_STATE: dict[str, Any] = {}


def _one(meta_path: str, linkfree: bool = False, names: Collection[str] | None = None) -> Result:
    root: Path = _STATE["root"]
    cfg: Config = _STATE["cfg"]
    from skill_eval.grading import bundle as bundle_mod

    where = os.path.dirname(meta_path)
    path = Path(where)
    parts = _rel_parts(str(root), where) or path.relative_to(root).parts
    b = bundle_mod.load(path, max_bytes=cfg.max_bundle_file_bytes, linkfree=linkfree, names=names)
    meta = b.meta
    if meta is None:
        return Result(where, parts, False, None, None, None, [], None)
    key = slot_key(meta)
    deferred = _STATE["defer"]  # a forked worker: the parent checks freshness (it may not have the digests yet)
    stale = [] if deferred else list(_STATE["fresh"](meta))
    grade: Any = None
    judged = None
    if len(parts) == LAYOUT_DEPTH and _STATE["grade"]:
        from skill_eval.grading import judgments

        grade, found = judgments.graded(path, _STATE["catalog"](), signers_of(cfg), loaded=b)
        judged = (found.state, found.principal, found.reason) if found.ignored else None
        if _STATE["slim"]:
            grade = SlimGrade(grade)
    sealed = None
    if len(parts) == LAYOUT_DEPTH:
        v = seal.verify(path, "/".join(parts), signers_of(cfg))
        sealed = (v.state, v.principal, v.reason)
    return Result(where, parts, True, key, meta["run_id"], meta.get("skill") or "trigger", stale, grade,
                  contamination(cfg, b) if isolation.is_control(meta.get("arm")) else None,
                  meta if deferred else None, sealed, judged)


def signers_of(cfg: Config) -> tuple[seal.Signer, ...]:
    """The allowed signers at the base (content/trust.py: never the work tree's file), read once per loaded
    config (before a pool forks: `Pass._start`)."""
    from skill_eval.content import trust

    return trust.policy(cfg).signers


class _Refused(Exception):  # noqa: N818 - a private signal: the walk met an escaping symlink
    """Raised (and pickled across the pool) in place of the walk's InputError; the pass then re-runs
    fsio.scan_tree, which words the refusal exactly as the gate always did."""


def _unit(unit: str) -> list[Result]:
    """One unit of the pass: a meta.json path, or (ending in "/") a bundle directory to scan first."""
    if not unit.endswith("/"):
        return [_one(unit)]
    from skill_eval.core import fsio

    here = unit[:-1]
    links: list[str] = []
    names: set[str] = set()
    try:
        metas = fsio.scan_below(_STATE["real_root"], here, "meta.json", links, names)
    except Exception:  # noqa: BLE001 - a refusal (or anything else the walk met): Pass._refuse words it
        raise _Refused() from None
    # the bundle directory's own entries (names): its absent optional files need no open
    own = f"{here}/meta.json"
    return [_one(m, not links, names if m == own else None) for m in _path_order(metas)]


def _worker_init(parent: int) -> None:
    """A pool worker never outlives the pass's process (killed by SIGTERM or SIGKILL, its idle workers
    would wait for work forever, re-parented to init) and leaves Ctrl-C to it (`close()` stops the
    workers; a traceback per worker is not an error message)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG (Linux)
        linux = True
    except (OSError, AttributeError):
        linux = False
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
    if not linux:
        import threading
        import time

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()


def _rel_parts(root: str, where: str) -> tuple[str, ...] | None:
    """Path(where).relative_to(root).parts by string ops for a plain path below root, else None."""
    if not where.startswith(root + "/"):
        return None
    parts = tuple(where[len(root) + 1:].split("/"))
    return None if "" in parts or "." in parts else parts


def contamination(cfg: Config, b: Any) -> list[str]:
    """Why a loaded control-arm bundle is not a clean control ([] when clean): the shared rule
    (isolation.contamination) plus a fail-closed demand that the runner attested arm isolation.
    Computed in the pass from the bundle it already read (the gate used to read control bundles twice)."""
    if b.meta is None:
        return []  # unreadable: reported as such elsewhere
    reasons = isolation.contamination(b.meta, b.events or [], published=cfg.published)
    if isolation.is_control(b.meta.get("arm")) and not isinstance(b.meta.get("arm_isolation"), dict):
        reasons.append("meta.json has no arm_isolation attestation (discoverable/read skill files): "
                       "isolation from the skill under test cannot be shown")
    return reasons


def store_problems(root: Path, bundles: Iterable[str]) -> list[str]:
    """The evidence tree's content store checked whole (issue 34; core.stored): the store is exactly
    `<evidence>/.objects` (a `.objects` anywhere else is never read); anything in it that is not an object
    file (a FIFO, link, device, directory or misnamed file) is an error, and so is an object that no bundle's
    objects.json lists — bytes in the evidence tree that nothing grades (`skill-eval evidence compact` removes
    them). `bundles`: the bundles' paths relative to `root`."""
    from skill_eval.core import stored
    from skill_eval.core.errors import InputError

    store = os.path.join(root, stored.STORE)
    if not os.path.lexists(store):
        return []
    found = stored.audit(store)

    def shown(text: str) -> str:
        return text.replace(os.fspath(root), "evidence", 1)
    problems = [f"store: {shown(p)}: remove it (the store holds only <sha[:2]>/<sha256>.gz files)" for p in found.problems]
    referenced: set[str] = set()
    for rel in bundles:
        try:
            referenced.update(stored.index_of(os.path.join(root, rel)).values())
        except InputError:
            continue  # an unreadable objects.json fails that bundle's own seal and grade
    problems += [f"unreferenced: {shown(p)} is listed by no bundle's objects.json (`skill-eval evidence compact` "
                 "removes it)" for p in found.unreferenced(referenced)]
    return problems


class Pass:
    """One pass over an evidence tree: a Result per meta.json below `root`, in sorted path order.

    The units of work are the tree's meta.json paths when they are known (a listing the caller or
    the check's memo has), else `tree` = (repository root, path of `root` in it) is walked here in
    two halves: this process walks the levels above the bundle directories (`fsio.scan_top`) and
    every bundle directory is scanned (`fsio.scan_below`: escaping symlinks refused, nested
    meta.json found) by whoever grades it, just before grading. Above POOL_MIN units, on POOL_CORES
    cores or more, the work is shared out over forked workers (`ProcessPoolExecutor`, one per core,
    results in unit order); they leave freshness to this process (each Result carries its meta), so
    `start()` may run before the current digests exist: the evidence gate starts the pass, then
    selects the suite while the workers grade.
    """

    def __init__(self, cfg: Config, root: Path, fresh: Callable[[dict[str, Any]], list[str]], catalog: Callable[[], Any],
                 *, jobs: int | None = None, grade: bool = True, slim: bool = False,
                 listing: list[str] | None = None, tree: tuple[Path, str] | None = None):
        self.cfg, self.root, self.fresh, self.catalog = cfg, root, fresh, catalog
        self._jobs, self._grade, self._slim, self._tree = jobs, grade, slim, tree
        self._units: list[str] | None = None if listing is None and tree is not None else list(listing or ())
        self._refused = False
        self._pool: Any = None
        self._results: Iterable[list[Result]] = ()
        self._started = self._owns_state = self._failed = False

    def start(self) -> None:
        """Walk the upper levels and (above POOL_MIN units) fork the workers; once. A refusal met by
        the walk is raised when the pass is iterated (where the gate always raised it: after suite
        selection). If starting fails, nothing is left behind (no child, no module state) and the
        pass cannot be iterated."""
        if self._started:
            return
        self._started = True
        try:
            self._start()
        except BaseException:
            self._failed = True
            self.close()
            raise

    def _start(self) -> None:
        if self._units is None:
            from skill_eval.core import fsio

            assert self._tree is not None
            try:
                _, found, below = fsio.scan_top(self._tree[0], self._tree[1], "meta.json", LAYOUT_DEPTH - 1)
            except Exception:  # noqa: BLE001 - a refusal (or anything else the walk met): _refuse words it
                self._refused, found, below = True, [], []
            self._units = units_of(found, below)
        if not self._units:
            return
        if _STATE:  # workers read module state: two interleaved passes would read each other's
            raise RuntimeError("regrade.run: another pass is still being consumed in this process")
        jobs = self._jobs
        if jobs is None:
            cores = os.cpu_count() or 1
            jobs = cores if len(self._units) > POOL_MIN and cores >= POOL_CORES else 1
        parallel = jobs > 1 and hasattr(os, "fork")
        self._owns_state = True
        signers_of(self.cfg)  # parsed here, so a broken allowed_signers is one error, and workers inherit it
        _STATE.update(root=self.root, cfg=self.cfg, fresh=self.fresh, catalog=self.catalog,
                      grade=self._grade, slim=self._slim, defer=parallel,
                      real_root=Path(self._tree[0]).resolve() if self._tree is not None else None)
        if not parallel:
            self._results = map(_unit, self._units)
            return
        import concurrent.futures
        import multiprocessing

        from skill_eval.core import schemas
        from skill_eval.grading import bundle as bundle_mod

        if self._grade:
            self.catalog()  # build shared state before forking, so workers inherit it instead of rebuilding it
        schemas.prepare(set(bundle_mod.SCHEMAS.values()))  # compiled once here, not in every worker
        size = max(CHUNK, -(-len(self._units) // (jobs * 24)))
        self._pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                                                            initializer=_worker_init, initargs=(os.getpid(),))
        self._results = map(self._checked, self._pool.map(_unit, self._units, chunksize=size))

    def __iter__(self) -> Iterator[Result]:
        self.start()
        if self._failed:
            raise RuntimeError("regrade: this pass could not start")
        try:
            if self._refused:
                self._refuse()
            if not self._units:
                return
            for results in self._results:
                yield from results
        except _Refused:
            self._refuse()
        except Exception:
            # the gate walked the whole tree before grading anything: a refusal anywhere in it still
            # comes before an error met while grading (a broken catalog, a worker's failure)
            if self._tree is not None:
                from skill_eval.core import fsio

                fsio.scan_tree(self._tree[0], self._tree[1], "meta.json")
            raise
        finally:
            self.close()

    def _checked(self, results: list[Result]) -> list[Result]:
        """A worker's results as they arrive: freshness checked here, from the meta the worker sent."""
        fresh = self.fresh
        for r in results:
            if r.fresh_meta is not None:
                r.stale, r.fresh_meta = list(fresh(r.fresh_meta)), None
        return results

    def _refuse(self) -> None:
        """The walk met an escaping symlink: scan_tree names the one it meets first, as the gate always did."""
        from skill_eval.core import fsio
        from skill_eval.core.errors import InputError

        assert self._tree is not None
        top, _ = fsio.scan_tree(self._tree[0], self._tree[1], "meta.json")
        raise InputError("changed while it was checked (a symlink refused a moment ago is gone)", source=top,
                         fix="run the check again on a tree nothing writes to")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._results = ()
        if self._owns_state:
            _STATE.clear()
            self._owns_state = False
        self._units = []  # one pass per object: iterating again yields nothing


def run(cfg: Config, root: Path, fresh: Callable[[dict[str, Any]], list[str]], catalog: Callable[[], Any],
        *, jobs: int | None = None, grade: bool = True, slim: bool = False) -> Iterator[Result]:
    """Stream one Result per meta.json below `root` (listed by `meta_paths`), in sorted path order.

    `catalog` is a zero-argument getter (the catalog is built only if a bundle needs grading).
    `jobs`: worker processes (default: every core once there are more than POOL_MIN bundles and at
    least POOL_CORES cores).
    `slim`: keep grades as SlimGrade (gates and text output only).
    """
    yield from Pass(cfg, root, fresh, catalog, jobs=jobs, grade=grade, slim=slim, listing=meta_paths(root))


# -- sharing one pass between the freshness and evidence steps of `pr` ----------------------
# sharing one pass between the freshness and evidence steps of `pr`: the memo lives in skill_eval.core.memo
sharing = memo_mod.sharing  # re-exported: callers say `regrade.sharing()`
shared_memo = memo_mod.shared_memo


def evidence_labels() -> tuple[int, int, int]:
    """(scripted, unsigned, graded) bundles in the active pass memo: the labels of `pr`'s summary line."""
    scripted = unsigned = total = 0
    for key, results in (memo_mod.shared_memo() or {}).items():
        if isinstance(key, tuple) and key and key[0] == "survey":
            for r in results:
                if r.grade is not None:
                    total += 1
                    scripted += r.grade.meta.get("model_source") in ("scripted", "local-endpoint")
                    unsigned += r.seal is not None and r.seal[0] == "unsigned"
    return scripted, unsigned, total


is_sharing = memo_mod.is_sharing


def survey(cfg: Config, root: Path, *, cur: Any = None, grade: bool = True, slim: bool | None = None) -> Iterator[Result]:
    """The default pass (current freshness + grading) over `root`, as a stream of Results.

    Inside `sharing(passes=True)` the pass is computed once (every bundle graded, whatever
    `grade` says: the evidence step will need it) and replayed to later callers; otherwise the
    Results are streamed and not kept. `cur`: current digests the caller already has;
    `slim`: SlimGrades (default: the sharing block's flag, else False)."""
    memo = memo_mod.shared_memo()
    key = ("survey", str(root.resolve()))
    if memo is not None and key in memo:
        return iter(memo[key])
    if slim is None:
        slim = bool(memo and memo.get("slim"))
    if memo is not None and memo.get("passes"):
        results = list(run(cfg, root, default_freshness(cfg, cur), default_catalog(cfg), grade=True, slim=slim))
        memo[key] = results
        return iter(results)
    return run(cfg, root, default_freshness(cfg, cur), default_catalog(cfg), grade=grade, slim=slim)


def default_freshness(cfg: Config, cur: Any = None) -> Callable[[dict[str, Any]], list[str]]:
    """Freshness against the current digests, computed on first use (only when there is evidence)."""
    box: list[Any] = [cur] if cur is not None else []

    def prime() -> Any:
        from skill_eval.content import freshness

        if not box:
            box.append(freshness.current(cfg))
        return box[0]

    def fresh(meta: dict[str, Any]) -> list[str]:
        from skill_eval.content import freshness

        return freshness.check_bundle_freshness(cfg, meta, prime())

    fresh.prime = prime  # type: ignore[attr-defined]
    return fresh


def default_catalog(cfg: Config) -> Callable[[], Any]:
    """A getter of the grading Catalog, built on first use; inside `sharing()` one per Config for the
    whole check (the pass and the gates used to load the same content twice)."""
    box: list[Any] = []

    def get() -> Any:
        if not box:
            memo = memo_mod.shared_memo()
            key = ("catalog", id(cfg))
            if memo is not None and key in memo:
                box.append(memo[key][1])
            else:
                from skill_eval.grading.graders import Catalog

                box.append(Catalog(cfg))
                if memo is not None:
                    memo[key] = (cfg, box[0])  # holding cfg keeps its id unique for the memo's lifetime
        return box[0]

    return get
