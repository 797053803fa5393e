"""A Harbor job's trials as skill-eval bundles (`skill-eval import harbor JOB_DIR`).

A Harbor job directory (harbor 0.26.0, `harbor/job.py`, `harbor/models/trial/paths.py`) holds
config.json, result.json and one folder per trial: result.json (a TrialResult: task_name,
trial_name, agent_info, verifier_result.rewards, exception_info, timings), config.json,
agent/ and verifier/ (reward.json or reward.txt, test-stdout.txt, and what the verifier of an
exported task adds: oracle.json with each check, claim.json with the claim file it read).

Each trial of a task `skill-eval export harbor` wrote (task name `skill-eval/<scenario>`) becomes
one bundle at <evidence>/<skill>/skill-agent/harbor-<job>/<scenario>/<k>/. The bundle says where it
came from and what it is not: meta.json `adapter_tier: manual`, `isolation: none`, `scripted:
false`, `extra.origin: harbor` with the job, trial, agent and rewards; `harbor.json` keeps the
verifier's verdict as the reward and every check, and marks every dimension that needs recorded
calls or a judge as "not graded" (never pass). calls.jsonl and events.jsonl are empty: Harbor
recorded no subject call and no event stream skill-eval can read. The bundle has no seal
(docs/SIGNING.md): it is not signed runner evidence, and `grade` / the evidence gate treat it as
an unsigned bundle without the runner's receipts.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.claim import from_value
from skill_eval.content.config import SubjectProfile
from skill_eval.content.evals import Scenario
from skill_eval.core import schemas, strict
from skill_eval.core.errors import InputError, SkillEvalError, message_of

TASK_PREFIX = "skill-eval/"
ARM = "skill-agent"  # the task image installs the scenario's skill under skills_dir: the arm that offers it
ORIGIN = "harbor"
MAX_BYTES = 32 * 1024 * 1024
DIMENSIONS_NOT_GRADED = {
    "1": "not graded: needs the recorded subject calls (calls.jsonl), which Harbor does not record",
    "2": "not graded here: the Harbor verifier checked the claim's verdict and uncertainty against the truth "
         "(harbor.json checks), without the recorded reports dimension 2 also reads",
    "3": "not graded: needs the recorded subject calls",
    "4": "not graded: judged dimension, no judgment recorded",
    "5": "not graded: judged dimension, no judgment recorded",
    "6": "not graded: citations and grounding need the recorded calls and their reports",
    "activation": "not graded: Harbor keeps no event stream skill-eval can read",
}


@dataclass
class Trial:
    """What one Harbor trial folder says, read strictly."""

    path: Path
    task_name: str
    trial_name: str
    trial_id: str
    agent: dict[str, Any]
    rewards: dict[str, float] | None
    reward_valid: bool
    exception: dict[str, Any] | None
    started_at: str
    finished_at: str
    agent_result: dict[str, Any]
    task_path: str | None
    oracle: dict[str, Any] | None = None  # verifier/oracle.json (tasks exported by skill-eval)
    claim_bytes: bytes | None = None  # verifier/claim.json: the claim file the verifier read
    files: dict[str, bytes] = field(default_factory=dict)  # copied into the bundle under harbor/

    @property
    def scenario_id(self) -> str | None:
        return self.task_name[len(TASK_PREFIX):] if self.task_name.startswith(TASK_PREFIX) else None

    @property
    def reward(self) -> float | None:
        return None if self.rewards is None else self.rewards.get("reward", next(iter(self.rewards.values()), None))


def _need(doc: dict[str, Any], key: str, kind: type | tuple[type, ...], source: Path, optional: bool = False) -> Any:
    if key not in doc or doc[key] is None:
        if optional:
            return None
        raise InputError(f"has no `{key}`", source=source, field=key,
                         fix="pass a Harbor job directory (`harbor run` output: one folder per trial with result.json)")
    if not isinstance(doc[key], kind):
        raise InputError(f"`{key}` is {type(doc[key]).__name__}, not {getattr(kind, '__name__', kind)}", source=source,
                         field=key, fix="is this a Harbor trial result.json (schema_version 1)?")
    return doc[key]


def _rewards(value: Any, source: Path) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for k, v in value.items()):
        raise InputError("verifier_result.rewards is not a map of names to finite numbers", source=source,
                         field="verifier_result.rewards", fix="re-run the trial's verifier")
    return {k: float(v) for k, v in value.items()}


def read_trial(path: Path) -> Trial:
    res_path = path / "result.json"
    doc = strict.load_json(res_path, max_bytes=MAX_BYTES)
    if not isinstance(doc, dict):
        raise InputError("is not a JSON object", source=res_path, fix="pass a Harbor job directory")
    if doc.get("schema_version", 1) != 1:
        raise InputError(f"schema_version {doc.get('schema_version')!r} is not 1 (harbor 0.26's TrialResult)",
                         source=res_path, field="schema_version", fix="import with a skill-eval that reads it")
    if doc.get("step_results"):
        raise InputError("is a multi-step trial; exported skill-eval tasks have one step", source=res_path,
                         field="step_results")
    agent = _need(doc, "agent_info", dict, res_path)
    _need(agent, "name", str, res_path)
    vr = _need(doc, "verifier_result", dict, res_path, optional=True)
    config = _need(doc, "config", dict, res_path, optional=True) or {}
    task_cfg: dict[str, Any] = config["task"] if isinstance(config.get("task"), dict) else {}
    trial = Trial(
        path=path, task_name=_need(doc, "task_name", str, res_path), trial_name=_need(doc, "trial_name", str, res_path),
        trial_id=str(doc.get("id") or ""), agent=agent, rewards=_rewards((vr or {}).get("rewards"), res_path),
        reward_valid=doc.get("reward_valid") is True, exception=_need(doc, "exception_info", dict, res_path, optional=True),
        started_at=str(doc.get("started_at") or ""), finished_at=str(doc.get("finished_at") or ""),
        agent_result=_need(doc, "agent_result", dict, res_path, optional=True) or {},
        task_path=task_cfg.get("path") if isinstance(task_cfg.get("path"), str) else None)
    if doc.get("verifier_result") is not None and trial.rewards is None:
        trial.rewards = {}
    ver = path / "verifier"
    trial.files["result.json"] = res_path.read_bytes()
    for name in ("reward.json", "reward.txt", "oracle.json", "test-stdout.txt", "test-stderr.txt", "claim.json"):
        f = ver / name
        if f.is_file() and not f.is_symlink():
            data = f.read_bytes()
            if len(data) > MAX_BYTES:
                raise InputError(f"is larger than {MAX_BYTES} bytes", source=f)
            trial.files[f"verifier/{name}"] = data
    if "verifier/oracle.json" in trial.files:
        oracle = strict.loads_json(strict.decode_utf8(trial.files["verifier/oracle.json"], ver / "oracle.json"),
                                   ver / "oracle.json")
        if not isinstance(oracle, dict) or not isinstance(oracle.get("checks"), dict):
            raise InputError("is not the oracle.json an exported task's verifier writes", source=ver / "oracle.json",
                             fix="import jobs of tasks written by `skill-eval export harbor`")
        trial.oracle = oracle
    trial.claim_bytes = trial.files.get("verifier/claim.json")
    return trial


def read_job(job_dir: Path) -> list[Trial]:
    """Every trial folder (one holding result.json) of a Harbor job directory, by trial name."""
    if not job_dir.is_dir():
        raise InputError("is not a directory", source=job_dir, fix="pass a Harbor job directory (jobs/<job-name>)")
    trials = [read_trial(d) for d in sorted(job_dir.iterdir()) if d.is_dir() and not d.is_symlink()
              and (d / "result.json").is_file()]
    if not trials:
        raise InputError("holds no trial folder with result.json", source=job_dir,
                         fix="pass the job directory `harbor run` wrote (jobs/<job-name>), after its trials finished")
    return trials


def run_id_of(job_dir: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", job_dir.resolve().name).strip("-.") or "job"
    return f"harbor-{name}"[:80]


def _status(t: Trial) -> tuple[str, str, str]:
    """(meta status, outcome, status_reason)."""
    if t.exception is not None:
        kind = str(t.exception.get("exception_type") or "exception")
        msg = str(t.exception.get("exception_message") or "")[:300]
        outcome = "budget_stop" if "Timeout" in kind else "agent_error" if "Agent" in kind else "infra_error"
        return ("incomplete" if t.rewards is None else "error"), outcome, f"harbor: {kind}: {msg}".strip()
    if t.rewards is None:
        return "incomplete", "infra_error", "harbor: the verifier recorded no reward"
    return "complete", "completed", "imported from a Harbor trial; graded by the task's verifier (harbor.json)"


def _task_digest(t: Trial, sc: Scenario) -> dict[str, str]:
    """The scenario and skill digests the exported task carries (task.toml [metadata]), when the task
    folder the trial ran is still on this machine: the versions the trial answered."""
    if not t.task_path:
        return {}
    toml = Path(t.task_path) / "task.toml"
    try:
        meta = strict.loads_toml(strict.read_text(toml), toml).get("metadata") or {}
    except (SkillEvalError, OSError):
        return {}
    out = {}
    for key, name in ((f"scenario:{sc.id}", "scenario_digest"), (f"skill:{sc.skill}", "skill_digest")):
        d = meta.get(name)
        if isinstance(d, str) and re.fullmatch(r"[0-9a-f]{64}", d):
            out[key] = d
    return out


def _usage(t: Trial) -> dict[str, Any]:
    ar = t.agent_result

    def count(key: str) -> int | None:
        v = ar.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None

    cost = ar.get("cost_usd")
    return {"turns": 0, "tool_calls": 0, "tokens_in": count("n_input_tokens"), "tokens_out": count("n_output_tokens"),
            "cost_usd": float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0 else None,
            "wall_clock_s": 0.0, "retries": 0, "stop_reason": "harbor"}


def verdict_of(t: Trial, sc: Scenario) -> dict[str, Any]:
    """harbor.json: the Harbor verifier's verdict kept as the reward, each check, what is not graded."""
    checks = {}
    if t.oracle is not None and t.oracle.get("scenario") != sc.id:
        raise InputError(f"verifier/oracle.json grades scenario {t.oracle.get('scenario')!r}, but the trial's task is "
                         f"{t.task_name!r}", source=t.path / "verifier" / "oracle.json",
                         fix="import the job as Harbor wrote it (one trial folder per trial)")
    if t.oracle is not None:
        for name, c in sorted(t.oracle["checks"].items()):
            if isinstance(c, dict):
                checks[name] = {"passed": c.get("passed") is True, "reason": str(c.get("reason", ""))}
    passed = t.reward is not None and t.reward >= 1.0 and t.exception is None
    outcome = "pass" if passed else "fail"
    dims: dict[str, str] = {}
    if sc.actions or sc.oracle:
        dims["oracle"] = f"{outcome} (the Harbor verifier's command oracle; reward {t.reward!r})"
        dims["activation"] = DIMENSIONS_NOT_GRADED["activation"]
    else:
        dims["claim"] = f"{outcome} (the claim file checked against the truth; reward {t.reward!r})"
        dims.update(DIMENSIONS_NOT_GRADED)
    verdict = {"schema_version": 1, "origin": ORIGIN, "signed": False, "scenario": sc.id, "trial": t.trial_name,
               "reward": t.reward, "rewards": t.rewards, "reward_valid": t.reward_valid, "checks": checks,
               "dimensions": dims, "verifier_error": (t.oracle or {}).get("error"),
               "note": "imported: not signed runner evidence; no recorded calls, events or runner receipts (facts.json)"}
    schemas.validate(verdict, "import_verdict", t.path)  # what the imported grader reads back, checked here too
    return verdict


