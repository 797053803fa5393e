"""Support for the release tests: a four-case host (mini_repo) and runs recorded as bundles.

Bundles are written with `golden.write_bundle`, digests taken from the current checkout so the
runs are fresh; `judged=True` adds passing 4/5 judgments, `scripted=True` marks scripted turns.
Two cases per skill and `[stats] min_paired_scenarios = 2`, so the lift gate has a number (the
paired statistics never answer below 2); runs say they came from a remote provider, as the runner
records a real model's (meta.extra.model_source).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from conftest import git, git_commit_all, write

from skill_eval.content import config, freshness
from skill_eval.core import outcomes, seal
from skill_eval.core.formats import FORMATS
from skill_eval.grading import judgments as judgments_mod
from skill_eval.grading.golden import RecordedCall, RecordedOutput, envelope, write_bundle

SCENARIOS = """\
schema_version: 1
scenarios:
  - {id: alpha-break, skill: alpha, category: A, status: ready, prompt: "does it break?", fixture: case-one,
     invocation_class: single-pair, human_review_questions: ["Did it name the removed widget?"]}
  - {id: alpha-break-2, skill: alpha, category: A, status: ready, prompt: "does it break now?", fixture: case-one,
     invocation_class: single-pair, human_review_questions: ["Did it name the removed widget?"]}
  - {id: beta-same, skill: beta, category: A, status: ready, prompt: "same?", fixture: case-two, invocation_class: single-pair,
     human_review_questions: ["Did it avoid inventing work?"]}
  - {id: beta-same-2, skill: beta, category: A, status: ready, prompt: "still the same?", fixture: case-two,
     invocation_class: single-pair, human_review_questions: ["Did it avoid inventing work?"]}
