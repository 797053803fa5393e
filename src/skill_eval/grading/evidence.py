"""The evidence gate (DESIGN §5 "evidence completeness", §9.4): checked, never trusted.

1. The expected set comes from the selection rule (`selection.select` + `expected_bundles`): the risk suite in
   pr, full with --suite full, per arm the stage's profile requires (`[evals] arms`; behavioural scenarios for
   every required arm, trigger prompts for skill-agent only), in every `[[evals.matrix]]` cell.
2. `evidence/<skill|trigger>/<arm>/<run-id>/<item>/<k>/` is walked; meta.json is the authority and the path must
   agree with it. Missing, extra (expected by no suite or arm), duplicated (two bundles for one run key), stale
   (freshness), unreadable and contaminated bundles (a baseline/docs run that could discover or read the skill
   under test, or lacks the runner's `meta.arm_isolation` attestation) are rejected.
3. Every bundle is re-graded and the gates applied to skill-agent: pass^k for 2/6, baselines for 1/3 (4/5 at
   release), trigger thresholds; other arms' grades are lift evidence. A/A bundles (run id ending `-aa`) are
   checked like any bundle, never duplicated, missing or counted toward pass^k (the scorecard's noise floor).

Missing and stale evidence fail alike. `evidence-pending.yaml` names (kind, item) pairs with no evidence yet and
a reason: printed loudly, excusing only a *missing* bundle in the merge stage, and an error once it has evidence
or names nothing expected — so the list can only shrink.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_eval.content.config import Config, cell_of
from skill_eval.core import formats, fsio, schemas, seal, strict
from skill_eval.core.errors import SkillEvalError, message_of
from skill_eval.grading import baselines, gates, isolation, judgments, regrade
from skill_eval.grading import bundle as bundle_mod
from skill_eval.grading.graders import RECEIPT, ZERO_TOLERANCE_DEFAULT, Catalog, Grade, release_source_problem

if TYPE_CHECKING:
    from skill_eval.grading.rerecord import Deferrals

EVIDENCE = "evidence"  # below the evals root: Config.evidence_rel
PENDING = "evidence-pending.yaml"
RERECORD = "evidence-rerecord.yaml"  # = rerecord.FILE (tests/grading/test_perf_identity.py); literal: most hosts have none
LAYOUT_DEPTH = 5  # <skill|trigger>/<arm>/<run-id>/<item>/<k>
AA_SUFFIX = "-aa"


@dataclass(frozen=True, order=True, slots=True)
class Slot:
    kind: str
    skill: str  # scenario skill, or "trigger"
    arm: str
    item: str
    k: int


@dataclass
class Found:
    path: Path
    rel: str
    meta: dict[str, Any] | None
    slot: Slot | None
    problems: list[str] = field(default_factory=list)


@dataclass
class Report:
    suite: str
    stage: str
    expected: int = 0
    found: int = 0
    errors: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    grades: list[Grade] = field(default_factory=list)
    unsigned: int = 0  # bundles without a seal that the `warn` policy let through (labelled in every summary)
    signers: dict[str, int] = field(default_factory=dict)  # principal -> bundles it sealed
    ignored_judgments: list[str] = field(default_factory=list)  # judgments files that do not count (warn policy)

    @property
    def passed(self) -> bool:
        return not self.errors


def _memo_key(what: str, cfg: Config) -> tuple[str, str, str]:
    """The per-check memo's key for this host's evidence tree ("evidence_dir": its path, once walked
    whole and listed)."""
    return (what, str(cfg.root), cfg.evals_root)


def _early_pass(cfg: Config, slim: bool) -> regrade.Pass | None:
    """The default pass over this host's evidence tree, started (upper levels walked, workers forked)
    before suite selection, which needs nothing from the tree: the workers grade while it runs.
    None when the check's memo already lists the tree (`pr`'s freshness step walked it) or outside
    one check, and when the tree's path itself is refused (then `evidence_dir` raises that later,
    where it always did)."""
    memo = regrade.shared_memo()
    if memo is None or memo.get("passes") or _memo_key("evidence_dir", cfg) in memo:
        return None
    rel = cfg.evidence_rel
    try:
        top = fsio.repo_path(cfg.root, rel)
        early = regrade.Pass(cfg, top, regrade.default_freshness(cfg), regrade.default_catalog(cfg), slim=slim,
                             tree=(cfg.root, rel))
        early.start()  # on failure it leaves nothing behind
    except Exception:  # noqa: BLE001 - the usual path meets it again, in the usual order (selection's errors first)
        return None
    return early


def evidence_dir(cfg: Config) -> Path:
    """The evidence tree; a symlink leading outside the repository, on the way or inside it, is refused.

    Inside `regrade.sharing()` (one check) the tree is walked once: the same walk lists its
    meta.json files for `regrade.meta_paths`, and later calls reuse both."""
    memo = regrade.shared_memo()
    key = _memo_key("evidence_dir", cfg)
    if memo is not None and key in memo:
        cached: Path = memo[key]
        return cached
    top, metas = fsio.scan_tree(cfg.root, cfg.evidence_rel, "meta.json")
    if memo is not None:
        memo[key] = top
        regrade.remember_meta_paths(top, metas)
    return top


def evidence_tree(cfg: Config, path: Path | None = None) -> Path:
    """The evidence tree a command reads: the configured one (`evidence_dir`), or the one the user named
    (`--evidence`). A named path inside the repository gets the configured tree's check (no symlink
    leading outside the repository, on the way or inside the tree); one outside the repository is the
    user's explicit choice and is read as named."""
    if path is None:
        return evidence_dir(cfg)
    inside = fsio.within(cfg.root, os.path.abspath(path))  # named relative to the working directory
    return fsio.scan_tree(cfg.root, inside.as_posix())[0] if inside is not None else path