def bundle_files(t: Trial, sc: Scenario, subject: SubjectProfile | None, job_dir: Path, run_id: str, k: int,
                 prompt: str) -> dict[str, bytes]:
    status, outcome, reason = _status(t)
    info = t.agent
    model_info: dict[str, Any] = info["model_info"] if isinstance(info.get("model_info"), dict) else {}
    model = "/".join(str(x) for x in (model_info.get("provider"), model_info.get("name")) if x) or "unknown"
    verdict = verdict_of(t, sc)
    meta = {
        "schema_version": 2, "kind": "behavioral", "scenario": sc.id, "skill": sc.skill, "arm": ARM, "run_id": run_id,
        "k": k, "agent": {"name": str(info["name"]), "version": str(info.get("version") or "unknown")}, "model": model,
        "adapter_tier": "manual", "runner_version": f"harbor (imported by skill-eval import harbor from {job_dir.name})",
        "digests": _task_digest(t, sc), "observed_inputs": [], "started_at": t.started_at,
        "finished_at": t.finished_at, "status": status, "isolation": "none", "outcome": outcome,
        "status_reason": reason, "scripted": False,
        "extra": {"origin": ORIGIN, "signed": False, "credentials": "unknown",
                  "harbor": {"job": job_dir.name, "trial": t.trial_name, "trial_id": t.trial_id, "task": t.task_name,
                             "reward": t.reward, "rewards": t.rewards, "reward_valid": t.reward_valid}},
    }
    final, claim_file = _final_and_claim(t, subject)
    files = {
        "meta.json": strict.dumps_json(meta).encode(),
        "prompt.txt": prompt.encode(),
        "events.jsonl": b"",
        "calls.jsonl": b"",
        "final.md": final.encode(),
        "claim.json": strict.dumps_json(claim_file).encode(),
        "usage.json": strict.dumps_json(_usage(t)).encode(),
        "harbor.json": strict.dumps_json(verdict).encode(),
    }
    files.update({f"harbor/{rel}": data for rel, data in sorted(t.files.items())})
    return files


