"""Committed bundles -> `RunRecord`s: the only part of the scorecard that reads the disk.

Every bundle under the evidence root is re-graded with the same graders the evidence gate uses
(a scorecard never trusts a stored verdict), then reduced to the facts the statistics need:
its cell (skill, agent, model), arm, A/A replicate, scenario, how the run ended, whether it
passed, per-check statuses, activation events, the claim's verdict against ground truth, cost,
and any contamination of a control arm. Everything downstream is pure.

Model label: scripted evidence pairs across arms under the label `scripted` (a scripted
recording's model id is the digest of its script directory, which differs per arm by design),
and every figure built from it carries the scripted flag.

A/A replicate: the second, independent recording of an arm (`skill-eval run --aa`) is the
bundle whose meta says `extra.aa: true`, or whose run id ends in `-aa`; everything else is the
main recording.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skill_eval.content.config import Config
from skill_eval.core import formats, outcomes, schemas, strict
from skill_eval.core.errors import SkillEvalError, message_of
from skill_eval.core.vocab import Outcome
from skill_eval.grading import bundle as bundle_mod
from skill_eval.grading import isolation
from skill_eval.grading.evidence import evidence_tree
from skill_eval.grading.graders import Catalog, grade_bundle, model_source

LAYOUT_DEPTH = 5  # <skill|trigger>/<arm>/<run-id>/<item>/<k>
MAIN, AA = "main", "aa"


@dataclass
class RunRecord:
    path: str  # relative to the evidence root
    kind: str  # behavioral | trigger
    skill: str | None
    arm: str
    replicate: str  # main | aa
    agent: str
    model: str  # label: the model id, or "scripted"
    scripted: bool
    item: str
    k: int
    outcome: Outcome
    passed: bool | None  # None: not scored (infra error)
    checks: dict[str, str] = field(default_factory=dict)  # check name -> pass|fail|not_judged|not_applicable
    activated: dict[str, str] = field(default_factory=dict)  # skill -> best (lowest) tier seen
    adapter_tier: str = ""
    expected_skill: str | None = None  # trigger: the corpus label
    verdict_correct: bool | None = None  # behavioral: the claim's verdict vs ground truth
    tokens_in: int | None = None
    tokens_out: int | None = None
    turns: int | None = None
    wall_clock_s: float | None = None
    cost_usd: float | None = None
    cost_source: str = "unknown"  # reported | price_table | unknown
    cost_missing: str = ""  # why cost_usd is None (cost_missing_reason); "" when it is known
    contamination: list[str] = field(default_factory=list)
    holdout: bool = False
    incomplete: str = ""  # why a scored run never finished (incomplete_reason); "" when it did


    @property
    def scored(self) -> bool:
        return self.passed is not None


def replicate_of(meta: dict[str, Any]) -> str:
    extra = raw_extra if isinstance(raw_extra := meta.get("extra"), dict) else {}
    return AA if extra.get("aa") is True or str(meta.get("run_id", "")).endswith("-aa") else MAIN


def cost_of(usage: dict[str, Any] | None, model: str, cfg: Config) -> tuple[float | None, str]:
    """USD for one run: the agent's own report, else the configured price table, else unknown."""
    if not usage:
        return None, "unknown"
    if usage.get("cost_usd") is not None:
        return float(usage["cost_usd"]), "reported"
    price = cfg.prices.get(model)
    tin, tout = usage.get("tokens_in"), usage.get("tokens_out")
    if price is not None and tin is not None and tout is not None:
        return (tin * price.input_per_mtok + tout * price.output_per_mtok) / 1e6, "price_table"
    return None, "unknown"


def cost_missing_reason(usage: dict[str, Any] | None, model: str, agent: str, scripted: bool, cfg: Config) -> str:
    """Why a run has no USD cost (cost_of gave None): said on the scorecard instead of a bare "unknown"."""
    if not usage:
        return f"{agent or 'the agent'} recorded no usage"
    if scripted:
        return f"{agent or 'the agent'} reports no cost and scripted model turns have no price"
    if model not in cfg.prices:
        return f"{agent or 'the agent'} reports no cost and [prices] has no entry for {model or 'the model'}"
    return "no token counts to price"


