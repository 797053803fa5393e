"""Replay grading: one bundle in, one `Grade` out, as a pure function of recorded files.

`grade_bundle(path, catalog)` dispatches on meta.json's kind — behavioural bundles get
dimensions 1–6 (+ command oracles), trigger bundles get activation only — so a bundle
cannot be graded by the wrong rule set. Each dimension is a list of named rules looked
up at call time (`DIM6_RULES` etc.), so a test can disable any single rule and prove the
golden corpus notices. Nothing here imports the subject tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.content.evals import (
    FIXTURES,
    Rubric,
    golden_dir,
    load_golden_scenarios,
    load_ground_truth,
    load_rubric,
    load_scenarios,
    load_trigger_corpus,
)
from skill_eval.core.errors import ConfigError
from skill_eval.core.vocab import CheckStatus
from skill_eval.grading import bundle as bundle_mod
from skill_eval.grading import oracles
from skill_eval.grading.graders import claims, imported, judged, recorded, trigger, uncertainty, workflow
from skill_eval.grading.graders.context import Context, build_run

DIMENSION_RULES = {
    1: (workflow, "DIM1_RULES"),
    2: (uncertainty, "DIM2_RULES"),
    3: (workflow, "DIM3_RULES"),
    6: (claims, "DIM6_RULES"),
}
ZERO_TOLERANCE_DEFAULT = (2, 6)
VERDICT_ONLY = (2, 3, 6)  # dimensions that grade a verdict answer: not applicable to an oracle scenario
RECEIPT = "receipt:facts"  # sub-check: facts.json is the runner's faithful receipt (integrity, every arm)
ORACLE_PREFIX = "oracle:"  # sub-check per oracle assertion
MERGE_GATING = ("1", "2", "3", "6", "oracle", "activation", "bundle")
RELEASE_GATING = MERGE_GATING + ("4", "5")
STAGES = ("merge", "release")


def is_sub_check(name: str) -> bool:
    """`oracle:<assertion>` and `receipt:facts` detail the `oracle` check: the gates read them
    (pass^k per zero-tolerance assertion, bad-bundle receipts), but they are not failures of their
    own — the `oracle` check already fails with every one of their reasons."""
    return ":" in name


@dataclass
class Check:
    """One graded check of a bundle: pass, fail or not_applicable, with the reasons."""

    name: str
    status: CheckStatus
    reasons: list[str] = field(default_factory=list)
    note: str = ""  # why a check is not_applicable (never a silent pass)

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def to_json(self, stage: str = "merge") -> dict[str, Any]:
        ok = ("pass", "not_applicable", "not_judged") if stage == "merge" else ("pass", "not_applicable")
        out: dict[str, Any] = {"status": self.status, "passed": self.status in ok, "reasons": list(self.reasons)}
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Grade:
    """Every check of one bundle, with the meta it was graded under and its zero-tolerance checks."""

    bundle: str
    kind: str | None
    item: str | None
    meta: dict[str, Any]
    checks: dict[str, Check]
    zero_tolerance: tuple[int | str, ...] = ZERO_TOLERANCE_DEFAULT  # dims, then `oracle:<name>` assertions

    def failures(self) -> list[int | str]:
        """Every failed check: dimension numbers (sorted) then named checks (sorted); sub-checks excluded."""
        dims = sorted(int(n) for n, c in self.checks.items() if c.failed and n.isdigit())
        named = sorted(n for n, c in self.checks.items() if c.failed and not n.isdigit() and not is_sub_check(n))
        return [*dims, *named]

    def failed_dimensions(self) -> list[int]:
        return [f for f in self.failures() if isinstance(f, int)]

    def status_of(self, name: str) -> str | None:
        """The status of check `name`, or None when the grade has no such check."""
        c = self.checks.get(name)
        return None if c is None else c.status

    def zero_tolerance_failed(self) -> list[int]:
        return [d for d in self.failed_dimensions() if d in self.zero_tolerance]

    def incomplete(self) -> list[int]:
        return sorted(int(n) for n, c in self.checks.items() if c.status == "not_judged")

    def passed(self, stage: str = "merge") -> bool:
        gating = RELEASE_GATING if stage == "release" else MERGE_GATING
        for name in gating:
            c = self.checks.get(name)
            if c is None:
                continue
            if c.failed or (stage == "release" and c.status == "not_judged"):
                return False
        return True

    def to_json(self, stage: str = "merge") -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "kind": self.kind,
            "item": self.item,
            "arm": self.meta.get("arm"),
            "skill": self.meta.get("skill"),
            "k": self.meta.get("k"),
            "scripted": self.meta.get("scripted") is True,
            "model_source": self.meta.get("model_source", "unknown"),  # scripted / local-endpoint: not a provider model
            "stage": stage,
            "passed": self.passed(stage),
            "dimensions": {n: c.to_json(stage) for n, c in sorted(self.checks.items()) if n.isdigit()},
            "checks": {n: c.to_json(stage) for n, c in sorted(self.checks.items()) if not n.isdigit()},
            "failures": self.failures(),
            "failed_dimensions": self.failed_dimensions(),
            "zero_tolerance_failed": self.zero_tolerance_failed(),
            "incomplete_dimensions": self.incomplete(),
        }


class Catalog:
    """The repository's evaluation content, loaded once for many bundles."""

    def __init__(self, cfg: Config, *, rubric: Rubric | None = None):
        self.cfg = cfg
        self.truth = load_ground_truth(cfg)
        self.scenarios = {s.id: s for s in load_scenarios(cfg, truth=self.truth)}
        corpus_path = cfg.evals_dir / "trigger_corpus.yaml"
        self.prompts = {p.id: p for p in load_trigger_corpus(cfg)} if corpus_path.is_file() else {}
        rubric_path = cfg.evals_dir / "rubric.yaml"
        self.rubric = rubric or (load_rubric(cfg) if rubric_path.is_file() else None)
        self.golden_root = golden_dir(cfg).resolve()
        self.golden = {s.id: s for s in load_golden_scenarios(cfg, self.truth)}
        clash = sorted(set(self.golden) & set(self.scenarios))
        if clash:
            raise ConfigError(f"golden scenario id(s) {clash} collide with scenarios.yaml", source=self.golden_root)
        self.coverage_path = cfg.subject.coverage_path
        # artifacts.file_sha256's cache for this catalog's bundles: each fixture file is looked at once per
        # Catalog (one per check), so a Catalog is built again after a fixture changes, never reused across it
        self.fixture_digests: dict[Any, str | None] = {}
        self._fixture_dirs: dict[str, Path] = {}

    def context_for(self, meta: dict[str, Any] | None, path: Path | None = None) -> Context:
        subject = self.cfg.subject
        if meta is None:
            return Context(subject=subject, rubric=self.rubric, problems=("meta.json is unreadable",))
        if meta["kind"] == "trigger":
            return Context(subject=subject, rubric=self.rubric, prompt=self.prompts.get(meta.get("prompt_id", "")),
                           problems=tuple(_trigger_identity(meta)))
        sc = self.scenarios.get(meta.get("scenario", ""))
        if sc is None and path is not None and self._in_golden(path):
            sc = self.golden.get(meta.get("scenario", ""))
        if sc is None:
            return Context(subject=subject, rubric=self.rubric, problems=(f"scenario {meta.get('scenario')!r} is not in scenarios.yaml",))
        problems = []
        if meta.get("skill") != sc.skill:
            problems.append(f"meta.json: skill is {meta.get('skill')!r} but scenario {sc.id} belongs to {sc.skill!r}; "
                            f"a behavioral bundle names its scenario's skill (re-record it)")
        if "prompt_id" in meta:
            problems.append(f"meta.json: a behavioral bundle carries prompt_id {meta['prompt_id']!r}; only trigger "
                            f"bundles name a corpus prompt (re-record it)")
        return Context(
            subject=subject, rubric=self.rubric, scenario=sc, truth=self.truth.get(sc.fixture),
            fixture_dir=self._fixture_dir(sc.fixture), coverage_path=self.coverage_path,
            problems=tuple(problems), digests=self.fixture_digests,
        )

    def _fixture_dir(self, fixture: str) -> Path:
        """evals_dir/fixtures/<fixture>, built once per fixture (not per bundle)."""
        got = self._fixture_dirs.get(fixture)
        if got is None:
            got = self._fixture_dirs[fixture] = self.cfg.evals_dir / FIXTURES / fixture
        return got

    def _in_golden(self, path: Path) -> bool:
        try:
            Path(path).resolve().relative_to(self.golden_root)
            return True
        except ValueError:
            return False