def slot_of(meta: dict[str, Any]) -> Slot:
    if meta["kind"] == "trigger":
        return Slot("trigger", "trigger", meta["arm"], meta["prompt_id"], meta["k"])
    return Slot("behavioral", meta.get("skill") or "", meta["arm"], meta["scenario"], meta["k"])


# (kind, skill, arm, item, k, cell): where one recorded run belongs
RunKey = tuple[str, str, str, str, int, str]


def run_key(slot: Slot, cell: str) -> RunKey:
    """A recorded run's place: its slot in one [[evals.matrix]] cell ("" when no cell is named: any single
    cell). Two runs with one key are the same run recorded twice. The evidence gate's duplicate check and
    the release stage (reporting/release/cells.py) both key runs by this, so they never disagree."""
    return (slot.kind, slot.skill, slot.arm, slot.item, slot.k, cell)


def meta_cell(meta: dict[str, Any]) -> str:
    """The matrix cell (agent/model label) of a run's meta.json (agent as recorded: {name, ...}) or of a
    grade's summary meta (agent: its name)."""
    agent = meta.get("agent")
    name = agent.get("name") if isinstance(agent, dict) else agent
    return cell_of(name, meta.get("model"), meta.get("scripted"))


def _read_meta(cfg: Config, meta_path: Path, parts: tuple[str, ...]) -> Found:
    """The original, message-exact reading of one layout-level meta.json (scan, and the rare
    path of the one-pass gate where the bundle loader could not read meta.json)."""
    f = Found(meta_path.parent, "/".join(parts), None, None)
    try:
        meta = formats.upgrade(strict.load_json(meta_path, max_bytes=cfg.max_bundle_file_bytes), "meta", meta_path)
        errs = schemas.errors(meta, "meta")
        if errs:
            raise SkillEvalError(f"does not match schemas/meta.schema.json: {errs[0]}")
        f.meta, f.slot = meta, slot_of(meta)
        _check_path(f, parts, meta["run_id"])
    except SkillEvalError as exc:
        f.problems.append(f"unreadable meta.json: {message_of(exc)}")
    return f


