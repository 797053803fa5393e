"""What a release stage freezes, recomputed from the current checkout (stage and resume share it).

A snapshot is a pure function of the repository and the raw evidence root: the bindings (case
set, assertions, candidate and released skill bytes, harness, surface, agents and models seen,
publication digest) and, per case, every run's raw files by digest plus the grade re-derived
from those files. `resume` recomputes it and compares it with the staged one, so a changed
receipt, raw byte, skill byte or grader is refused rather than reported on.

Evidence states follow the seed: a run cut off (timeout, budget, infra error), a stale run, a
missing run, a missing grade (4/5 not judged) and a run recorded against a model source the
release does not count (scripted always; `[evals] release_sources`) are all *incomplete* — never
a pass; a failed deterministic or judged check is *fail*.

Each case carries three arms: the candidate, the released arm (when its skill was published at
the ref) and the baseline (no skill: the lift gate's control, lift_gate.py); each run's
`judgments.json` is staged apart from its sealed raw files (`judgments_sha256`, judging.py says
why), and each run's `lift_vote` is what it counts for in the lift gate, whose per-skill result is
part of the snapshot (so a changed margin or minimum is refused on resume like any input).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval import __version__
from skill_eval.content import freshness, selection, trust
from skill_eval.content.config import Config
from skill_eval.content.generate import SKILL_DOMAIN
from skill_eval.content.released import released_tree
from skill_eval.core import formats, gitrepo, hashing, outcomes, schemas, seal, strict
from skill_eval.core.errors import ConfigError, SkillEvalError, message_of
from skill_eval.core.vocab import CaseState, RunState
from skill_eval.grading import judgments as judgments_mod
from skill_eval.grading import regrade
from skill_eval.grading.graders import Catalog, release_source_problem
from skill_eval.reporting.release import cells as cells_mod
from skill_eval.reporting.release import lift_gate
from skill_eval.reporting.release.publication import publication_digest

RAW_DOMAIN = "skill-eval-release-raw-v1"
CASES_DOMAIN = "skill-eval-release-cases-v1"
ASSERTIONS_DOMAIN = "skill-eval-release-assertions-v1"
CANDIDATE_ARM = "skill-agent"
BASELINE_ARM = "baseline"  # no skill offered: what the lift gate measures the candidate against
JUDGMENTS = "judgments.json"  # outside the bundle's seal by design (core/seal.UNSEALED): staged as its own layer
LAYOUT_DEPTH = 5  # <skill>/<arm-dir>/<run-id>/<scenario>/<k>
SOURCES = ("evidence", "session")
UNBOUND = "is not the bound released digest"


def released_arm(ref: str) -> str:
    return f"released:{ref}"


def arm_dir(arm: str) -> str:
    return arm.replace(":", "-")


def _git(cfg: Config, *args: str) -> str | None:
    return gitrepo.text(cfg.root, *args)  # the one reader of the repository's git


def tested_head(cfg: Config) -> str | None:
    return _git(cfg, "rev-parse", "HEAD")


def released_skills(cfg: Config, ref: str, names: list[str]) -> dict[str, Any]:
    """The released-baseline binding: the ref, the commit it resolves to, each skill's published digest.

    A skill with no published copy at the ref is simply absent: its cases are candidate-only.
    """
    commit = _git(cfg, "rev-parse", "--verify", f"{ref}^{{commit}}")
    if commit is None:
        raise ConfigError(f"released ref {ref!r} does not resolve to a commit", fix="name a tag or commit of a prior release")
    skills = {}
    for name in names:
        try:
            files = released_tree(cfg, ref, name)
        except ConfigError:
            continue
        skills[name] = hashing.digest_entries(SKILL_DOMAIN, [hashing.TreeEntry(k, "100644", v) for k, v in files.items()])
    return {"ref": ref, "commit": commit, "skills": dict(sorted(skills.items()))}


def read_meta(path: Path, label: str, cap: int | None) -> dict[str, Any]:
    """meta.json, strictly, named by its raw-root-relative label (errors never carry a local path).

    An older version is upgraded when this skill-eval has the migration; a newer one is refused.
    """
    rec = strict.loads_json(strict.decode_utf8(strict.read_bytes(path, max_bytes=cap), label), label)
    version = rec.get("schema_version") if isinstance(rec, dict) else None
    if isinstance(version, int) and (("meta", version) in formats.UPGRADES or version > formats.FORMATS["meta"]):
        rec = formats.upgrade(rec, "meta", label)
    meta: dict[str, Any] = schemas.validate(rec, "meta", label)
    return meta


def local_free(text: str, *roots: Path) -> str:
    """Replace absolute producer-local prefixes in a reason with nothing: the stage names no local path."""
    for root in roots:
        for form in {str(root), str(root.resolve())}:
            text = text.replace(form + "/", "").replace(form, ".")
    return text


def scan_raw(cfg: Config, raw_root: Path) -> dict[tuple[str, str], list[tuple[str, dict[str, Any] | None, str | None]]]:
    """(scenario, arm) -> [(bundle path relative to raw_root, meta or None, problem or None)]."""
    out: dict[tuple[str, str], list[tuple[str, dict[str, Any] | None, str | None]]] = defaultdict(list)
    if not raw_root.is_dir():
        return out
    for meta_path in sorted(raw_root.rglob("meta.json")):
        parts = meta_path.parent.relative_to(raw_root).parts
        if len(parts) != LAYOUT_DEPTH or parts[0] == "trigger":
            continue
        rel = "/".join(parts)
        try:
            meta = read_meta(meta_path, f"{rel}/meta.json", cfg.max_bundle_file_bytes)
        except SkillEvalError as exc:  # attributed by its path, so it fails its case instead of vanishing
            arm = "released:" + parts[1][len("released-"):] if parts[1].startswith("released-") else parts[1]
            out[(parts[3], arm)].append((rel, None, message_of(exc)))
            continue
        if meta.get("kind") != "behavioral":
            continue
        problem = None
        want = (meta.get("skill"), arm_dir(str(meta.get("arm"))), meta.get("run_id"), meta.get("scenario"), str(meta.get("k")))
        if parts != want:
            problem = f"path says {rel} but meta.json says {'/'.join(map(str, want))}"
        out[(str(meta.get("scenario")), str(meta.get("arm")))].append((rel, meta, problem))
    return out


def _files(bundle: Path) -> dict[str, str]:
    # Raw evidence keeps .git directories and modes in view: nothing inside a bundle is skipped.
    return {e.path: hashing.sha256_bytes(e.data) for e in hashing.walk_tree(bundle, skip_dirs=frozenset())}


def run_entry(cfg: Config, cur: freshness.Current, catalog: Catalog, raw_root: Path, rel: str,
              meta: dict[str, Any] | None, problem: str | None) -> dict[str, Any]:
    path = raw_root / rel
    try:
        files = _files(path)
    except SkillEvalError as exc:
        files, problem = {}, problem or f"unreadable raw tree: {message_of(exc)}"
    judgments = files.pop(JUDGMENTS, None)  # the judge's layer: staged apart from the sealed raw files
    files.pop(judgments_mod.SIG, None)  # its signature (grading/judgments.py): checked below, not a raw file
    agent = (meta or {}).get("agent") or {}
    entry: dict[str, Any] = {
        "bundle": rel, "k": (meta or {}).get("k"), "run_id": (meta or {}).get("run_id"),
        "agent": {"name": agent.get("name"), "version": agent.get("version"), "binary_sha256": agent.get("binary_sha256")},
        "model": (meta or {}).get("model"), "scripted": (meta or {}).get("scripted") is True,
        "status": (meta or {}).get("status"), "files": files,
        "raw_sha256": hashing.digest_entries(RAW_DOMAIN, [hashing.TreeEntry(p, "100644", d.encode()) for p, d in files.items()]),
        "receipt_sha256": files.get("facts.json"), "judgments_sha256": judgments, "judges": [], "lift_vote": None,
    }
    reasons: list[str] = []
    state: RunState = "pass"
    if problem or meta is None:
        state, reasons = "fail", [problem or "meta.json is unreadable"]
    else:
        sealed = seal.verify(path, rel, regrade.signers_of(cfg))  # a release always requires signed evidence
        entry["seal"] = {"state": sealed.state, "principal": sealed.principal}
        untrusted = _untrusted(cfg, cur, meta, sealed.state)
        if sealed.state == "invalid":
            state, reasons = "fail", [f"forged: {sealed.reason}"]
        elif meta.get("status") != "complete":
            state = "incomplete"
            reasons = [f"run ended {meta.get('status')!r} ({meta.get('status_reason') or 'no reason'})", *untrusted]
            if not untrusted and outcomes.outcome_of(meta) in (outcomes.AGENT_ERROR, outcomes.BUDGET_STOP):
                entry["lift_vote"] = False  # the agent ended it (gave up, hit its budget): a scored failure
        else:
            g = judgments_mod.graded(path, catalog, regrade.signers_of(cfg))[0]  # only judgments that verify count
            entry["failures"] = [str(f) for f in g.failures()]
            entry["not_judged"] = g.incomplete()
            judges = _judges(path, catalog, regrade.signers_of(cfg))
            entry["judges"] = sorted({m for _, m, _p in judges})
            scripted_judge = sorted({d for d, m, _p in judges if m.startswith("scripted:")})
            lone_judge = sorted({d for d, m, panel in judges if not panel and not m.startswith("scripted:")})
            review = _needs_review(path, catalog, regrade.signers_of(cfg))  # a judge panel left these to a person: never a pass
            if g.failures():
                state, reasons = "fail", [f"failed checks {entry['failures']}"]
                entry["lift_vote"] = False if not untrusted else None
            else:
                reasons = untrusted + [f"dimension {d} needs human review: {why}" for d, why in review] + (
                    [f"dimension(s) {g.incomplete()} not judged (missing grade)"] if g.incomplete() else []) + (
                    [f"dimension(s) {scripted_judge} judged by a scripted judge"] if scripted_judge else []) + (
                    [f"dimension(s) {lone_judge} judged by one judge, not a panel (a release needs >= 2 judge models: "
                     "`skill-eval judge --model A --model B`, or [judge] models)"] if lone_judge else [])
                state = "incomplete" if reasons else "pass"
                entry["lift_vote"] = True if state == "pass" else None
    entry.setdefault("failures", [])
    entry.setdefault("not_judged", [])
    entry["state"], entry["reasons"] = state, [local_free(r, raw_root, cfg.root) for r in reasons]
    return entry


def _untrusted(cfg: Config, cur: freshness.Current, meta: dict[str, Any], sealed: str) -> list[str]:
    """Why this run's evidence cannot complete a release arm (it is not a verdict on the skill)."""
    stale = freshness.check_bundle_freshness(cfg, meta, cur)
    source = release_source_problem(meta, trust.policy(cfg).release_sources)  # at the base, not the work tree
    return ([f"stale: {stale[0]}"] if stale else []) + (
        ["unsigned: no seal (a release requires signed evidence, docs/SIGNING.md)"] if sealed == "unsigned" else []) + (
        [f"{source}: not a completed release arm"] if source else []) + (
        [f"recorded with isolation {meta.get('isolation', 'none')!r}: the agent and the runner's own tools were "
         "not in an OS sandbox (bubblewrap unavailable), so its evidence is incomplete unless waived"]
        if meta.get("isolation", "none") != "bwrap" else [])


