"""`skill-eval registry`: check the evaluation registry and list every problem at once.

The same rules run whenever scenarios are loaded (`evals.load_scenarios`, which stops at the
first problem); this command collects them all, so a maintainer fixing a registry sees the whole
list: skill x mode coverage, unique ids, path/name agreement (fixture and sandbox = case id),
strict YAML/JSON, complete fixture seeds (seed.json valid, decoy/provenance bytes exact), and
every oracle assertion mapped to a supported predicate over a real action.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any

from skill_eval.commands._common import load_config, plural
from skill_eval.content import evals, skills
from skill_eval.core.errors import SkillEvalError
from skill_eval.core.output import emit

FAST_EXIT = True  # nothing left for the interpreter's teardown once run returns (cli.exit_now)
DESCRIPTION = (
    "Load scenarios.yaml with every registry rule and list every problem, one line each (file, field, "
    "fix): each skill covered in each declared mode by a ready scenario, unique case ids, fixture and "
    "sandbox named after the case, strict YAML/JSON, fixtures/<case>/seed.json present, valid and with "
    "exactly the listed decoy/provenance bytes, each oracle assertion on a supported predicate and a real "
    "action, verdict questions only for verdict skills. Exit 1 on any problem."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    del p  # no options beyond --root and --json


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    names = set(skills.discover(cfg))
    problems: list[SkillEvalError] = []
    scenarios: list[evals.Scenario] = []
    if evals.present(cfg, evals.SCENARIOS):
        try:
            scenarios = evals.load_scenarios(cfg, skills=names, problems=problems)
        except SkillEvalError as exc:  # the file itself (strict YAML, schema, ground truth) is unusable
            problems.append(exc)
    coverage: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for sc in scenarios:
        if sc.ready:
            coverage[sc.skill][sc.mode or "-"].append(sc.id)
    lines = [f"error: {p.render()}" for p in problems]
    lines.append(f"registry: {'FAIL' if problems else 'ok'} — {plural(len(scenarios), 'scenario')}, "
                 f"{plural(len(names), 'skill')}, modes {', '.join(cfg.modes) or '(none declared)'}, "
                 f"{plural(len(problems), 'problem')}")
    detail: dict[str, Any] = {
        "ok": not problems,
        "scenarios": len(scenarios),
        "oracle_scenarios": sum(1 for s in scenarios if not s.verdict),
        "modes": sorted(cfg.modes),
        "coverage": {skill: {m: sorted(ids) for m, ids in sorted(by.items())} for skill, by in sorted(coverage.items())},
        "problems": [p.as_dict() for p in problems],
    }
    emit(args, lines, detail)
    return 1 if problems else 0