def _check_path(f: Found, parts: tuple[str, ...], run_id: str) -> None:
    assert f.slot is not None
    f.problems += _path_problems(parts, f.slot, run_id)


def _path_problems(parts: tuple[str, ...], slot: Slot, run_id: str) -> list[str]:
    want = (slot.skill, slot.arm, run_id, slot.item, str(slot.k))
    if parts != want:
        return [f"path says {'/'.join(parts)} but meta.json says {'/'.join(want)}"]
    return []


def _layout_problems(root: Path, metas: list[Path]) -> list[str]:
    return _layout_problems_of([m.parent.relative_to(root).parts for m in metas])


def _layout_problem(parts: tuple[str, ...], bundle_dirs: set[tuple[str, ...]]) -> list[str]:
    if len(parts) != LAYOUT_DEPTH and not (len(parts) > LAYOUT_DEPTH and parts[:LAYOUT_DEPTH] in bundle_dirs):
        return [f"extra: evidence/{'/'.join(parts)}/meta.json is not at <skill|trigger>/<arm>/<run-id>/<item>/<k>/"]
    return []


def _layout_problems_of(rels: list[tuple[str, ...]]) -> list[str]:
    problems = []
    bundle_dirs = {parts for parts in rels if len(parts) == LAYOUT_DEPTH}
    for parts in rels:
        if len(parts) != LAYOUT_DEPTH and not (len(parts) > LAYOUT_DEPTH and parts[:LAYOUT_DEPTH] in bundle_dirs):
            problems.append(f"extra: evidence/{'/'.join(parts)}/meta.json is not at <skill|trigger>/<arm>/<run-id>/<item>/<k>/")
    return problems


def scan(cfg: Config) -> tuple[list[Found], list[str]]:
    """Every bundle under evidence/, and layout problems (misplaced meta.json, stray files)."""
    root = evidence_dir(cfg)
    metas = [Path(m) for m in regrade.meta_paths(root)]
    found = [_read_meta(cfg, m, m.parent.relative_to(root).parts) for m in metas
             if len(m.parent.relative_to(root).parts) == LAYOUT_DEPTH]
    return found, _layout_problems(root, metas)


_NO_PROBLEMS: list[str] = []  # shared by every clean bundle (never appended to)


class _Seen:
    """What the gate keeps of one layout-level bundle while streaming the pass (small on purpose)."""

    __slots__ = ("rel", "slot", "problems", "stale", "grade", "contamination", "seal", "judgments")

    def __init__(self, rel: str, slot: Slot | None, problems: list[str], stale: list[str] | tuple[()], grade: Any,
                 contamination: list[str] | None = None, seal: tuple[str, str | None, str | None] | None = None,
                 judgments: tuple[str, str | None, str | None] | None = None):
        self.rel, self.slot, self.problems, self.stale, self.grade = rel, slot, problems, stale, grade
        self.contamination = contamination  # from the pass (None: not computed there)
        self.seal = seal  # (state, principal, reason) from the pass (None: not verified there)
        self.judgments = judgments  # an ignored judgments file: (state, principal, reason) (grading/judgments.py)