def _judges(bundle: Path, catalog: Catalog, signers: tuple[Any, ...] = ()) -> list[tuple[int, str, bool]]:
    """(dimension, judge model, judged by a panel) of the current-rubric judgments replayed for this run
    (the latest per dimension), read by the one reader: only judgments that verify (grading/judgments.py)."""
    doc = judgments_mod.read_judgments(bundle, signers).doc
    if doc is None or catalog.rubric is None:
        return []
    try:
        entries = doc["judgments"]
        latest = {e["dimension"]: (str(e.get("judge_model", "")), isinstance(e.get("panel"), list) and len(e["panel"]) >= 2)
                  for e in entries if isinstance(e, dict) and e.get("rubric_version") == catalog.rubric.version}
    except (SkillEvalError, KeyError, TypeError):
        return []  # the grader already fails an unreadable judgments.json
    return sorted((d, m, panel) for d, (m, panel) in latest.items())


def _needs_review(bundle: Path, catalog: Catalog, signers: tuple[Any, ...] = ()) -> list[tuple[int, str]]:
    """(dimension, reason) where the latest current-rubric judgment is a panel's `needs human review`."""
    doc = judgments_mod.read_judgments(bundle, signers).doc
    if catalog.rubric is None or doc is None:
        return []
    try:
        entries = doc["judgments"]
        latest = {e["dimension"]: e for e in entries if isinstance(e, dict) and e.get("rubric_version") == catalog.rubric.version}
    except (SkillEvalError, KeyError, TypeError):
        return []
    return sorted((d, str(e["needs_human_review"])) for d, e in latest.items() if e.get("needs_human_review"))


