"""Scenarios as Harbor tasks (task.toml, instruction.md, environment/, tests/).

Two kinds of scenario can be expressed, both graded inside the task container by the verifier
this package ships (interop/harbor_verifier.py, copied to tests/verify.py with its tests/spec.json):

oracle  a scenario graded by its command oracle (DESIGN §9.3): the verifier re-runs its `actions`
        after the agent finished and evaluates each assertion's predicate. A fixture seed recipe
        (fixtures/<case>/seed.json) becomes RUN steps of the task image with fixed git dates, so
        the seeded HEAD is known at export time (computed here by replaying the recipe) and is
        checked when the image is built; `git-head-unchanged` compares with it.
claim   a verdict question: the instruction asks the agent to also write its claim envelope to
        a file, and the verifier checks it against the ground truth (verdict, confidence and
        uncertainty kind, consumer verdict, matrix targets) and that the fixture is untouched.
        Dimensions that need recorded subject calls are listed in spec.json as not graded.

Not expressible, each with its reason: `validation-pass` assertions (a configured validation
command's JSON result), a seed recipe running anything but git (its HEAD cannot be replayed
here), probe scenarios (what they test — a verdict resting on recorded calls, no suppression
flags — needs the recorded calls Harbor does not keep), and a subject with no pinned package to
install in the image. Harbor's formats: harbor 0.26.0 (`harbor/models/task/config.py`,
`harbor/models/task/paths.py`, `harbor/verifier/verifier.py`); tests/interop/test_harbor.py
loads every exported task with that package's own Task model.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.content.evals import UNCERTAINTY_KINDS, Scenario, TruthCase
from skill_eval.core.errors import ConfigError

HARBOR_VERSION = "0.26.0"  # the release whose task format this module writes (and the tests load with)
SCHEMA_VERSION = "1.4"  # harbor's TaskConfig.schema_version
SKILLS_DIR = "/runtime/skills"  # harbor's EnvironmentPaths.default_skills_dir
WORKDIR = "/app"
BASE_IMAGE = "python:3.12-slim-bookworm"
CLAIM_FILE = "skill-eval-claim.json"
ORACLE_PREDICATES = frozenset({"command-exit-zero", "file-contains", "git-worktree-clean", "git-managed-paths-only",
                               "git-head-unchanged"})
# Fixed git dates for the seed recipe in the image: with them the seeded commits (and so HEAD) are
# the same bytes wherever the recipe runs, here at export time or in Harbor's image build.
SEED_DATE = "2026-01-01T00:00:00Z"
SEED_ENV = {"GIT_AUTHOR_DATE": SEED_DATE, "GIT_COMMITTER_DATE": SEED_DATE, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null"}
NOT_GRADED_CLAIM = ["1 workflow_chosen (needs the recorded subject calls)",
                    "3 evidence_obtained (needs the recorded subject calls)",
                    "4 root_cause and 5 remediation (judged)",
                    "6 no_claim_without_evidence: citations and grounding (need the recorded calls and their reports)"]


@dataclass(frozen=True)
class Task:
    id: str
    files: dict[str, bytes]  # task-relative path -> bytes (environment/workspace/* and skills/* included)
    executable: frozenset[str]


@dataclass(frozen=True)
class Subject:
    """What the task image installs: the subject CLI's PyPI package, pinned (None: nothing)."""

    name: str | None
    package: str | None
    version: str | None
    verdicts: tuple[str, ...] = ()

    @property
    def pin(self) -> str | None:
        return f"{self.package}=={self.version}" if self.package and self.version else None


def kind_of(sc: Scenario) -> str:
    return "oracle" if sc.actions or sc.oracle else "claim"