def _trigger_identity(meta: dict[str, Any]) -> list[str]:
    """A trigger run installs every skill and expects none in particular: its meta names no skill and
    no scenario (the runner writes `"skill": null`), so a negative cannot be relabelled as some skill's."""
    problems = []
    if meta.get("skill") is not None:
        problems.append(f"meta.json: skill is {meta['skill']!r} in a trigger bundle; a trigger run names no skill "
                        f"(the runner writes null; re-record it)")
    if "scenario" in meta:
        problems.append(f"meta.json: a trigger bundle carries scenario {meta['scenario']!r}; only behavioral bundles "
                        f"name a scenario (re-record it)")
    return problems


def _rules(dim: int) -> tuple[str, ...]:
    module, attr = DIMENSION_RULES[dim]
    rules: tuple[str, ...] = getattr(module, attr)
    return rules


def _apply(module: Any, names: tuple[str, ...], run: Any) -> list[str]:
    reasons: list[str] = []
    for name in names:
        reasons.extend(getattr(module, name)(run))
    return reasons


def grade_bundle(path: Path, catalog: Catalog, *, loaded: bundle_mod.Bundle | None = None) -> Grade:
    """Grade one bundle directory. Never raises on bundle content.

    `loaded` is the same directory already read by `bundle.load` (the evidence pass reads each
    bundle once and feeds freshness, the gate and grading from it)."""
    path = path if isinstance(path, Path) else Path(path)
    b = loaded if loaded is not None else bundle_mod.load(path, max_bytes=catalog.cfg.max_bundle_file_bytes)
    ctx = catalog.context_for(b.meta, path)
    meta = b.meta or {}
    zero: tuple[int | str, ...] = tuple(catalog.rubric.zero_tolerance if catalog.rubric else ZERO_TOLERANCE_DEFAULT)
    kind = b.kind
    item = meta.get("scenario") if kind == "behavioral" else meta.get("prompt_id")
    run = build_run(b, ctx)
    checks: dict[str, Check] = {}
    if kind == "trigger":
        checks["activation"] = Check("activation", "pass", trigger.activation(run))
    elif kind == "behavioral" and (origin := imported.origin_of(b.meta)) is not None:  # a Harbor trial: its verifier's verdict
        checks.update(imported.grade(b, origin, Check))
    elif kind == "behavioral":
        verdict = ctx.scenario is None or ctx.scenario.verdict
        for dim in (1, 2, 3, 6):
            if not verdict and dim in VERDICT_ONLY:
                checks[str(dim)] = Check(str(dim), "not_applicable", note=_not_applicable(catalog.cfg, ctx.scenario))
                continue
            module, _ = DIMENSION_RULES[dim]
            checks[str(dim)] = Check(str(dim), "pass", _apply(module, _rules(dim), run))
        version = catalog.rubric.version if catalog.rubric else None
        for dim in judged.JUDGED:
            status, reasons = judged.replay(b.judgments, version, dim)
            checks[str(dim)] = Check(str(dim), status, reasons)
        receipt = oracles.receipt_problems(b, ctx.scenario)  # computed once: its own check and the oracle's reasons
        status, reasons, results = oracles.grade(b, ctx.scenario, receipt)
        if status != "not_applicable" or reasons:
            checks["oracle"] = Check("oracle", status, reasons)
            checks[RECEIPT] = Check(RECEIPT, "pass", receipt)
            for name, held in sorted(results.items()):
                why = [r for r in reasons if r.startswith(f"assertion {name!r}")]
                checks[ORACLE_PREFIX + name] = Check(ORACLE_PREFIX + name, "pass" if held else "fail", why)
            if ctx.scenario is not None:
                zero = zero + tuple(ORACLE_PREFIX + n for n in ctx.scenario.zero_tolerance_assertions)
    checks["bundle"] = Check("bundle", "pass", [])
    if b.meta is not None and b.meta.get("status") != "complete":
        # A run cut off by a budget or an error is explicit incomplete evidence, never a pass.
        status_why = b.meta.get("status_reason") or "no reason recorded"
        checks["bundle"].reasons.append(f"meta.json status is {b.meta.get('status')!r} ({status_why}): the run did not complete")
    elif b.meta is not None:
        # The runner seals any run that ended in a run_error as "error"/"incomplete": a "complete" bundle holding
        # one is inconsistent, in trigger bundles too (bar the runner's own stop on activation: graders.recorded).
        checks["bundle"].reasons.extend(recorded.run_error_problems(b.meta, b.usage, b.events))
    if b.meta is not None:
        checks["bundle"].reasons.extend(recorded.uninstalled_skill_problems(b.meta, b.events))
        checks["bundle"].reasons.extend(recorded.origin_problems(b.meta))
        checks["bundle"].reasons.extend(recorded.outcome_problems(b.meta))
    checks["bundle"].reasons.extend(recorded.stream_problems(b))
    _attach_problems(b, ctx, checks)
    for c in checks.values():
        if c.status in ("pass", "not_applicable") and c.reasons and c.name not in ("4", "5"):
            c.status = "fail"
    return Grade(str(path), kind, item, _meta_summary(meta), checks, tuple(zero))


