"""Support for the grading tests: a synthetic repository and synthetic bundles.

No test lives here; the module is named test_graders_* so it sits with the tests it
serves. Reports are small JSON objects with the fields the subject profile points at
(verdict, old_file.sha256/new_file.sha256, evidence_tiers, consumer_scope.verdict), so
these tests never run or import the subject tool.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from skill_eval.content import config
from skill_eval.core.formats import FORMATS
from skill_eval.grading.golden import RecordedCall, RecordedOutput, envelope, write_bundle
from skill_eval.grading.graders import Catalog

REPO = Path(__file__).resolve().parents[3]
SKILL = "abi-compat-review"

OLD = b"\x7fELF old library bytes"
NEW = b"\x7fELF new library bytes"
OTHER = b"\x7fELF unrelated library"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def truth_case(expected, exit_code, **extra) -> dict[str, Any]:
    rec = {
        "description": "synthetic", "old": "old/libdemo.so.1", "new": "new/libdemo.so.1", "expected": expected,
        "expected_exit": exit_code, "expected_kinds": [], "min_evidence": ["elf", "dwarf"], "platforms": ["linux-x86_64"],
    }
    rec.update(extra)
    return rec


CASES = {
    "breaking": truth_case("BREAKING", 4),
    "compatible": truth_case("COMPATIBLE", 0),
    "api-break": truth_case("API_BREAK", 2),
    "notcomp": truth_case(None, 16),
    "shallow": truth_case("BREAKING", 4),
    "coverage": truth_case("BREAKING", 4),
    "consumer": truth_case("BREAKING", 4, args=["--used-by", "app/app"], consumer_expected="COMPATIBLE"),
    "matrix": truth_case(
        None, 4,
        targets={
            "linux-x86_64": {"old": "x86/old/libdemo.so.1", "new": "x86/new/libdemo.so.1", "expected": "COMPATIBLE", "expected_exit": 0},
            "linux-aarch64": {"old": "arm/old/libdemo.so.1", "new": "arm/new/libdemo.so.1", "expected": "BREAKING",
                              "expected_exit": 4, "runnable": False},
        },
    ),
}


def scenario(id, fixture, cls="single-pair", category="A", expected=None, **extra) -> dict[str, Any]:
    rec = {"id": id, "skill": SKILL, "category": category, "status": "ready", "prompt": "Is it compatible?",
           "fixture": fixture, "invocation_class": cls}
    if expected is not None:
        rec["expected"] = expected
    rec.update(extra)
    return rec


SCENARIOS = [
    scenario("breaking", "breaking"),
    scenario("compatible", "compatible"),
    scenario("api-break", "api-break"),
    scenario("notcomp", "notcomp", category="B", expected={"verdict": None, "uncertainty": "not_comparable"}),
    scenario("shallow", "shallow", category="B", expected={"verdict": "BREAKING", "uncertainty": "evidence_too_shallow"}),
    scenario("coverage", "coverage", category="B", expected={"verdict": "BREAKING", "uncertainty": "contract_coverage_incomplete"}),
    scenario("consumer", "consumer", cls="consumer", category="B",
             expected={"verdict": "BREAKING", "consumer_verdict": "COMPATIBLE", "uncertainty": None}),
    scenario("matrix", "matrix", cls="release-matrix", category="B",
             expected={"verdict": None, "uncertainty": "matrix_target_unrun",
                       "matrix": {"required": ["linux-x86_64", "linux-aarch64"], "unrun": ["linux-aarch64"]}}),
    scenario("oracle", "compatible", actions=[["git", "status", "--porcelain"], ["cat", "NOTES.md"]],
             oracle={"tree-clean": {"predicate": "git-worktree-clean", "action": 0},
                     "notes": {"predicate": "file-contains", "action": 1, "path": "NOTES.md", "text": "COMPATIBLE"}}),
]

RUBRIC = {
    "schema_version": 1, "version": "r1",
    "dimensions": [
        {"id": 1, "name": "workflow", "grader": "deterministic", "gate": "baseline", "stage": "merge", "description": "d"},
        {"id": 2, "name": "uncertainty", "grader": "deterministic", "gate": "zero_tolerance", "stage": "merge", "description": "d"},
        {"id": 3, "name": "evidence", "grader": "deterministic", "gate": "baseline", "stage": "merge", "description": "d"},
        {"id": 4, "name": "root_cause", "grader": "judged", "gate": "baseline", "stage": "release", "description": "d"},
        {"id": 5, "name": "remediation", "grader": "judged", "gate": "baseline", "stage": "release", "description": "d"},
        {"id": 6, "name": "no_claim_without_evidence", "grader": "deterministic", "gate": "zero_tolerance", "stage": "merge", "description": "d"},
    ],
}

CORPUS = {"schema_version": 1, "prompts": [
    {"id": "pos", "prompt": "Did my .so break ABI?", "expected_skill": SKILL},
    {"id": "neg", "prompt": "Is my REST API backwards compatible?", "expected_skill": None},
]}


def make_repo(tmp: Path) -> config.Config:
    root = tmp / "repo"
    ev = root / "agent-evals" / "skills"
    ev.mkdir(parents=True)
    toml = (REPO / "skill-eval.toml").read_text()
    assert "\n[evals]\n" in toml
    # the oracle scenario reads NOTES.md through `cat`: allowed besides the subject and git (registry allow-list)
    # hand-built bundles are unsigned: this host labels them (the warn policy) instead of failing them; the
    # seal itself is tested on runner-recorded bundles (tests/grading/test_sealed_evidence.py)
    toml = toml.replace('signatures = "require"', 'signatures = "warn"')
    # the synthetic bundles are one scripted cell: no [[evals.matrix]] of the real host (tests set their own)
    toml = re.sub(r'\[\[evals\.matrix\]\]\nagent = "[^"]*"\nmodel = "[^"]*"\n', "", toml)
    (root / "skill-eval.toml").write_text(toml.replace("\n[evals]\n", '\n[evals]\naction_commands = ["cat"]\n', 1))
    (ev / "ground_truth.json").write_text(json.dumps({"schema_version": 1, "subject": "abicheck 0.7.0", "cases": CASES}))
    (ev / "scenarios.yaml").write_text(yaml.safe_dump({"schema_version": 1, "scenarios": SCENARIOS}))
    (ev / "rubric.yaml").write_text(yaml.safe_dump(RUBRIC))
    (ev / "trigger_corpus.yaml").write_text(yaml.safe_dump(CORPUS))
    for case, rec in CASES.items():
        fx = ev / "fixtures" / case
        for side, data in (("old", OLD), ("new", NEW)):
            p = fx / rec[side]
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        for t in rec.get("targets", {}).values():
            for side, data in (("old", OLD), ("new", NEW + t["old"].encode())):
                p = fx / t[side]
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
    return config.load(root)


def fixture_sha(cfg, case: str, rel: str) -> str:
    return sha((cfg.evals_dir / "fixtures" / case / rel).read_bytes())


def report(verdict, old=OLD, new=NEW, tiers=("elf", "dwarf", "dwarf_advanced"), consumer=None, coverage=None, sides=True) -> bytes:
    rep: dict[str, Any] = {"verdict": verdict, "evidence_tiers": list(tiers), "contract_coverage_failures": coverage or []}
    if sides:
        rep["old_file"] = {"path": "old/libdemo.so.1", "sha256": sha(old)}
        rep["new_file"] = {"path": "new/libdemo.so.1", "sha256": sha(new)}
    if consumer is not None:
        rep["consumer_scope"] = {"verdict": consumer}
    return json.dumps(rep).encode()


EXIT = {"NO_CHANGE": 0, "COMPATIBLE": 0, "COMPATIBLE_WITH_RISK": 0, "API_BREAK": 2, "BREAKING": 4, None: 16}


def pair_inputs(old="old/libdemo.so.1", new="new/libdemo.so.1", old_sha=None, new_sha=None) -> list[dict[str, Any]]:
    """The runner's v2 `inputs` for `abicheck compare OLD NEW`: both sides read, unchanged."""
    return [{"arg": 2, "path": old, "kind": "file", "sha256": old_sha or sha(OLD), "stable": True},
            {"arg": 3, "path": new, "kind": "file", "sha256": new_sha or sha(NEW), "stable": True}]


