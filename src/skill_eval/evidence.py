"""The evidence gate (DESIGN §5 "evidence completeness", §9.4): checked, never trusted.

1. Derive the expected set from the selection rule (`selection.select` +
   `selection.expected_bundles`): risk suite in pr, full with --suite full.
2. Walk `evidence/<skill|trigger>/<arm>/<run-id>/<item>/<k>/`; meta.json is the authority
   and the path must agree with it. Reject missing, extra (not expected by the *full*
   suite — a committed full-suite bundle is not "extra" in a risk-suite run), duplicated
   (two bundles for one expected slot), stale (freshness) and unreadable bundles.
3. Re-grade every bundle and apply the gates: pass^k for 2/6, baselines for 1/3 (and 4/5
   in the release stage), trigger activation thresholds.

Missing evidence and stale evidence fail the same way. With no evidence recorded yet,
`evidence-pending.yaml` names the (kind, item) pairs still pending, with a reason: each
is printed loudly, excuses only a *missing* bundle in the merge stage, and is itself an
error once it has evidence or names nothing expected — so the list can only shrink.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval import baselines, gates, schemas, strict
from skill_eval.config import Config
from skill_eval.errors import SkillEvalError
from skill_eval.graders import Catalog, Grade, grade_bundle

EVIDENCE = "evidence"
PENDING = "evidence-pending.yaml"
LAYOUT_DEPTH = 5  # <skill|trigger>/<arm>/<run-id>/<item>/<k>


@dataclass(frozen=True, order=True)
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

    @property
    def passed(self) -> bool:
        return not self.errors


def evidence_dir(cfg: Config) -> Path:
    return cfg.evals_dir / EVIDENCE


def slot_of(meta: dict[str, Any]) -> Slot:
    if meta["kind"] == "trigger":
        return Slot("trigger", "trigger", meta["arm"], meta["prompt_id"], meta["k"])
    return Slot("behavioral", meta.get("skill") or "", meta["arm"], meta["scenario"], meta["k"])


def scan(cfg: Config) -> tuple[list[Found], list[str]]:
    """Every bundle under evidence/, and layout problems (misplaced meta.json, stray files)."""
    root = evidence_dir(cfg)
    if not root.is_dir():
        return [], []
    found, problems = [], []
    metas = sorted(root.rglob("meta.json"))
    bundle_dirs = {m.parent.relative_to(root).parts for m in metas if len(m.parent.relative_to(root).parts) == LAYOUT_DEPTH}
    for meta_path in metas:
        rel_dir = meta_path.parent.relative_to(root)
        parts = rel_dir.parts
        if len(parts) != LAYOUT_DEPTH:
            if not (len(parts) > LAYOUT_DEPTH and parts[:LAYOUT_DEPTH] in bundle_dirs):  # a file inside a bundle
                problems.append(f"extra: evidence/{rel_dir.as_posix()}/meta.json is not at <skill|trigger>/<arm>/<run-id>/<item>/<k>/")
            continue
        f = Found(meta_path.parent, rel_dir.as_posix(), None, None)
        try:
            meta = strict.load_json(meta_path, max_bytes=cfg.max_bundle_file_bytes)
            errs = schemas.errors(meta, "meta")
            if errs:
                raise SkillEvalError(f"does not match schemas/meta.schema.json: {errs[0]}")
            f.meta, f.slot = meta, slot_of(meta)
            want = (f.slot.skill, f.slot.arm, meta["run_id"], f.slot.item, str(f.slot.k))
            if parts != want:
                f.problems.append(f"path says {'/'.join(parts)} but meta.json says {'/'.join(want)}")
        except SkillEvalError as exc:
            f.problems.append(f"unreadable meta.json: {str(exc).split(' — fix:')[0]}")
        found.append(f)
    return found, problems


def load_pending(cfg: Config) -> list[dict[str, str]]:
    path = cfg.evals_dir / PENDING
    if not path.exists():
        return []
    return schemas.validate(strict.load_yaml(path), "evidence_pending", path)["pending"]


def _default_selection():
    try:
        from skill_eval import selection
    except ImportError as exc:  # pragma: no cover - selection ships with the package
        raise SkillEvalError(f"suite selection is unavailable ({exc})") from None
    return selection.select, selection.expected_bundles


def _default_freshness(cfg: Config) -> Callable[[dict[str, Any]], list[str]]:
    from skill_eval import freshness

    cur = freshness.current(cfg)
    return lambda meta: freshness.check_bundle_freshness(cfg, meta, cur)


def _slots(cfg: Config, suite_obj: Any, expected_fn: Callable[..., Any]) -> set[Slot]:
    return {Slot(e.kind, e.skill, e.arm, e.item_id, e.k) for e in expected_fn(cfg, suite_obj)}


def check(cfg: Config, suite: str = "risk", base: str | None = None, stage: str = "merge", *,
          select_fn: Callable[..., Any] | None = None, expected_fn: Callable[..., Any] | None = None,
          freshness_fn: Callable[[dict[str, Any]], list[str]] | None = None, catalog: Catalog | None = None) -> Report:
    if select_fn is None or expected_fn is None:
        sel, exp = _default_selection()
        select_fn, expected_fn = select_fn or sel, expected_fn or exp
    fresh_cache: list[Callable[[dict[str, Any]], list[str]]] = [freshness_fn] if freshness_fn else []

    def fresh(meta: dict[str, Any]) -> list[str]:
        if not fresh_cache:  # computing current digests is costly: only when there is evidence
            fresh_cache.append(_default_freshness(cfg))
        return fresh_cache[0](meta)
    report = Report(suite, stage)
    chosen = select_fn(cfg, suite, base)
    expected = _slots(cfg, chosen, expected_fn)
    full = expected if suite == "full" else _slots(cfg, select_fn(cfg, "full", None), expected_fn)
    report.expected = len(expected)
    found, layout = scan(cfg)
    report.errors += layout
    report.found = len(found)

    by_slot: dict[Slot, list[Found]] = defaultdict(list)
    for f in found:
        for p in f.problems:
            report.errors.append(f"unreadable: evidence/{f.rel}: {p}")
        if f.slot is not None:
            by_slot[f.slot].append(f)
    for slot, fs in sorted(by_slot.items()):
        if len(fs) > 1:
            report.errors.append(f"duplicated: {slot.kind} {slot.item} [{slot.arm}] k={slot.k} has {len(fs)} bundles: "
                                 + ", ".join(f"evidence/{f.rel}" for f in fs))
        if slot not in full:
            report.errors.append(f"extra: evidence/{fs[0].rel} is not expected by any suite (unknown item, arm or k)")

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
    for slot in sorted(expected - set(by_slot)):
        key = (slot.kind, slot.item)
        if key in pend_keys and stage != "release":
            continue
        why = " (pending entries do not excuse the release stage)" if key in pend_keys else ""
        report.errors.append(f"missing: {slot.kind} {slot.item} [{slot.arm}] k={slot.k} "
                             f"(expected at evidence/{slot.skill}/{slot.arm}/<run-id>/{slot.item}/{slot.k}/){why}")
    for key in sorted(pend_keys):
        if any((s.kind, s.item) == key for s in expected):
            report.pending.append(f"PENDING {key[0]} {key[1]}: {pend_keys[key]['reason']}")

    catalog = catalog or Catalog(cfg)
    for f in found:
        if f.meta is None:
            continue
        for p in fresh(f.meta):
            report.errors.append(f"stale: evidence/{f.rel}: {p}")
        g = grade_bundle(f.path, catalog)
        report.grades.append(g)
        for name in ("bundle", "oracle"):
            c = g.checks.get(name)
            if c is not None and c.failed:
                report.errors.append(f"bad bundle: evidence/{f.rel}: {name}: " + "; ".join(c.reasons[:3]))
        if stage == "release":
            report.errors += release_problems(f.rel, f.meta, g)
    zero = catalog.rubric.zero_tolerance if catalog.rubric else (2, 6)
    report.errors += gates.pass_k([g for g in report.grades if g.kind == "behavioral"], cfg.k, tuple(zero))
    report.errors += baselines.gate(cfg, report.grades, stage)
    report.errors += gates.trigger_gate(cfg, report.grades, {p.id: p.expected_skill for p in catalog.prompts.values()})
    return report


def release_problems(rel: str, meta: dict[str, Any] | None, g: Grade) -> list[str]:
    """The release pass rule for one bundle (DESIGN §10): judged, real-model evidence only.

    The merge gate counts an unjudged 4/5 as complete; a release may not, and evidence
    recorded against a scripted model server proves the harness, not a model's behaviour.
    """
    out = []
    if meta is not None and meta.get("scripted") is True:
        out.append(f"incomplete: evidence/{rel} was recorded with a scripted model ({meta.get('model')}); "
                   "a release needs real-model evidence")
    if g.kind == "behavioral" and g.incomplete():
        out.append(f"incomplete: evidence/{rel}: dimension(s) {g.incomplete()} not judged; run `skill-eval judge`")
    return out


def pending_from_expected(cfg: Config, reason: str, *, select_fn=None, expected_fn=None) -> dict[str, Any]:
    """An evidence-pending.yaml body naming every full-suite (kind, item) that has no evidence yet."""
    if select_fn is None or expected_fn is None:
        select_fn, expected_fn = _default_selection()
    full = _slots(cfg, select_fn(cfg, "full", None), expected_fn)
    found, _ = scan(cfg)
    have = {(f.slot.kind, f.slot.item) for f in found if f.slot}
    items = sorted({(s.kind, s.item) for s in full} - have)
    return {"schema_version": 1, "pending": [{"kind": k, "item": i, "reason": reason} for k, i in items]}