"""
VERDICT = {"alpha-break": ("BROKEN", 4, "case-one"), "alpha-break-2": ("BROKEN", 4, "case-one"),
           "beta-same": ("OK", 0, "case-two"), "beta-same-2": ("OK", 0, "case-two")}
SKILL = {"alpha-break": "alpha", "alpha-break-2": "alpha", "beta-same": "beta", "beta-same-2": "beta"}
MODEL_SOURCE = "remote:api.example.invalid"
# a panel's entry (a release needs >= 2 judge models; a lone judge's entry leaves the run incomplete)
JUDGED = {"schema_version": 2, "judgments": [
    {"dimension": d, "passed": True, "score": 1, "judge_model": "judge-m + judge-n", "judge_version": "1", "rubric_version": "1",
     "prompt_sha256": "0" * 64, "rationale": "ok", "judged_at": "2026-11-30T00:00:00Z",
     "panel": [{"judge_model": m, "judge_version": "1", "score": 1, "passed": True, "rationale": "ok", "prompt_sha256": "0" * 64}
               for m in ("judge-m", "judge-n")],
     "agreement": {"statistic": "cohen", "kappa": 1.0, "items": 4, "floor": 0.6}} for d in (4, 5)]}
LONE_JUDGE = {"schema_version": 1, "judgments": [
    {"dimension": d, "passed": True, "score": 1, "judge_model": "judge-m", "judge_version": "1", "rubric_version": "1",
     "prompt_sha256": "0" * 64, "rationale": "ok", "judged_at": "2026-11-30T00:00:00Z"} for d in (4, 5)]}


@functools.lru_cache(maxsize=1)
def signing_key() -> tuple[Path, str]:
    """A key the tests generate, allowed in every release host: a release requires signed evidence."""
    key = Path(tempfile.mkdtemp(prefix="release-tests-key-")) / "evidence_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key, "release-tests@skill-eval " + " ".join(key.with_suffix(".pub").read_text().split()[:2])


def setup_host(root: Path) -> config.Config:
    """mini_repo with two ready scenarios (one per skill), tagged v1 as the released baseline."""
    write(root, "evals/scenarios.yaml", SCENARIOS)
    write(root, "evals/allowed_signers", signing_key()[1] + "\n")
    toml = (root / "skill-eval.toml").read_text()
    toml = toml.replace('verdict_path = "verdict"', 'verdict_path = "verdict"\nevidence_path = "evidence_tiers"')
    (root / "skill-eval.toml").write_text(toml + "\n[stats]\nmin_paired_scenarios = 2\n")
    git_commit_all(root, "release cases")
    git(root, "tag", "v1")
    return config.load(root)


def commit_evidence(root: Path) -> None:
    """Commit what the test wrote (its evidence): `release stage` takes a clean tested HEAD (candidate.py)."""
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "evidence")


def rubric_version(cfg: config.Config) -> str:
    from skill_eval.content.evals import load_rubric

    return load_rubric(cfg).version


def record_run(cfg: config.Config, scenario: str, arm: str, k: int, *, isolation: str = "bwrap", verdict: str | None = None, judged: bool = True,
               scripted: bool = False, status: str = "complete", root: Path | None = None, run_id: str = "run1",
               released_digest: str | None = None, model_source: str = MODEL_SOURCE, agent: str = "claude-code") -> Path:
    want, code, fixture = VERDICT[scenario]
    verdict = verdict or want
    skill = SKILL[scenario]
    cur = freshness.current(cfg)
    digests = {"harness": cur.digest("harness"), "surface": cur.surface, f"scenario:{scenario}": cur.digest(f"scenario:{scenario}")}
    if not arm.startswith("released:"):
        digests[f"skill:{skill}"] = cur.digest(f"skill:{skill}")
    meta: dict[str, Any] = {
        "schema_version": FORMATS["meta"], "isolation": isolation, "outcome": outcomes.derive(status, "" if status == "complete" else "timeout"),
        "kind": "behavioral", "arm": arm, "run_id": run_id, "k": k, "skill": skill, "scenario": scenario,
        "agent": {"name": agent, "version": "2.0", "binary_sha256": "a" * 64}, "model": "real-model-1",
        "adapter_tier": "1", "runner_version": "0.1.0", "digests": digests, "observed_inputs": [],
        "started_at": "2026-11-30T00:00:00Z", "finished_at": "2026-11-30T00:01:00Z", "status": status,
        "scripted": scripted, "extra": {"model_source": "scripted" if scripted else model_source,
                                        **({"released_skill_digest": released_digest} if released_digest else {})},
    }
    if status != "complete":
        meta["status_reason"] = "timeout"
    report = json.dumps({"verdict": verdict, "evidence_tiers": ["full"]}).encode()
    fx = cfg.evals_dir / "fixtures" / fixture
    extra: dict[str, Any] = {}
    if "inputs" in {f.name for f in dataclasses.fields(RecordedCall)}:  # call v2: the runner's input digests
        extra["inputs"] = [{"arg": i, "path": name, "kind": "file", "sha256": hashlib.sha256((fx / name).read_bytes()).hexdigest(),
                            "stable": True} for i, name in ((2, "old.w"), (3, "new.w"))]
    call = RecordedCall(argv=["tool", "compare", "old.w", "new.w", "-o", "json=r.json"], exit_code=code if verdict == want else 0,
                        outputs=[RecordedOutput("-o", "json", "r.json", "file", report)], **extra)
    base = root if root is not None else cfg.evals_dir / "evidence"
    dest = base / skill / arm.replace(":", "-") / run_id / scenario / str(k)
    rv = rubric_version(cfg)
    judgments = {"schema_version": 2, "judgments": [dict(j, rubric_version=rv) for j in JUDGED["judgments"]]} if judged else None
    claim = {"verdict": verdict, "confident": True, "evidence": [1]}
    out = write_bundle(dest, meta=meta, calls=[call], events=[{"type": "skill_activated", "skill": skill, "tier": "1"}]
                       if arm != "baseline" else [], final=envelope(claim), subject=cfg.subject, judgments=judgments)
    for name in (seal.SEAL, seal.SIG):  # a bundle written again over an earlier one is sealed again
        (out / name).unlink(missing_ok=True)
    seal.seal_tree(out, "/".join(out.parts[-5:]), meta, signing_key()[0])  # as the runner seals what it records
    judgments_mod.sign(out, signing_key()[0] if judged else None)  # as `skill-eval judge` binds what it appends
    return out