def _pass(cfg: Config, fresh: Callable[[dict[str, Any]], list[str]], catalog: Callable[[], Catalog],
          shared: bool, slim: bool, early: regrade.Pass | None = None) -> tuple[list[_Seen], list[str]]:
    """One pass: every layout-level bundle read once, with its freshness and its grade."""
    root = early.root if early is not None else evidence_dir(cfg)
    results: Iterable[regrade.Result] = early if early is not None else (
        regrade.survey(cfg, root) if shared else regrade.run(cfg, root, fresh, catalog, slim=slim))
    root_str = str(root)
    seen: list[_Seen] = []
    others: list[tuple[str, ...]] = []  # meta.json files not at bundle depth (rare): layout problems
    for r in results:
        if not r.in_layout:
            others.append(r.parts)
            continue
        if not r.meta_ok:  # rare: rebuild the exact message (and grade it if the strict reader disagrees)
            f = _read_meta(cfg, r.path / "meta.json", r.parts)
            graded = f.meta is not None
            grade = judgments.graded(f.path, catalog(), regrade.signers_of(cfg))[0] if graded else None
            seen.append(_Seen(f.rel, f.slot, f.problems, fresh(f.meta) if f.meta is not None else (), grade))
            continue
        rel = "/".join(r.parts)
        slot = Slot(*(sys.intern(v) if isinstance(v, str) else v for v in r.slot_key))  # type: ignore[arg-type, union-attr]  # meta_ok: slot_key is (str, str, str, str, int)
        if hasattr(r.grade, "share_path"):
            r.grade.share_path(root_str, rel)
        seen.append(_Seen(rel, slot, _path_problems(r.parts, slot, r.run_id or "") or _NO_PROBLEMS, r.stale or (),
                          r.grade, r.contamination, r.seal, r.judgments))
    if not others:  # the common case: no set of every bundle's parts (O(bundles) of short-lived memory)
        return seen, []
    bundle_dirs = {tuple(s.rel.split("/")) for s in seen}
    return seen, [p for parts in others for p in _layout_problem(parts, bundle_dirs)]


def _judgments_problems(cfg: Config, report: Report, f: _Seen, stage: str) -> list[str]:
    """An unsigned, mismatched or foreign judgments.json never counts (the grade never saw it): under
    `signatures = "require"` and at the release stage it fails, naming the bundle; else it is named."""
    if f.judgments is None:
        return []
    from skill_eval.content import trust

    _state, _principal, reason = f.judgments
    line = f"judgments: evidence/{f.rel}: {reason}; ignored (dimensions 4 and 5 stay not judged)"
    if trust.policy(cfg).signatures == "require" or stage == "release":
        return [line]
    report.ignored_judgments.append(line)
    return []


def _seal_problems(cfg: Config, report: Report, f: _Seen, stage: str) -> list[str]:
    """A forged or broken seal always fails, naming the bundle and the first differing file; an unsigned
    bundle fails under `signatures = "require"` and at the release stage, else it is counted."""
    if f.seal is None:
        return []
    state, principal, reason = f.seal
    if state == "invalid":
        return [f"forged: evidence/{f.rel}: {reason}"]
    if state == "signed":
        report.signers[principal or "?"] = report.signers.get(principal or "?", 0) + 1
        return []
    from skill_eval.content import trust

    why = trust.policy(cfg).unsigned_problem(f.rel, stage, reason)
    if why is not None:
        what = "a seal no base key can verify" if reason == seal.NO_TRUST_ROOT else "no seal.json/seal.sig"
        return [f"unsigned: evidence/{f.rel}: {what} ({why}; record with {seal.KEY_ENV} set, see docs/SIGNING.md)"]
    report.unsigned += 1
    return []


def load_pending(cfg: Config) -> list[dict[str, str]]:
    path = fsio.repo_path(cfg.root, f"{cfg.evals_root}/{PENDING}")
    if not path.exists():
        return []
    raw = formats.upgrade(strict.load_yaml(path), "evidence_pending", path)
    pending: list[dict[str, str]] = schemas.validate(raw, "evidence_pending", path)["pending"]
    return pending


def _default_selection() -> tuple[Callable[..., Any], Callable[..., Any]]:
    try:
        from skill_eval.content import selection
    except ImportError as exc:  # pragma: no cover - selection ships with the package
        raise SkillEvalError(f"suite selection is unavailable ({exc})") from None
    return selection.select, selection.expected_bundles


def _default_freshness(cfg: Config) -> Callable[[dict[str, Any]], list[str]]:
    return regrade.default_freshness(cfg)