def arm_entry(arm: str, runs: list[dict[str, Any]], need: int, keys: list[Any] | None = None) -> dict[str, Any]:
    """An arm is as good as its worst run; missing or duplicated runs are not a pass. `keys` are the runs'
    evidence-gate run keys (cells.run_key; None for an unreadable run): two runs with one key are a duplicate."""
    reasons: list[str] = []
    ks = sorted(r["k"] for r in runs if isinstance(r["k"], int))
    keys = keys if keys is not None else [(r["k"],) for r in runs]
    keyed = [key for key in keys if key is not None]
    dup = sorted({r["k"] for r, key in zip(runs, keys, strict=True) if key is not None and keyed.count(key) > 1}, key=str)
    missing = [k for k in range(need) if k not in ks]
    states = [r["state"] for r in runs]
    state: CaseState
    if "fail" in states or dup:
        state = "fail"
        reasons += [f"{r['bundle']}: {'; '.join(r['reasons'])}" for r in runs if r["state"] == "fail"]
        reasons += [f"run k={k} is recorded more than once" for k in dup]
    elif missing or "incomplete" in states:
        state = "incomplete"
        reasons += [f"missing run(s) k={missing}"] if missing else []
        reasons += sorted({f"{'; '.join(r['reasons'])}" for r in runs if r["state"] == "incomplete"})
    else:
        state = "complete"
    return {"arm": arm, "state": state, "reasons": reasons, "runs": sorted(runs, key=lambda r: (str(r["k"]), r["bundle"]))}


