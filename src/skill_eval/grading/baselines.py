"""Per-(skill, agent, model) baselines for the baseline-gated dimensions (DESIGN §9.4).

Dimensions 1 and 3 (merge) and 4 and 5 (release) must not fall below the pass rate
recorded for the same skill, agent and model; so must the `oracle` rate (runs whose oracle
assertions all hold) of a skill with oracle scenarios, which is how an assertion not declared
zero-tolerance is gated. A baseline is recorded only from runs
whose zero-tolerance dimensions pass (a first run with a false green never becomes the
floor), and lowering one needs --allow-regression with a written reason, kept in the
file's history. A model change is a different key, so it re-baselines 1/3/4/5 and never
touches 2/6, which have no baseline at all.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import formats, fsio, schemas, strict
from skill_eval.core.errors import CheckFailed, ConfigError
from skill_eval.grading.graders import Grade

BASELINES = "baselines"
ORACLE = "oracle"  # the oracle check's pass rate: non-zero-tolerance assertions are baseline-gated like 1 and 3
MERGE_DIMS: tuple[int | str, ...] = (1, 3, ORACLE)
RELEASE_DIMS: tuple[int | str, ...] = (4, 5)


@dataclass(frozen=True, order=True)
class Triple:
    skill: str
    agent: str
    model: str

    def slug(self) -> str:
        safe = [re.sub(r"[^A-Za-z0-9._-]+", "_", part) for part in (self.skill, self.agent, self.model)]
        return "--".join(safe)


def triple_key(g: Grade) -> tuple[str, str, str] | None:
    """(skill, agent, model) of a behavioural grade that names all three, else None: the rule of a triple."""
    m = g.meta
    skill, agent, model = m.get("skill"), m.get("agent"), m.get("model")
    if g.kind != "behavioral" or not skill or not agent or not model:
        return None
    return skill, agent, model


def triple_of(g: Grade) -> Triple | None:
    key = triple_key(g)
    return None if key is None else Triple(*key)


def rates(grades: list[Grade], dims: tuple[int | str, ...], arm: str = "skill-agent") -> dict[Triple, dict[int | str, tuple[int, int]]]:
    """(passed, total) per dimension per triple; unjudged 4/5 runs are not counted.

    A dimension no run of the triple has (the `oracle` rate of a skill without oracle scenarios)
    or where it is not applicable to every run (2/3/6 of verdict-free scenarios) is left out: it
    does not apply, which is not the same as "no counted run" (all unjudged)."""
    out: dict[Triple, dict[int | str, list[int]]] = defaultdict(lambda: {d: [0, 0, 0] for d in dims})
    names = [(d, str(d)) for d in dims]
    triples: dict[tuple[str, str, str], Triple] = {}  # triple_of's answer, one Triple per distinct key
    for g in grades:
        key = triple_key(g) if g.meta.get("arm") == arm else None
        if key is None:
            continue
        t = triples.get(key)
        if t is None:
            t = triples[key] = Triple(*key)
        for d, name in names:
            status = g.status_of(name)
            if status is None or status == "not_applicable":
                continue
            counts = out[t][d]  # (a triple none of whose runs has a counted dimension stays out, as before)
            counts[2] += 1
            if status == "not_judged":
                continue
            counts[1] += 1
            counts[0] += status == "pass"
    return {t: {d: (v[0], v[1]) for d, v in ds.items() if v[2]} for t, ds in out.items()}


def baseline_dir(cfg: Config) -> Path:
    return fsio.repo_path(cfg.root, f"{cfg.evals_root}/{BASELINES}")


def path_for(cfg: Config, t: Triple) -> Path:
    return fsio.repo_path(cfg.root, baseline_dir(cfg) / f"{t.slug()}.json")


def load(cfg: Config, t: Triple) -> dict[str, Any] | None:
    path = path_for(cfg, t)
    if not path.exists():
        return None
    data: dict[str, Any] = schemas.validate(formats.upgrade(strict.load_json(path), "baseline", path), "baseline", path)
    if (data["skill"], data["agent"], data["model"]) != (t.skill, t.agent, t.model):
        raise ConfigError(f"records {data['skill']}/{data['agent']}/{data['model']}, not {t}", source=path)
    return data


def _rate(passed: int, total: int) -> float:
    return passed / total if total else 0.0


def gate(cfg: Config, grades: list[Grade], stage: str = "merge") -> list[str]:
    """Problems: a triple with evidence but no baseline, or a dimension below its baseline."""
    dims = MERGE_DIMS + (RELEASE_DIMS if stage == "release" else ())
    problems = []
    for t, per_dim in sorted(rates(grades, dims).items()):
        base = load(cfg, t)
        if base is None:
            problems.append(f"baseline: no baseline for {t.skill} / {t.agent} / {t.model}; "
                            f"record one with `skill-eval baseline update`")
            continue
        for d, (passed, total) in per_dim.items():
            if total == 0:
                if stage == "release":  # a release may not skip a gated dimension for lack of runs
                    problems.append(f"baseline: {t.skill}/{t.agent}/{t.model} dimension {d} has no counted run "
                                    "(not judged); the release gate needs judged evidence")
                continue
            recorded = base["dimensions"].get(str(d))
            if recorded is None:
                problems.append(f"baseline: {t.slug()} records no rate for dimension {d}")
            elif _rate(passed, total) < recorded["rate"]:
                problems.append(f"baseline: {t.skill}/{t.agent}/{t.model} dimension {d} pass rate "
                                f"{passed}/{total} is below the baseline {recorded['rate']:.2f}"
                                + (_failed_assertions(grades, t) if d == ORACLE else ""))
    return problems


def _failed_assertions(grades: list[Grade], t: Triple, limit: int = 5) -> str:
    """`: failed <case> '<assertion>' k=[..]; ...` — which assertions pulled the oracle rate down."""
    failed: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for g in grades:
        if triple_of(g) != t or g.meta.get("arm") != "skill-agent":
            continue
        for name, c in g.checks.items():
            if name.startswith(f"{ORACLE}:") and c.status == "fail":
                failed[(str(g.item), name[len(ORACLE) + 1:])].append(g.meta.get("k"))
    parts = [f"{item} {name!r} k={sorted(ks, key=str)}" for (item, name), ks in sorted(failed.items())]
    return ("; failed: " + "; ".join(parts[:limit]) + (f"; +{len(parts) - limit} more" if len(parts) > limit else "")) if parts else ""


def update(cfg: Config, grades: list[Grade], zero_tolerance_problems: list[str], *, skill: str | None = None,
           allow_regression: bool = False, reason: str | None = None, now: str | None = None) -> list[Path]:
    """Record baselines from graded evidence; refuses failing 2/6 and silent regressions."""
    if zero_tolerance_problems:
        raise CheckFailed("refusing to record a baseline while zero-tolerance dimensions fail: "
                          + "; ".join(zero_tolerance_problems[:5]), fix="fix the skill and re-run; 2 and 6 never get a baseline")
    if allow_regression and not (reason and reason.strip()):
        raise ConfigError("--allow-regression needs --reason explaining why the baseline may go down")
    if not now:
        from datetime import UTC, datetime  # here: the evidence gate never writes a baseline

        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    written = []
    all_rates = rates(grades, MERGE_DIMS + RELEASE_DIMS)
    if skill:
        all_rates = {t: r for t, r in all_rates.items() if t.skill == skill}
    if not all_rates:
        raise CheckFailed("no behavioural skill-agent bundles to baseline" + (f" for skill {skill}" if skill else ""))
    for t, per_dim in sorted(all_rates.items()):
        old = load(cfg, t)
        dims = {str(d): {"rate": round(_rate(p, n), 6), "passed": p, "total": n} for d, (p, n) in per_dim.items() if n}
        lowered = [d for d, v in dims.items() if old and d in old["dimensions"] and v["rate"] < old["dimensions"][d]["rate"]]
        if lowered and not allow_regression:
            raise CheckFailed(f"baseline for {t.skill}/{t.agent}/{t.model} would go down on dimension(s) {lowered}",
                              fix="fix the regression, or pass --allow-regression --reason '...'")
        history = list(old.get("history", [])) if old else []
        if old:
            history.append({"recorded_at": old["recorded_at"], "dimensions": old["dimensions"], "reason": old.get("reason")})
        record = {"schema_version": formats.FORMATS["baseline"], "skill": t.skill, "agent": t.agent, "model": t.model, "arm": "skill-agent",
                  "dimensions": {**(old["dimensions"] if old else {}), **dims}, "recorded_at": now,
                  "reason": reason if lowered else (reason or None), "history": history}
        schemas.validate(record, "baseline", "baseline record")
        written.append(fsio.write_file(cfg.root, path_for(cfg, t), strict.dumps_json(record)))  # never through a link
    return written
