"""The release's lift gate (DESIGN §10, issue 28 item 2): non-negative lift, per skill, from the stage.

Per skill (and per matrix cell, cells.py), the candidate (`skill-agent`) is compared with two controls over the staged runs:
the `baseline` arm (no skill offered) and, when the skill was published at the released ref,
the `released:<ref>` arm. The statistics are the scorecard's (reporting/lift.py: one vote per
scenario, paired by scenario, seeded bootstrap CI, exact sign test), unchanged. The gate reads
only the CI:

  pass        the CI's lower bound >= -margin ([release] lift_margin; 0 = the lift must not be
              negative), i.e. the candidate is shown not to be worse than the control by more
              than the margin;
  fail        the lower bound < -margin: the evidence allows the candidate to be worse;
  incomplete  INDETERMINATE (fewer than [stats] min_paired_scenarios paired scenarios) or ERROR
              (infrastructure errors dominate): there is no number, so never a pass;
  not_applicable  the released comparison of a skill with no released arm (candidate-only).

A run votes (stage run entry `lift_vote`) only when its evidence can complete a release arm
(signed, fresh, a counted model source, isolated, judged): pass -> true; failed checks, or a run
the agent itself ended (agent error, budget stop) -> false; anything else (scripted, unsigned,
unjudged, an infrastructure error) -> not scored. So scripted evidence never pairs and its
lift is INDETERMINATE.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from skill_eval.content.config import Config
from skill_eval.reporting import lift
from skill_eval.reporting.release import cells

GateStatus = Literal["pass", "fail", "incomplete", "not_applicable"]
CONTROLS = ("baseline", "released")
MARGIN_DEFAULT = 0.0


def margin_of(cfg: Config) -> float:
    """[release] lift_margin: how far below zero the CI's lower bound may reach (default 0)."""
    table = cfg.raw.get("release") or {}
    return float(table.get("lift_margin", MARGIN_DEFAULT))


def _runs(runs: list[dict[str, Any]], scenario: str) -> list[lift.Run]:
    """A run cut off by anything but the agent (no vote, not complete) counts towards the infra-error rate."""
    return [lift.Run(scenario, r["lift_vote"], r["lift_vote"] is None and r["status"] not in (None, "complete"))
            for r in runs]


def gate(result: lift.Lift, margin: float) -> tuple[GateStatus, str]:
    """The gate's reading of one comparison (pure: a test drives it with any Lift)."""
    if not result.has_number or result.ci is None:
        return "incomplete", f"{result.verdict}: {result.reason} (no number: never a pass)"
    lo, hi = result.ci
    if lo >= -margin:
        return "pass", f"CI lower bound {lo:+.3f} >= -margin {-margin:+.3f} (effect {result.effect:+.3f}, n = {result.n_paired})"
    return "fail", (f"CI lower bound {lo:+.3f} < -margin {-margin:+.3f}: the candidate may be worse "
                    f"(effect {result.effect:+.3f}, CI [{lo:+.3f}, {hi:+.3f}], n = {result.n_paired})")


def evaluate(cfg: Config, cases: dict[str, Any]) -> dict[str, Any]:
    """{"margin", "min_paired_scenarios", "skills": {skill: {control: {gate, reason, figures...}}}} from staged cases;
    a skill is keyed `skill@agent/model` per matrix cell when the release tells cells apart (cells.scoped)."""
    settings = lift.Settings.of(cfg.stats)
    margin = margin_of(cfg)
    arms: dict[str, dict[str, list[lift.Run]]] = defaultdict(lambda: defaultdict(list))
    released_arm: dict[str, str | None] = {}
    for cid, c in sorted(cases.items()):
        skill = cells.scoped(c["skill"], c.get("cell", cells.ANY))  # per skill in each matrix cell
        for key, arm in c["arms"].items():
            if arm is not None:
                arms[skill][key] += _runs(arm["runs"], cid)
        rel = c["arms"]["released"]
        if c["baseline_required"] and rel is not None:
            released_arm[skill] = rel["arm"]
        else:
            released_arm.setdefault(skill, None)
    skills: dict[str, Any] = {}
    for skill in sorted(arms):
        out: dict[str, Any] = {}
        for control in CONTROLS:
            name = "baseline" if control == "baseline" else released_arm.get(skill)
            if name is None:
                out[control] = {"control": None, "gate": "not_applicable", "reason": "no released arm for this skill"}
                continue
            result = lift.lift("skill-agent", name, arms[skill]["candidate"], arms[skill][control], settings)
            status, why = gate(result, margin)
            out[control] = {**result.to_json(), "gate": status, "reason": f"{result.reason}; gate: {why}" if result.reason
                            and status != "incomplete" else why}
        skills[skill] = out
    return {"margin": margin, "min_paired_scenarios": settings.min_paired_scenarios, "confidence": settings.confidence,
            "skills": skills}


def problems(record: dict[str, Any]) -> tuple[list[str], dict[str, list[str]]]:
    """(fail reasons, {skill: incomplete reasons}) of a staged lift record."""
    fail: list[str] = []
    incomplete: dict[str, list[str]] = defaultdict(list)
    for skill, controls in sorted(record["skills"].items()):
        for control, res in sorted(controls.items()):
            name, cell = cells.unscoped(skill)
            what = f"lift of skill-agent over {res.get('control') or control} for skill {name}" + (f" in cell {cell}" if cell else "")
            if res["gate"] == "fail":
                fail.append(f"{what}: {res['reason']}")
            elif res["gate"] == "incomplete":
                incomplete[skill].append(f"{what}: {res['reason']}")
    return fail, dict(incomplete)