_ORIGINAL_DEFAULT_FRESHNESS = _default_freshness


def _meta_of(cfg: Config, rel: str) -> dict[str, Any]:
    """A stale bundle's meta.json, read again only when a deferral might excuse it (rare)."""
    meta: dict[str, Any] = strict.load_json(evidence_dir(cfg) / rel / "meta.json")
    return meta


def _deferrals(cfg: Config, stage: str) -> Deferrals | None:
    """Re-record deferrals (rerecord.py), or None when the host has none (no extra digest work, and
    rerecord is not even imported)."""
    if not (cfg.evals_dir / RERECORD).exists():
        return None
    from skill_eval.content import freshness
    from skill_eval.grading import rerecord

    return rerecord.Deferrals(cfg, freshness.current(cfg), stage)


def _slots(cfg: Config, suite_obj: Any, expected_fn: Callable[..., Any], arms: tuple[str, ...]) -> set[Slot]:
    return {Slot(e.kind, e.skill, e.arm, e.item_id, e.k) for e in expected_fn(cfg, suite_obj, arms=arms)}


def _all_arms(cfg: Config) -> tuple[str, ...]:
    """Every arm some profile requires: a bundle of one of them is never "extra", whatever the stage."""
    return tuple(dict.fromkeys(a for names in cfg.arms.values() for a in names))


def is_aa(rel: str) -> bool:
    """An A/A calibration bundle (`skill-eval run --aa`): its run id (path-checked against meta) ends in -aa."""
    parts = rel.split("/")
    return len(parts) == LAYOUT_DEPTH and parts[2].endswith(AA_SUFFIX)


def contamination_of(cfg: Config, path: Path) -> list[str]:
    """Why a control-arm bundle is not a clean control ([] when clean): the shared rule
    (isolation.contamination) plus a fail-closed demand that the runner attested arm isolation."""
    return regrade.contamination(cfg, bundle_mod.load(path, max_bytes=cfg.max_bundle_file_bytes))


def check(cfg: Config, suite: str = "risk", base: str | None = None, stage: str = "merge", *,
          select_fn: Callable[..., Any] | None = None, expected_fn: Callable[..., Any] | None = None,
          freshness_fn: Callable[[dict[str, Any]], list[str]] | None = None, catalog: Catalog | None = None,
          keep_reasons: bool = True) -> Report:
    """`keep_reasons=False`: report.grades are SlimGrades (statuses and failures; enough for the
    gates and text output) so memory stays flat over thousands of bundles."""
    with regrade.sharing(slim=not keep_reasons):  # current digests computed once for selection and freshness
        return _check(cfg, suite, base, stage, select_fn=select_fn, expected_fn=expected_fn, freshness_fn=freshness_fn,
                      catalog=catalog, slim=not keep_reasons)