def bundle_dirs(evidence_root: Path) -> list[Path]:
    """Bundle directories at the layout depth (a meta.json deeper inside a bundle is not one)."""
    if not evidence_root.is_dir():
        return []
    out = []
    for meta in sorted(evidence_root.rglob("meta.json")):
        rel = meta.parent.relative_to(evidence_root)
        if len(rel.parts) == LAYOUT_DEPTH:
            out.append(meta.parent)
    return out


@dataclass
class Light:
    """The few bundle files the scorecard reads beside the grade (meta, usage, claim, events).

    Read strictly (no symlinks or escapes, size cap, strict JSON) but without per-line schema
    validation of events: grading already validates every file, and a malformed bundle fails its
    grade; contamination is read from whatever events parse, so leniency can only find more.
    """

    meta: dict[str, Any] | None
    usage: dict[str, Any] | None
    claim_file: dict[str, Any] | None
    events: list[dict[str, Any]]
    problem: str = ""
    outcome: Outcome | Literal[""] = ""  # "": meta.json unreadable
    final_empty: bool = False  # final.md absent or blank: the agent gave no final answer
    subject_calls: int = 0  # calls.jsonl lines: subject invocations the shim recorded


def incomplete_reason(kind: str, outcome: str, *, final_empty: bool, subject_calls: int, needs_subject: bool,
                      claimed: bool) -> str:
    """Why a scored behavioural run never finished, or "" (lift.Run.incomplete; INCONCLUSIVE above
    `[stats] max_incomplete_rate`): its budget cut it (`budget_stop`), it gave no final answer, or a
    verdict scenario (dimension 3 applies) got neither a subject call nor a claim. A run that states a
    claim without calling the subject *did* finish — wrongly: dimension 3 fails it, and that failure is
    exactly what a skill is meant to change, so it is a scored failure, not an incomplete run.
    """
    if kind != "behavioral" or not outcomes.scored(outcome):
        return ""
    if outcome == outcomes.BUDGET_STOP:
        return "budget_stop"
    if final_empty:
        return "no final answer"
    if needs_subject and subject_calls == 0 and not claimed:
        return "no subject call and no claim"
    return ""


def _json(path: Path, name: str, max_bytes: int, schema: str | None = None) -> Any:
    try:
        value = strict.load_json(bundle_mod.safe_path(path, name), max_bytes=max_bytes)
    except SkillEvalError:
        return None
    if schema is not None and schemas.errors(value, schema):
        return None
    return value


def read_light(path: Path, max_bytes: int) -> Light:
    try:
        meta = strict.load_json(bundle_mod.safe_path(path, "meta.json"), max_bytes=max_bytes)
    except SkillEvalError as exc:
        return Light(None, None, None, [], message_of(exc))
    # The outcome is read from the meta *as recorded*: a v2 meta states it, a v1 meta gets the
    # finer derivation of skill_eval.core.outcomes (transport errors are infra), not a migration's.
    outcome = outcomes.outcome_of(meta, _json(path, "usage.json", max_bytes)) if isinstance(meta, dict) else ""
    try:
        meta = formats.upgrade(meta, "meta", path / "meta.json")
    except SkillEvalError:
        pass  # no migration on this version of the table: the schema below decides
    errs = schemas.errors(meta, "meta")
    if errs:
        return Light(None, None, None, [], f"meta.json does not match schemas/meta.schema.json: {errs[0]}")
    events: list[dict[str, Any]] = []
    try:
        text = strict.decode_utf8(strict.read_bytes(bundle_mod.safe_path(path, "events.jsonl"), max_bytes=max_bytes), path)
        for i, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                ev = strict.loads_json(line, f"events.jsonl:{i}")
                if isinstance(ev, dict):
                    events.append(ev)
    except SkillEvalError:
        pass
    usage = _json(path, "usage.json", max_bytes, "usage")
    claim = _json(path, "claim.json", max_bytes, "claim_file")
    return Light(meta, usage, claim, events, outcome=outcome, final_empty=not _text(path, "final.md", max_bytes).strip(),
                 subject_calls=sum(1 for line in _text(path, "calls.jsonl", max_bytes).splitlines() if line.strip()))