def why_not(sc: Scenario, subject: Subject) -> str | None:
    """Why a scenario cannot be a Harbor task, or None when it can."""
    if sc.actions or sc.oracle:
        if not sc.actions or not sc.oracle:
            return "it declares actions without an oracle (or an oracle without actions): nothing to grade"
        bad = sorted({spec["predicate"] for spec in sc.oracle.values()} - ORACLE_PREDICATES)
        if bad:
            return (f"predicate(s) {', '.join(bad)} have no form in the Harbor verifier "
                    "(a configured validation command's JSON result is not reproduced in the task image)")
        if sc.seed is not None:
            other = sorted({argv[0] for argv in sc.seed.commands if argv[0] != "git"})
            if other:
                return (f"its seed recipe ({sc.seed.source}) runs {', '.join(other)}: only git recipes are "
                        "replayed at export time to know the seeded HEAD")
        if subject.name and any(a[0] == subject.name for a in sc.actions) and not subject.pin:
            return "its actions call the subject CLI, which has no pinned package ([subject] package/version)"
        return None
    if not sc.verdict:
        return "no actions + oracle and no verdict question: nothing Harbor could grade"
    if sc.probe:
        return (f"probe scenario ({sc.probe}): what it tests — a verdict resting on recorded subject calls, "
                "reached without suppression flags — needs the recorded calls (calls.jsonl), which Harbor does not keep")
    if not subject.pin:
        return "verdict question but the subject has no pinned package ([subject] package/version) to install"
    return None


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def task_toml(sc: Scenario, agent_timeout: float, digests: dict[str, str]) -> str:
    """task.toml; [metadata] carries the pack digests of the scenario and skill it was exported from."""
    first = sc.prompt.strip().splitlines()[0][:120] if sc.prompt.strip() else sc.id
    checks = sorted(sc.oracle) if kind_of(sc) == "oracle" else ["claim"]
    lines = [
        f"schema_version = {_toml_str(SCHEMA_VERSION)}",
        "",
        "[task]",
        f"name = {_toml_str('skill-eval/' + sc.id)}",
        f"description = {_toml_str(f'{sc.skill}: {first}')}",
        f"keywords = [{_toml_str('skill-eval')}, {_toml_str(sc.skill)}]",
        "",
        "[metadata]",
        f"skill = {_toml_str(sc.skill)}",
        f"scenario = {_toml_str(sc.id)}",
        f"kind = {_toml_str(kind_of(sc))}",
        'exported_by = "skill-eval export harbor"',
        f"checks = [{', '.join(_toml_str(n) for n in checks)}]",
    ]
    for key, name in (("scenario", "scenario_digest"), ("skill", "skill_digest")):
        if digests.get(key):
            lines.append(f"{name} = {_toml_str(digests[key])}")
    lines += [
        "",
        "[agent]",
        f"timeout_sec = {float(agent_timeout)}",
        "",
        "[verifier]",
        "timeout_sec = 600.0",
        "",
        "[environment]",
        "build_timeout_sec = 900.0",
        f"skills_dir = {_toml_str(SKILLS_DIR)}",
        f"workdir = {_toml_str(WORKDIR)}",
        "",
    ]
    return "\n".join(lines)


def dockerfile(sc: Scenario, subject: Subject, seed_head: str | None) -> str:
    lines = [f"FROM {BASE_IMAGE}",
             "RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*"]
    if subject.pin:
        lines.append(f"RUN pip install --no-cache-dir {shlex.quote(subject.pin)}")
    lines += [f"WORKDIR {WORKDIR}", f"COPY workspace/ {WORKDIR}/", f"COPY skills/ {SKILLS_DIR}/"]
    if sc.seed is not None:
        env = [f"{k}={v}" for k, v in SEED_ENV.items()]
        lines.append(f"# The fixture's seed recipe ({sc.seed.source}), with fixed git dates: HEAD is checked below.")
        lines += [f"RUN {shlex.join(['env', *env, *argv])}" for argv in sc.seed.commands]
        if seed_head:
            lines.append(f'RUN test "$(git rev-parse --verify HEAD)" = {seed_head} '
                         f'|| {{ echo "seed recipe did not reproduce HEAD {seed_head}" >&2; exit 1; }}')
    return "\n".join(lines) + "\n"


TEST_SH = """#!/usr/bin/env bash
# Generated by `skill-eval export harbor`: grades the scenario inside the task container
# (tests/verify.py reads tests/spec.json) and writes /logs/verifier/reward.json.
set -u
exec python3 "$(dirname "$0")/verify.py"
"""


def instruction(sc: Scenario, template: str | None) -> str:
    text = template.replace("{prompt}", sc.prompt.strip()) if template else sc.prompt.strip()
    if kind_of(sc) == "claim":
        text = text.rstrip("\n") + (
            f"\n\nAlso write the same JSON object (the content of your `skill-eval-claim` block, nothing else) "
            f"to the file `{CLAIM_FILE}` in the current directory ({WORKDIR}/{CLAIM_FILE}): this task's "
            "verifier reads that file, not your answer.")
    return text.rstrip("\n") + "\n"


