"""Run by tests/interop/test_harbor.py under the harbor venv (Python >= 3.12, harbor pinned): harbor's own code.

  load TASK_DIR...      load each exported task with harbor's Task model and lint it with harbor's
                        task linter (`harbor lint`'s default rules); print, per task, what harbor read,
                        every task.toml key its TaskConfig would silently ignore, and the findings.
  job JOB_DIR SPEC      write a Harbor job directory with harbor's own models (JobConfig, TrialConfig,
                        TrialResult, JobResult, TrialPaths) around trial folders whose verifier/
                        outputs the test already produced; SPEC is JSON: {"trials": [{"task": DIR,
                        "trial": NAME, "agent": NAME, "model": NAME, "exception": null|TYPE}]}.
"""

from __future__ import annotations

import json
import sys
import tomllib
import types
import typing
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            m = _model_of(arg)
            if m is not None:
                return m
    return None


def ignored_keys(raw: dict[str, Any], model: type[BaseModel], prefix: str = "") -> list[str]:
    """Keys of raw that model does not declare (pydantic ignores them silently), recursively."""
    out = []
    fields = model.model_fields
    names = {n for n in fields} | {f.alias for f in fields.values() if f.alias}
    for key, value in raw.items():
        if key not in names:
            if key == "version" and "schema_version" in names:
                continue  # TaskConfig's documented legacy alias
            out.append(prefix + key)
            continue
        sub = _model_of(fields[key].annotation) if key in fields else None
        if sub is not None and isinstance(value, dict):
            out += ignored_keys(value, sub, f"{prefix}{key}.")
    return out


def load(dirs: list[str]) -> None:
    from harbor.lint.models import DEFAULT_RULES
    from harbor.lint.task import lint_task
    from harbor.models.task.config import TaskConfig
    from harbor.models.task.task import Task

    out = []
    for d in dirs:
        task = Task(d)
        raw = tomllib.loads(Path(d, "task.toml").read_text())
        test = task.paths.discovered_test_path_for(task.config.environment.os)
        out.append({"dir": d, "name": task.name, "valid": Task.is_valid_dir(d), "ignored": ignored_keys(raw, TaskConfig),
                    "instruction": task.instruction, "skills_dir": task.config.environment.skills_dir,
                    "workdir": task.config.environment.workdir, "test": str(test) if test else None,
                    "dockerfile": (task.paths.environment_dir / "Dockerfile").is_file(),
                    "metadata": task.config.metadata, "agent_timeout": task.config.agent.timeout_sec,
                    "lint": [f"{f.rule}: {f.message} ({f.path}:{f.line})" for f in lint_task(Path(d))
                             if f.rule in DEFAULT_RULES]})
    print(json.dumps(out))


def job(job_dir: str, spec_text: str) -> None:
    from harbor.models.job.config import JobConfig
    from harbor.models.job.result import JobResult, JobStats
    from harbor.models.task.task import Task
    from harbor.models.trial.config import AgentConfig, TrialConfig
    from harbor.models.trial.config import TaskConfig as TrialTaskConfig
    from harbor.models.trial.paths import TrialPaths
    from harbor.models.trial.result import AgentInfo, ExceptionInfo, ModelInfo, TimingInfo, TrialResult
    from harbor.models.verifier.result import VerifierResult

    spec = json.loads(spec_text)
    root = Path(job_dir)
    config = JobConfig(job_name=root.name, jobs_dir=root.parent)
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(config.model_dump_json(indent=4))
    t0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    results = []
    for i, tr in enumerate(spec["trials"]):
        task = Task(tr["task"])
        tconf = TrialConfig(task=TrialTaskConfig(path=Path(tr["task"])), trial_name=tr["trial"], trials_dir=root,
                            agent=AgentConfig(name=tr["agent"], model_name=tr["model"]))
        paths = TrialPaths(root / tr["trial"])
        paths.mkdir()
        paths.config_path.write_text(tconf.model_dump_json(indent=4))
        rewards = None
        if paths.reward_json_path.exists():
            rewards = json.loads(paths.reward_json_path.read_text())
        exc = None
        if tr.get("exception"):
            try:
                raise RuntimeError("synthetic failure")
            except RuntimeError as e:
                exc = ExceptionInfo.from_exception(e)
                exc.exception_type = tr["exception"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            checksum = task.checksum
        provider, _, name = tr["model"].partition("/")
        start = t0 + timedelta(minutes=i)
        result = TrialResult(
            task_name=task.name, trial_name=tr["trial"], trial_uri=paths.trial_dir.resolve().as_uri(),
            task_id=tconf.task.get_task_id(), task_checksum=checksum, config=tconf,
            agent_info=AgentInfo(name=tr["agent"], version="1.0.0", model_info=ModelInfo(name=name, provider=provider)),
            verifier_result=VerifierResult(rewards=rewards) if rewards is not None else None, exception_info=exc,
            started_at=start, finished_at=start + timedelta(seconds=90),
            agent_execution=TimingInfo(started_at=start, finished_at=start + timedelta(seconds=60)))
        paths.result_path.write_text(result.model_dump_json(indent=4))
        TrialResult.model_validate_json(paths.result_path.read_text())  # harbor reads back what it wrote
        results.append(result)
    job_result = JobResult(id=config.job_id if hasattr(config, "job_id") else results[0].id, started_at=t0,
                           finished_at=t0 + timedelta(hours=1), n_total_trials=len(results),
                           stats=JobStats.from_trial_results(results), trial_results=results)
    (root / "result.json").write_text(job_result.model_dump_json(indent=4))
    print(json.dumps({"job": str(root), "trials": [r.trial_name for r in results]}))


def main() -> int:
    from importlib.metadata import version

    import harbor  # noqa: F401 - the import itself is part of the check

    if sys.argv[1] == "version":
        print(version("harbor"))
    elif sys.argv[1] == "load":
        load(sys.argv[2:])
    elif sys.argv[1] == "job":
        job(sys.argv[2], sys.argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