def _text(path: Path, name: str, max_bytes: int) -> str:
    """A bundle file as text, "" when absent or unreadable (grading reports a broken file; here it only
    means no answer / no call, which can make a run incomplete, never complete)."""
    try:
        return strict.decode_utf8(strict.read_bytes(bundle_mod.safe_path(path, name), max_bytes=max_bytes), path)
    except SkillEvalError:
        return ""


def collect(cfg: Config, evidence_root: Path | None = None, *, catalog: Catalog | None = None
            ) -> tuple[list[RunRecord], list[str]]:
    """Every bundle as a RunRecord, plus problems (bundles whose meta.json cannot be read)."""
    root = evidence_tree(cfg, evidence_root)  # never through a symlink leaving the repository
    catalog = catalog or Catalog(cfg)
    records, problems = [], []
    for path in bundle_dirs(root):
        rel = path.relative_to(root).as_posix()
        b = read_light(path, cfg.max_bundle_file_bytes)
        if b.meta is None:
            problems.append(f"evidence/{rel}: {b.problem}")
            continue
        records.append(_record(cfg, catalog, path, rel, b))
    return records, problems


def _record(cfg: Config, catalog: Catalog, path: Path, rel: str, b: Light) -> RunRecord:
    meta = b.meta or {}
    g = grade_bundle(path, catalog)
    outcome = b.outcome or outcomes.outcome_of(meta, b.usage)
    model_id = str(meta.get("model", ""))
    # scripted turns and a loopback endpoint the runner did not run (it may be a fake) are both "not a
    # provider model": labelled scripted everywhere; a local endpoint's model keeps its name, prefixed
    source = model_source(meta)
    scripted = source in ("scripted", "local-endpoint") or model_id.startswith("scripted:")
    label = f"local-endpoint:{model_id}" if source == "local-endpoint" else "scripted" if scripted else model_id
    kind = meta["kind"]
    item = meta.get("scenario") if kind == "behavioral" else meta.get("prompt_id")
    activated: dict[str, str] = {}
    for ev in b.events:
        if ev.get("type") == "skill_activated":
            s, tier = str(ev.get("skill")), str(ev.get("tier", ""))
            activated[s] = min(activated.get(s, tier), tier)
    cost, source = cost_of(b.usage, model_id, cfg)
    usage = b.usage or {}
    rec = RunRecord(
        path=rel, kind=kind, skill=meta.get("skill"), arm=str(meta.get("arm")), replicate=replicate_of(meta),
        agent=str((meta.get("agent") or {}).get("name", "")), model=label,
        scripted=scripted, item=str(item), k=int(meta.get("k", 0)), outcome=outcome,
        passed=g.passed("merge") if outcomes.scored(outcome) else None,
        checks={n: c.status for n, c in g.checks.items()}, activated=activated,
        adapter_tier=str(meta.get("adapter_tier", "")),
        tokens_in=usage.get("tokens_in"), tokens_out=usage.get("tokens_out"), turns=usage.get("turns"),
        wall_clock_s=usage.get("wall_clock_s"), cost_usd=cost, cost_source=source,
        cost_missing="" if cost is not None else cost_missing_reason(b.usage, model_id, str((meta.get("agent") or {}).get("name", "")),
                                                                    scripted, cfg),
        contamination=isolation.contamination(meta, b.events, published=cfg.published),
    )
    claim_ok = (b.claim_file or {}).get("status") == "ok"
    rec.incomplete = incomplete_reason(kind, outcome, final_empty=b.final_empty, subject_calls=b.subject_calls,
                                       needs_subject=rec.checks.get("3", "not_applicable") != "not_applicable",
                                       claimed=claim_ok)
    if kind == "trigger":
        prompt = catalog.prompts.get(rec.item)
        rec.expected_skill = prompt.expected_skill if prompt else None
    else:
        sc = catalog.scenarios.get(rec.item)
        rec.holdout = bool(sc and sc.holdout)
        truth = catalog.truth.get(sc.fixture) if sc else None
        if sc is not None and truth is not None and rec.scored:
            claim = (b.claim_file or {}).get("claim") if (b.claim_file or {}).get("status") == "ok" else None
            said = claim.get("verdict") if claim else None
            rec.verdict_correct = claim is not None and said == sc.expected_verdict(truth)
    return rec