def _evidence_faults(arm: dict[str, Any] | None) -> list[str]:
    """Runs of a comparison arm that failed as evidence (forged, unreadable, misplaced, other skill bytes),
    not by the agent's checks: a wrong control, never a worse old skill."""
    return [f"{r['bundle']}: {'; '.join(r['reasons'])}" for r in (arm or {}).get("runs", []) if _evidence_fault(r)]


def _evidence_fault(run: dict[str, Any]) -> bool:
    """A run that failed as evidence: no failed check named (forged, unreadable, misplaced), or the wrong skill
    bytes. A run whose checks failed is not one, whatever its source (a scripted control may fail its checks)."""
    return run["state"] == "fail" and (not run["failures"] or any(UNBOUND in r for r in run["reasons"]))


def case_state(candidate: dict[str, Any], released: dict[str, Any] | None, required: bool,
               baseline: dict[str, Any] | None = None) -> tuple[CaseState, list[str]]:
    """fail: the candidate failed, or a comparison arm's evidence is wrong. incomplete: the candidate, a
    required released arm or the baseline arm is not complete. A released or baseline arm that *failed its
    checks* still completes the case (the old skill, or no skill, may simply do worse)."""
    if candidate["state"] == "fail":
        return "fail", [f"candidate: {r}" for r in candidate["reasons"]]
    faults = [f"released: {r}" for r in _evidence_faults(released)] + [f"baseline: {r}" for r in _evidence_faults(baseline)]
    if faults:
        return "fail", faults
    reasons = [f"candidate: {r}" for r in candidate["reasons"]]
    if required and released is not None and released["state"] == "incomplete":
        reasons += [f"released: {r}" for r in released["reasons"]]
    if baseline is not None and baseline["state"] == "incomplete":
        reasons += [f"baseline: {r}" for r in baseline["reasons"]]
    return ("incomplete" if reasons else "complete"), reasons


def assertions_digest(sc: Any) -> str:
    return hashing.record_digest(ASSERTIONS_DOMAIN, {"setup": [list(a) for a in sc.setup], "actions": [list(a) for a in sc.actions],
                                                     "oracle": sc.oracle})