def _check(cfg: Config, suite: str, base: str | None, stage: str, *, select_fn: Callable[..., Any] | None,
           expected_fn: Callable[..., Any] | None, freshness_fn: Callable[[dict[str, Any]], list[str]] | None,
           catalog: Catalog | None, slim: bool) -> Report:
    shared = freshness_fn is None and catalog is None and _default_freshness is _ORIGINAL_DEFAULT_FRESHNESS
    fresh_cache: list[Callable[[dict[str, Any]], list[str]]] = [freshness_fn] if freshness_fn else []

    def fresh(meta: dict[str, Any]) -> list[str]:
        if not fresh_cache:  # computing current digests is costly: only when there is evidence
            fresh_cache.append(_default_freshness(cfg))
        return fresh_cache[0](meta)

    def prime() -> None:
        if not fresh_cache:
            fresh_cache.append(_default_freshness(cfg))
        getattr(fresh_cache[0], "prime", lambda: None)()
    fresh.prime = prime  # type: ignore[attr-defined]
    catalog_box: list[Catalog] = [catalog] if catalog is not None else []

    def get_catalog() -> Catalog:
        if not catalog_box:
            catalog_box.append(regrade.default_catalog(cfg)())  # the pass's own (one per check)
        return catalog_box[0]
    report = Report(suite, stage)
    early = _early_pass(cfg, slim) if shared else None
    try:
        if select_fn is None or expected_fn is None:  # imported once the workers grade (it needs nothing of theirs)
            sel, exp = _default_selection()
            select_fn, expected_fn = select_fn or sel, expected_fn or exp
        chosen = select_fn(cfg, suite, base)
        # Expected: the stage's required arms (evals.arms). Not extra: any arm some profile requires.
        expected = _slots(cfg, chosen, expected_fn, cfg.required_arms(stage))
        full = _slots(cfg, chosen if suite == "full" else select_fn(cfg, "full", None), expected_fn, _all_arms(cfg))
        report.expected = len(expected) * max(1, len(cfg.cells(stage)))  # every slot in every matrix cell
        found, layout = _pass(cfg, fresh, get_catalog, shared, slim, early)
    finally:
        if early is not None:  # consumed by _pass (then a no-op), or selection failed before it
            early.close()
    return _judge(cfg, report, found, layout, expected, full, stage, get_catalog)


def _judge(cfg: Config, report: Report, found: list[_Seen], layout: list[str], expected: set[Slot], full: set[Slot],
           stage: str, get_catalog: Callable[[], Catalog]) -> Report:
    errors = report.errors
    errors += layout
    errors += regrade.store_problems(evidence_dir(cfg), [f.rel for f in found])  # .objects/ whole (issue 34)
    report.found = len(found)

    # [[evals.matrix]]: every expected bundle in every cell of the stage's profile ("" = no matrix)
    cells = cfg.cells(stage)
    # A/A calibration bundles (run id ending -aa): checked like any bundle, never counted toward the gates
    aa = [f.slot is not None and is_aa(f.rel) for f in found]
    runs = _judge_bundles(cfg, report, found, aa, full, cells, stage)
    by_slot = _judge_runs(report, runs, full)
    _judge_pending(cfg, report, expected, full, cells, runs, by_slot, stage)
    catalog = get_catalog()
    _judge_grades(cfg, report, found, aa, stage)
    _quality_gates(cfg, report, catalog, cells, stage)
    return report


def _judge_bundles(cfg: Config, report: Report, found: list[_Seen], aa: list[bool], full: set[Slot],
                   cells: tuple[str, ...], stage: str) -> dict[RunKey, list[_Seen]]:
    """Each bundle's own problems (unreadable, seal, judgments, cell, contamination); its recorded runs by key."""
    errors = report.errors
    # by slot's fields (+ cell): a plain tuple hashes in C (Slot's generated __hash__/__eq__ are Python calls)
    runs: dict[RunKey, list[_Seen]] = {}
    for f, is_aa_run in zip(found, aa, strict=True):
        for p in f.problems:
            errors.append(f"unreadable: evidence/{f.rel}: {p}")
        errors += _seal_problems(cfg, report, f, stage) + _judgments_problems(cfg, report, f, stage)
        slot = f.slot
        if slot is None:
            continue
        if is_aa_run:
            if slot not in full:
                errors.append(f"extra: evidence/{f.rel} is an A/A run of a slot no suite expects (unknown item, arm or k)")
        else:
            cell = _cell(f.grade) if cells else ""
            if cells and cell not in cells:
                errors.append(f"extra: evidence/{f.rel} was recorded in cell {cell}, which [[evals.matrix]] does not "
                              f"list for this profile (cells: {', '.join(cells)})")
            fields = run_key(slot, cell)
            same = runs.get(fields)
            if same is None:
                runs[fields] = [f]
            else:
                same.append(f)
        if f.grade is not None and isolation.is_control(slot.arm):
            reasons = f.contamination if f.contamination is not None else contamination_of(cfg, evidence_dir(cfg) / f.rel)
            for why in reasons:
                errors.append(f"contaminated: evidence/{f.rel}: {why}")
    return runs