def compare(verdict, *, extra=(), old="old/libdemo.so.1", new="new/libdemo.so.1", dest="r.json", exit_code=None,
            data=None, inputs=None, **kw) -> RecordedCall:
    """A recorded compare. Its input digests default to the bytes its report says it compared
    (the fixture's OLD/NEW when the report states no sides), as the runner would record them."""
    argv = ["abicheck", "compare", old, new, *extra, "-o", f"json={dest}"]
    body = data if data is not None else report(verdict, **kw)
    code = EXIT[verdict] if exit_code is None else exit_code
    if inputs is None:
        try:
            rep = json.loads(body)
            inputs = pair_inputs(old, new, rep["old_file"]["sha256"], rep["new_file"]["sha256"])
        except (ValueError, KeyError, TypeError):
            inputs = pair_inputs(old, new)
    return RecordedCall(argv=argv, exit_code=code, stderr=f"Report written to {dest}\n".encode(),
                        outputs=[RecordedOutput("-o", "json", dest, "file", body)], inputs=inputs)


def meta(scenario_id="breaking", *, kind="behavioral", arm="skill-agent", tier="1", k=0, skill=SKILL, prompt_id=None):
    m = {"schema_version": FORMATS["meta"], "kind": kind, "arm": arm, "run_id": "run1", "k": k, "skill": skill,
         "agent": {"name": "scripted", "version": "1"}, "model": "scripted:abc", "adapter_tier": tier,
         "runner_version": "0.1.0", "digests": {}, "observed_inputs": [], "started_at": "2026-11-30T00:00:00Z",
         "finished_at": "2026-11-30T00:01:00Z", "status": "complete",
         "isolation": "none", "outcome": "completed"}
    if kind == "behavioral":
        m["scenario"] = scenario_id
    else:
        m["prompt_id"] = prompt_id
        m["skill"] = None
    return m