def _final_and_claim(t: Trial, subject: SubjectProfile | None) -> tuple[str, dict[str, Any]]:
    head = ("Imported from a Harbor trial: the agent's chat answer is not recorded here. What the task's "
            "verifier read is in harbor/verifier/.\n")
    if t.claim_bytes is None:
        return head, {"status": "absent", "reason": "imported from Harbor: no claim file was recorded"}
    try:
        value = strict.loads_json(strict.decode_utf8(t.claim_bytes, "claim file"), "claim file")
    except SkillEvalError as exc:
        return head, {"status": "invalid", "reason": message_of(exc)}
    if subject is None:
        return head, {"status": "invalid", "reason": "this host has no [subject] to read a claim with"}
    result = from_value(value, subject)
    body = strict.dumps_json(value).rstrip("\n")
    final = head + "\nThe claim file the agent wrote:\n\n```skill-eval-claim\n" + body + "\n```\n"
    return final, result.as_file()


def write_bundle(dest: Path, files: dict[str, bytes], force: bool = False) -> None:
    """Write one bundle atomically: every file into a temporary sibling folder, then one rename.

    The single place imported bundles reach the disk (the evidence store's layout may change:
    adapt here). An existing bundle is replaced only with force."""
    if dest.exists() and not force:
        raise InputError(f"{dest} already exists", fix="pass --force to replace it (the same trial imported again)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.import-", dir=dest.parent))
    try:
        for rel, data in sorted(files.items()):
            f = tmp / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
            f.chmod(0o644)
        tmp.chmod(0o755)
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            dest.rename(old)
            tmp.rename(dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