def _judge_runs(report: Report, runs: dict[RunKey, list[_Seen]], full: set[Slot]) -> dict[Slot, list[_Seen]]:
    """Duplicated runs (one key, several bundles) and extra ones (no suite expects the slot); the runs by slot."""
    by_slot: dict[Slot, list[_Seen]] = {}
    for fields, fs in sorted(runs.items()):
        slot = Slot(*fields[:5])
        by_slot.setdefault(slot, []).extend(fs)
        if len(fs) > 1:
            where = f" in cell {fields[5]}" if fields[5] else ""
            report.errors.append(f"duplicated: {slot.kind} {slot.item} [{slot.arm}] k={slot.k}{where} has {len(fs)} "
                                 "bundles: " + ", ".join(f"evidence/{f.rel}" for f in fs))
        if slot not in full:
            report.errors.append(f"extra: evidence/{fs[0].rel} is not expected by any suite (unknown item, arm or k)")
    return by_slot


def _judge_pending(cfg: Config, report: Report, expected: set[Slot], full: set[Slot], cells: tuple[str, ...],
                   runs: dict[RunKey, list[_Seen]], by_slot: dict[Slot, list[_Seen]], stage: str) -> None:
    """evidence-pending.yaml checked against the suites, then every expected run with no bundle: missing,
    unless a pending entry excuses it (never in the release stage); the entries still pending, listed."""
    pending = load_pending(cfg)
    pend_keys: dict[tuple[str, str], dict[str, str]] = {}
    full_items = {(s.kind, s.item) for s in full}
    have_items = {(s.kind, s.item) for s in by_slot}
    for entry in pending:
        key = (entry["kind"], entry["item"])
        if key in pend_keys:
            report.errors.append(f"pending: {key[0]} {key[1]} is listed twice in {PENDING}")
        pend_keys[key] = entry
        if key not in full_items:
            report.errors.append(f"pending: {key[0]} {key[1]} is not expected by any suite; remove it from {PENDING}")
        elif key in have_items:
            report.errors.append(f"pending: {key[0]} {key[1]} now has evidence; remove it from {PENDING}")
    for slot, cell in sorted((s, c) for s in expected for c in (cells or ("",))
                             if run_key(s, c) not in runs):
        key = (slot.kind, slot.item)
        if key in pend_keys and stage != "release":
            continue
        why = " (pending entries do not excuse the release stage)" if key in pend_keys else ""
        where = f" in cell {cell}" if cell else ""
        report.errors.append(f"missing: {slot.kind} {slot.item} [{slot.arm}] k={slot.k}{where} "
                             f"(expected at evidence/{slot.skill}/{slot.arm}/<run-id>/{slot.item}/{slot.k}/){why}")
    expected_items = {(s.kind, s.item) for s in expected}
    for key in sorted(pend_keys):
        if key in expected_items:
            report.pending.append(f"PENDING {key[0]} {key[1]}: {pend_keys[key]['reason']}")


def _judge_grades(cfg: Config, report: Report, found: list[_Seen], aa: list[bool], stage: str) -> None:
    """Each graded bundle: stale (unless a re-record deferral excuses it), a failed bundle or receipt check,
    the release rule; its grade kept for the gates unless it is an A/A run."""
    errors = report.errors
    deferrals = _deferrals(cfg, stage) if found else None
    grades = report.grades
    for f, is_aa_run in zip(found, aa, strict=True):
        g = f.grade
        if g is None:
            continue
        if f.stale:
            stale = list(f.stale)
            if deferrals is not None and deferrals.excuses(_meta_of(cfg, f.rel), stale):
                stale = []  # reviewed, expiring, digest-bound deferral (rerecord.py): listed as pending below
            for p in stale:
                errors.append(f"stale: evidence/{f.rel}: {p}")
        if not is_aa_run:  # A/A runs calibrate the scorecard's noise floor; pass^k counts the main run
            grades.append(g)
        for name in ("bundle", RECEIPT):  # oracle assertions are gated below (pass^k, baselines), receipts here
            if g.status_of(name) == "fail":
                c = g.checks[name]
                errors.append(f"bad bundle: evidence/{f.rel}: {name}: " + "; ".join(c.reasons[:3]))
        if stage == "release":
            errors += release_problems(f.rel, _meta_of(cfg, f.rel), g, release_sources(cfg))
    if deferrals is not None:
        report.pending += deferrals.pending_lines()
        report.errors += deferrals.problems()