def _attach_problems(b: bundle_mod.Bundle, ctx: Context, checks: dict[str, Check]) -> None:
    for p in b.problems:
        if p.file == "facts.json":
            continue  # oracles.grade reports facts.json problems itself
        poisons = bundle_mod.FILE_CHECKS.get(p.file.split("/", 1)[0], ("bundle",))
        applicable = [n for n, c in checks.items() if not c.note and not is_sub_check(n)]
        targets = applicable if "*" in poisons else [n for n in poisons if n in applicable]
        for name in targets or ["bundle"]:
            checks[name].reasons.append(str(p))
            if name in ("4", "5"):
                checks[name].status = "fail"
    for problem in ctx.problems:
        for c in checks.values():
            c.reasons.append(problem)
            c.status = "fail"


def _not_applicable(cfg: Config, sc: Any) -> str:
    if not cfg.subject.has_verdicts:
        why = "the subject declares no verdict profile"
    elif not cfg.subject.verdict_skill(sc.skill):
        why = f"skill {sc.skill!r} is not in subject.verdict_skills"
    else:
        why = "it is a category oracle scenario"
    return f"scenario {sc.id!r} asks no verdict question ({why}): it is graded by its command oracle"


def _meta_summary(meta: dict[str, Any]) -> dict[str, Any]:
    agent = meta.get("agent") or {}
    return {
        "arm": meta.get("arm"), "skill": meta.get("skill"), "k": meta.get("k"), "run_id": meta.get("run_id"),
        "agent": agent.get("name"), "model": meta.get("model"), "scenario": meta.get("scenario"),
        "prompt_id": meta.get("prompt_id"), "kind": meta.get("kind"), "scripted": meta.get("scripted") is True,
        "model_source": model_source(meta),
    }


def model_source(meta: dict[str, Any]) -> str:
    """`scripted`, `local-endpoint` (a loopback endpoint the runner did not run: labelled like scripted) or
    `remote:<host>`, as the runner recorded it (meta.extra.model_source); older bundles: scripted or unknown."""
    if meta.get("scripted") is True:
        return "scripted"
    recorded = (meta.get("extra") or {}).get("model_source")
    return recorded if isinstance(recorded, str) else "unknown"


def release_source_problem(meta: dict[str, Any], counted: tuple[str, ...]) -> str | None:
    """Why a release does not count this bundle's model turns ([evals] release_sources names the sources
    it counts: `remote`, `local-endpoint`; scripted turns never count), or None."""
    source = model_source(meta)
    if source == "scripted":
        return f"recorded with a scripted model ({meta.get('model')}): a release needs real-model evidence"
    kind = "remote" if source.startswith("remote:") else source
    if kind in counted:
        return None
    if kind == "local-endpoint":
        return (f"recorded against a local endpoint the runner does not run ({meta.get('model')}): it may be a fake; "
                "this release counts " + ", ".join(counted) + " ([evals] release_sources)")
    return (f"model source {source!r} is not one this release counts ({', '.join(counted)}; "
            "[evals] release_sources): re-record it")