def build(cfg: Config, *, source: str, released_ref: str | None, raw_root: Path) -> dict[str, Any]:
    """The snapshot: {"bindings": ..., "cases": {id: ...}} — no machine-local path anywhere."""
    if source not in SOURCES:
        raise ConfigError(f"unknown release source {source!r}", fix=f"use one of {', '.join(SOURCES)}")
    cur = freshness.current(cfg)
    suite = selection.select(cfg, "full", None, cur)
    catalog = Catalog(cfg)
    names = sorted(cur.skills)
    released = released_skills(cfg, released_ref, names) if released_ref else None
    found = scan_raw(cfg, raw_root)
    need = cfg.k if source == "evidence" else 1
    scan = _Scan(cfg, cur, catalog, raw_root, found, cells_mod.required(cfg), need, released)
    cases: dict[str, Any] = {}
    for cell in scan.cells.required:  # a case is one scenario in one cell (cells.py)
        for sc in sorted(suite.scenarios, key=lambda s: s.id):
            cases[cells_mod.case_id(sc.id, cell)] = _case(scan, sc, cell)
    runs = [r for c in cases.values() for a in c["arms"].values() if a for r in a["runs"]]
    agents = {(r["agent"]["name"], r["agent"]["version"], r["agent"]["binary_sha256"]) for r in runs}
    bindings = {
        "tool": {"name": "skill-eval", "version": __version__},
        "harness": cur.digest("harness"), "surface": cur.surface, "corpus": cur.digest("corpus"),
        "case_set_sha256": hashing.record_digest(CASES_DOMAIN, {
            i: {k: c[k] for k in ("skill", "scenario_sha256", "assertions_sha256", "human_review_questions")}
            for i, c in cases.items()}),
        "cells": scan.cells.binding(cells_mod.meta_cell(m) for rs in found.values() for _, m, _p in rs if m),
        "candidate_skills": {n: cur.digest(f"skill:{n}") for n in names},
        "released": released,
        "agents": [{"name": a, "version": v, "binary_sha256": b} for a, v, b in sorted(agents, key=lambda t: tuple(map(str, t)))],
        "models": sorted({str(r["model"]) for r in runs}),
        "judges": sorted({j for r in runs for j in r["judges"]}),
        "publication": publication_digest(cfg),
    }
    return {"bindings": bindings, "cases": cases, "lift": lift_gate.evaluate(cfg, cases)}


@dataclass(frozen=True)
class _Scan:
    """What every case of one snapshot reads: the checkout's digests, the graders, the raw runs found."""

    cfg: Config
    cur: freshness.Current
    catalog: Catalog
    raw_root: Path
    found: dict[tuple[str, str], list[tuple[str, dict[str, Any] | None, str | None]]]
    cells: cells_mod.Cells
    need: int
    released: dict[str, Any] | None

    def arm(self, scenario: str, cell: str, arm: str, bound: str | None = None) -> dict[str, Any]:
        """One arm of one case: the runs of `scenario` and `arm` recorded in `cell` (an unreadable run, whose
        cell is unknown, counts in every cell: it fails each case rather than vanish)."""
        mine = [r for r in self.found.get((scenario, arm), []) if r[1] is None or self.cells.of(r[1]) == cell]
        runs = [run_entry(self.cfg, self.cur, self.catalog, self.raw_root, *r) for r in mine]
        for r in runs:
            if bound is not None:
                _check_released_binding(self.raw_root / r["bundle"], bound, r)
        return arm_entry(arm, runs, self.need, [cells_mod.run_key(m, cell) if m else None for _, m, _p in mine])


def _case(scan: _Scan, sc: Any, cell: str) -> dict[str, Any]:
    released = scan.released
    required = released is not None and sc.skill in released["skills"]
    cand = scan.arm(sc.id, cell, CANDIDATE_ARM)
    rel = scan.arm(sc.id, cell, released_arm(released["ref"]), released["skills"][sc.skill]) if required else None  # type: ignore[index]  # required: released is not None
    base = scan.arm(sc.id, cell, BASELINE_ARM)
    state, reasons = case_state(cand, rel, required, base)
    return {
        "skill": sc.skill, "scenario": sc.id, "cell": cell, "scenario_sha256": scan.cur.digest(f"scenario:{sc.id}"),
        "assertions_sha256": assertions_digest(sc), "human_review_questions": list(sc.record.get("human_review_questions") or []),
        "baseline_required": required, "arms": {"candidate": cand, "released": rel, "baseline": base}, "state": state,
        "reasons": reasons,
    }


def _check_released_binding(path: Path, bound: str, run: dict[str, Any]) -> None:
    """A released run must have installed exactly the bound released bytes (the runner records them)."""
    if _evidence_fault(run):
        return  # already wrong evidence, for a reason named in the run
    try:
        meta = strict.load_json(path / "meta.json")
    except SkillEvalError:
        return
    got = (meta.get("extra") or {}).get("released_skill_digest")
    if got != bound:
        run["state"], run["lift_vote"] = "fail", None
        run["reasons"] = [f"installed released skill digest {got!r} {UNBOUND} {bound}"]