def _quality_gates(cfg: Config, report: Report, catalog: Catalog, cells: tuple[str, ...], stage: str) -> None:
    """pass^k, the trigger gate and the baselines gate, over the skill-agent arm's grades."""
    zero = catalog.rubric.zero_tolerance if catalog.rubric else ZERO_TOLERANCE_DEFAULT
    # The quality gates judge the arm that ships (skill-agent). Comparison arms must be present, fresh,
    # well-formed and uncontaminated (above), but their grades are lift evidence: a baseline failing
    # dimension 6 is the skill's point, not a regression of it.
    shipped = [g for g in report.grades if g.meta.get("arm") == "skill-agent"]
    expected_skill = {p.id: p.expected_skill for p in catalog.prompts.values()}
    # pass^k groups by cell itself; the trigger gate holds in every cell of the matrix
    report.errors += gates.pass_k([g for g in shipped if g.kind == "behavioral"], cfg.k, tuple(zero))
    for cell in cells or ("",):
        mine = [g for g in shipped if _cell(g) == cell] if cell else shipped
        report.errors += [f"[{cell}] {p}" if cell else p for p in gates.trigger_gate(cfg, mine, expected_skill)]
    report.errors += baselines.gate(cfg, shipped, stage)  # keyed by (skill, agent, model): per cell already


def release_sources(cfg: Config) -> tuple[str, ...]:
    """The model sources a release counts: `[evals] release_sources` at the base (content/trust.py)."""
    from skill_eval.content import trust

    return trust.policy(cfg).release_sources


def _cell(grade: Any) -> str:
    """The matrix cell (agent/model label) of a graded bundle."""
    if grade is None:
        return "?/?"
    return meta_cell(grade.meta)


def release_problems(rel: str, meta: dict[str, Any] | None, g: Grade,
                     sources: tuple[str, ...] = ("remote",)) -> list[str]:
    """The release pass rule for one bundle (DESIGN §10): judged, real-model evidence only.

    The merge gate counts an unjudged 4/5 as complete; a release may not, and evidence
    recorded against a scripted model server proves the harness, not a model's behaviour.
    """
    out = []
    if meta is not None and (why := release_source_problem(meta, sources)) is not None:
        out.append(f"incomplete: evidence/{rel} was {why}")
    if g.kind == "behavioral" and g.incomplete():
        out.append(f"incomplete: evidence/{rel}: dimension(s) {g.incomplete()} not judged; run `skill-eval judge`")
    return out


def pending_from_expected(cfg: Config, reason: str, *, select_fn: Callable[..., Any] | None = None,
                          expected_fn: Callable[..., Any] | None = None) -> dict[str, Any]:
    """An evidence-pending.yaml body naming every full-suite (kind, item) that has no evidence yet."""
    if select_fn is None or expected_fn is None:
        select_fn, expected_fn = _default_selection()
    full = _slots(cfg, select_fn(cfg, "full", None), expected_fn, _all_arms(cfg))
    found, _ = scan(cfg)
    have = {(f.slot.kind, f.slot.item) for f in found if f.slot}
    items = sorted({(s.kind, s.item) for s in full} - have)
    return {"schema_version": formats.FORMATS["evidence_pending"], "pending": [{"kind": k, "item": i, "reason": reason} for k, i in items]}