def replay_seed(sc: Scenario, fixture: dict[str, tuple[bytes, bool]]) -> tuple[str | None, dict[str, list[str]]]:
    """(HEAD after the seed recipe, the tree manifest the agent receives) — the recipe replayed in a
    scratch copy of the fixture with the image's fixed git dates. Without a seed: (None, the fixture)."""
    from skill_eval.interop.harbor_verifier import git_head, tree_state

    with tempfile.TemporaryDirectory(prefix="skill-eval-harbor-seed-") as tmp:
        root = Path(tmp) / "app"
        for rel, (data, exe) in fixture.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            p.chmod(0o755 if exe else 0o644)
        root.mkdir(exist_ok=True)
        if sc.seed is None:
            return None, tree_state(root)
        if shutil.which("git") is None:
            raise ConfigError("git is not on PATH: exporting a scenario with a seed recipe replays it with git",
                              fix="install git")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, **SEED_ENV,
               "HOME": str(Path(tmp) / "home")}
        for argv in sc.seed.commands:
            r = subprocess.run(list(argv), cwd=root, env=env, capture_output=True, check=False)
            if r.returncode != 0:
                raise ConfigError(f"seed command {list(argv)} exited {r.returncode} when replayed for export: "
                                  f"{r.stderr.decode('utf-8', 'replace').strip()[:200]}", source=sc.seed.source,
                                  fix="fix the recipe (`skill-eval pr` runs it too)")
        return git_head(root), tree_state(root)


def claim_expectation(sc: Scenario, truth: TruthCase | None, subject: Subject) -> dict[str, Any]:
    """What the claim must say: DESIGN §9.1's envelope, checked against ground truth / `expected`."""
    if truth is None:
        raise ConfigError(f"scenario {sc.id}: no ground truth for fixture {sc.fixture!r}", fix="add it to ground_truth.json")
    exp: dict[str, Any] = {"file": CLAIM_FILE, "verdicts": list(subject.verdicts),
                           "uncertainty_kinds": list(UNCERTAINTY_KINDS), "verdict": sc.expected_verdict(truth),
                           "confident": sc.uncertainty is None}
    if sc.uncertainty:
        exp["uncertainty_kind"] = sc.uncertainty
    consumer = (sc.expected or {}).get("consumer_verdict") if sc.expected else None
    if consumer is None and sc.invocation_class == "consumer":
        consumer = truth.consumer_expected
    if consumer is not None or sc.invocation_class == "consumer":
        exp["consumer_verdict"] = consumer
    matrix = (sc.expected or {}).get("matrix") or {}
    required = list(matrix.get("required") or truth.targets)
    if required and sc.invocation_class == "release-matrix":
        exp["matrix_required"] = sorted(required)
        exp["matrix_unrun"] = sorted(matrix.get("unrun") or [])
    return exp


def spec_json(sc: Scenario, seed_head: str | None, baseline: dict[str, list[str]],
              claim: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schema_version": 1, "scenario": sc.id, "skill": sc.skill, "kind": kind_of(sc),
                            "workdir": WORKDIR, "baseline": baseline}
    if kind_of(sc) == "oracle":
        spec.update(actions=[list(a) for a in sc.actions], oracle=sc.oracle, seed_head=seed_head,
                    zero_tolerance=list(sc.zero_tolerance_assertions), not_graded=[])
    else:
        spec.update(claim=claim, not_graded=NOT_GRADED_CLAIM)
    return spec


def build_task(sc: Scenario, fixture: dict[str, tuple[bytes, bool]], skill_files: dict[str, tuple[bytes, bool]],
               agent_timeout: float, digests: dict[str, str], *, subject: Subject, template: str | None = None,
               truth: TruthCase | None = None) -> Task:
    if sc.seed is not None:  # the recipe is the runner's (and the image's), not part of the agent's work tree
        fixture = {k: v for k, v in fixture.items() if k != "seed.json"}
    if not fixture:
        fixture = {".keep": (b"", False)}
    seed_head, baseline = replay_seed(sc, fixture)
    claim = claim_expectation(sc, truth, subject) if kind_of(sc) == "claim" else None
    verifier = (Path(__file__).with_name("harbor_verifier.py")).read_bytes()
    files: dict[str, bytes] = {
        "task.toml": task_toml(sc, agent_timeout, digests).encode(),
        "instruction.md": instruction(sc, template).encode(),
        "environment/Dockerfile": dockerfile(sc, subject, seed_head).encode(),
        "tests/test.sh": TEST_SH.encode(),
        "tests/verify.py": verifier,
        "tests/spec.json": (json.dumps(spec_json(sc, seed_head, baseline, claim), indent=1, sort_keys=True) + "\n").encode(),
    }
    executable = {"tests/test.sh", "tests/verify.py"}
    for rel, (data, exe) in fixture.items():
        path = f"environment/workspace/{rel}"
        files[path] = data
        if exe:
            executable.add(path)
    for rel, (data, exe) in skill_files.items():
        path = f"environment/skills/{sc.skill}/{rel}"
        files[path] = data
        if exe:
            executable.add(path)
    return Task(sc.id, files, frozenset(executable))


def summary(tasks: list[Task], skipped: dict[str, str]) -> dict[str, Any]:
    return {"tasks": [t.id for t in tasks], "not_expressible": skipped, "harbor_version": HARBOR_VERSION}