def activated(skill=SKILL):
    return [{"type": "skill_activated", "skill": skill, "tier": "1"}]


def claim(verdict, evidence=(1,), confident=True, kind=None, unresolved=("x",), **extra) -> dict[str, Any]:
    c: dict[str, Any] = {"verdict": verdict, "confident": confident, "evidence": list(evidence)}
    if not confident:
        c["uncertainty"] = {"kind": kind, "unresolved": list(unresolved)}
    c.update(extra)
    return c


def bundle(cfg, tmp: Path, scenario_id: str, calls, claim_obj=None, *, final=None, events=None, name="b", **kw) -> Path:
    dest = tmp / name
    if dest.exists():
        shutil.rmtree(dest)
    final_text = final if final is not None else envelope(claim_obj) if claim_obj is not None else "No idea.\n"
    m = kw.pop("meta", None) or meta(scenario_id)
    return write_bundle(dest, meta=m, calls=calls, events=activated() if events is None else events,
                        final=final_text, subject=cfg.subject, **kw)


def grade(cfg, path, catalog=None, coverage_path="contract_coverage_failures"):
    from skill_eval.grading import judgments

    cat = catalog or Catalog(cfg)
    if coverage_path is not None:
        cat.coverage_path = coverage_path
    # the graders' own tests: hand-built judgments count as fixtures (evidence needs judgments.sig)
    return judgments.graded(path, cat, (), fixture=True)[0]
