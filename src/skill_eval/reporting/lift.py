"""Lift with statistics a skeptic accepts: paired by scenario, one vote per scenario.

Pure functions over plain data (stdlib only, no I/O), so every figure on the scorecard can be
recomputed by hand. The unit of evidence is the *scenario*, never the run: the k repeats of a
scenario share a prompt, a fixture and a model, so they are not independent, and pooling them
would turn four scenarios into forty "observations" (a peer's sign test went from p = 1/16 to
1/4096 that way). So each arm's repeats are averaged into one pass rate per scenario, the two
arms are paired on the scenarios both ran, and the effect is the mean paired difference.

Three guards stand between a difference and the word LIFT:
- too few paired scenarios (`min_paired_scenarios`, default 6) -> INDETERMINATE, never a number;
- the seeded paired bootstrap CI must exclude 0 *and* the exact two-sided sign test (ties
  dropped) must be below alpha = 1 - confidence;
- the effect must exceed the A/A noise floor: the largest difference two recordings of the
  *same* arm still show at the same confidence. Without an A/A recording the floor is unknown
  and a significant effect is UNCALIBRATED, not LIFT (a peer saw 27 % of verdicts flip on
  byte-identical inputs).
Cells where infrastructure errors (not the agent) ended more than `max_infra_error_rate` of the
runs are ERROR: such runs are excluded from scoring, and when they dominate, what is left is
not a sample of the skill.
Comparisons (and A/A calibrations) over runs of which more than `max_incomplete_rate` never
finished — cut by their budget, no final answer, or a verdict scenario left with neither a subject
call nor a claim (`Run.incomplete`) — are INCONCLUSIVE, never a number: two arms that both stop
before the question measure nothing, and a 0 % false-difference rate over them is an artefact.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from skill_eval.core.vocab import CalibrationStatus, LiftVerdict

LIFT: Final = "LIFT"
REGRESSION: Final = "REGRESSION"
NO_LIFT: Final = "NO_LIFT"
UNCALIBRATED: Final = "UNCALIBRATED"
INDETERMINATE: Final = "INDETERMINATE"
INCONCLUSIVE: Final = "INCONCLUSIVE"
ERROR: Final = "ERROR"
VERDICTS: tuple[LiftVerdict, ...] = (LIFT, REGRESSION, NO_LIFT, UNCALIBRATED, INDETERMINATE, INCONCLUSIVE, ERROR)


@dataclass(frozen=True)
class Settings:
    """The [stats] table (config.Stats has the same fields; kept separate so this module has no imports)."""

    bootstrap_samples: int = 2000
    min_paired_scenarios: int = 6
    seed: int = 20260101
    confidence: float = 0.95
    max_infra_error_rate: float = 0.25
    max_incomplete_rate: float = 0.25

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @classmethod
    def of(cls, obj: Any) -> Settings:
        return cls(**{f: getattr(obj, f) for f in cls.__dataclass_fields__})


# -- runs -> one vote per scenario ---------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """One recorded run as the statistics see it: its scenario, whether it passed, how it ended.

    `passed` is None for a run that cannot be scored (an infrastructure error): it never counts
    as a skill failure, but it counts towards the cell's infra-error rate. `incomplete` names why a
    scored run never finished (e.g. "budget_stop"; "" when it did): it still counts as a failure,
    and it counts towards the incomplete rate.
    """

    scenario: str
    passed: bool | None
    infra_error: bool = False
    incomplete: str = ""


def scenario_rates(runs: Iterable[Run]) -> dict[str, float]:
    """Pass rate per scenario over its scored runs (repeats averaged, never pooled).

    A scenario whose every run was an infra error has no rate and so is not paired.
    """
    tally: dict[str, list[int]] = {}
    for r in runs:
        if r.infra_error or r.passed is None:
            continue
        t = tally.setdefault(r.scenario, [0, 0])
        t[0] += bool(r.passed)
        t[1] += 1
    return {s: p / n for s, (p, n) in tally.items() if n}


def infra_error_rate(runs: Sequence[Run]) -> float:
    return sum(1 for r in runs if r.infra_error) / len(runs) if runs else 0.0


def incomplete_rate(runs: Sequence[Run]) -> float:
    """Share of the scored runs that never finished (infra errors are ERROR's business, not counted here)."""
    scored = [r for r in runs if not r.infra_error]
    return sum(1 for r in scored if r.incomplete) / len(scored) if scored else 0.0


def inconclusive_reason(arms: Sequence[tuple[str, Sequence[Run]]], settings: Settings) -> str:
    """Why a comparison over these arms is INCONCLUSIVE ("" when it is not): an arm whose scored runs
    are more than `max_incomplete_rate` incomplete, with the count and the commonest reasons."""
    for name, arm_runs in arms:
        rate = incomplete_rate(arm_runs)
        if rate > settings.max_incomplete_rate:
            why: dict[str, int] = {}
            for r in arm_runs:
                if r.incomplete and not r.infra_error:
                    why[r.incomplete] = why.get(r.incomplete, 0) + 1
            top = ", ".join(f"{n} {w}" for w, n in sorted(why.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
            return (f"{rate:.0%} of {name} runs are incomplete ({top}) > max_incomplete_rate "
                    f"{settings.max_incomplete_rate:.0%}: runs that never finished measure nothing")
    return ""


def paired_differences(treatment: Mapping[str, float], control: Mapping[str, float]) -> dict[str, float]:
    """treatment - control per scenario present in both (sorted by scenario id, so deterministic)."""
    return {s: treatment[s] - control[s] for s in sorted(set(treatment) & set(control))}


# -- the tests -----------------------------------------------------------------------------------

def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test p-value (ties already dropped): P(|X - n/2| >= |wins - n/2|), X ~ Bin(n, 1/2)."""
    n = wins + losses
    if n == 0:
        return 1.0
    low = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(low + 1))
    p: float = min(1.0, 2 * tail / 2**n)  # (int ** int is typed Any: a negative exponent gives a float)
    return p


def bootstrap_ci(diffs: Sequence[float], samples: int, seed: int, confidence: float) -> tuple[float, float]:
    """Percentile CI of the mean of `diffs`, resampling scenarios with replacement.

    Seeded (random.Random(seed)), so the same evidence always gives the same interval. The
    bounds are order statistics of the `samples` resampled means: lower = index
    floor(samples * a/2), upper = index ceil(samples * (1 - a/2)) - 1, a = 1 - confidence.
    """
    n = len(diffs)
    if n == 0:
        raise ValueError("bootstrap_ci needs at least one paired difference")
    rng = random.Random(seed)  # noqa: S311 - reproducible resampling, not secrecy
    values = list(diffs)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    a = 1.0 - confidence
    lo = means[max(0, math.floor(samples * a / 2))]
    hi = means[min(samples - 1, math.ceil(samples * (1 - a / 2)) - 1)]
    return lo, hi


# -- A/A calibration -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Calibration:
    """What two recordings of the same arm disagree on: the scale below which no lift is called."""

    arm: str
    n_paired: int
    false_difference_rate: float | None  # share of paired scenarios whose pass rate differs
    noise_floor: float | None  # max |CI bound| of the A/A mean difference
    sign_p: float | None
    status: CalibrationStatus
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"arm": self.arm, "n_paired": self.n_paired, "false_difference_rate": _r(self.false_difference_rate),
                "noise_floor": _r(self.noise_floor), "sign_p": _p(self.sign_p), "status": self.status,
                "reason": self.reason}


def calibrate(arm: str, first: Sequence[Run], second: Sequence[Run], settings: Settings) -> Calibration:
    """A/A: the same arm recorded twice. Its differences are noise by construction."""
    bad = max(infra_error_rate(first), infra_error_rate(second))
    if bad > settings.max_infra_error_rate:
        return Calibration(arm, 0, None, None, None, ERROR,
                           f"{bad:.0%} of A/A runs are infra errors (> {settings.max_infra_error_rate:.0%})")
    hollow = inconclusive_reason(((f"{arm} (A)", first), (f"{arm} (A')", second)), settings)
    if hollow:
        return Calibration(arm, 0, None, None, None, INCONCLUSIVE, f"A/A {hollow}")
    diffs = list(paired_differences(scenario_rates(first), scenario_rates(second)).values())
    n = len(diffs)
    if n < settings.min_paired_scenarios:
        return Calibration(arm, n, None, None, None, INDETERMINATE,
                           f"{n} paired A/A scenario(s) < {settings.min_paired_scenarios}")
    lo, hi = bootstrap_ci(diffs, settings.bootstrap_samples, settings.seed, settings.confidence)
    flips = sum(1 for d in diffs if d != 0)
    wins, losses = sum(1 for d in diffs if d > 0), sum(1 for d in diffs if d < 0)
    return Calibration(arm, n, flips / n, max(abs(lo), abs(hi)), sign_test(wins, losses), "ok")


# -- lift ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lift:
    treatment: str
    control: str
    verdict: LiftVerdict
    n_paired: int
    effect: float | None = None
    ci: tuple[float, float] | None = None
    wins: int = 0
    losses: int = 0
    ties: int = 0
    sign_p: float | None = None
    noise_floor: float | None = None
    calibrated: bool = False
    reason: str = ""
    runs: dict[str, int] = field(default_factory=dict)  # arm -> runs considered

    @property
    def has_number(self) -> bool:
        """INDETERMINATE, INCONCLUSIVE and ERROR cells show a word, never a number."""
        return self.verdict not in (INDETERMINATE, INCONCLUSIVE, ERROR)

    def to_json(self) -> dict[str, Any]:
        shown = self.has_number
        return {
            "treatment": self.treatment, "control": self.control, "verdict": self.verdict, "n_paired": self.n_paired,
            "effect": _r(self.effect) if shown else None,
            "ci": [_r(self.ci[0]), _r(self.ci[1])] if shown and self.ci else None,
            "sign_test": {"wins": self.wins, "losses": self.losses, "ties": self.ties, "p": _p(self.sign_p)} if shown else None,
            "noise_floor": _r(self.noise_floor), "calibrated": self.calibrated, "reason": self.reason,
            "runs": dict(sorted(self.runs.items())),
        }


def lift(treatment: str, control: str, t_runs: Sequence[Run], c_runs: Sequence[Run], settings: Settings, *,
         calibration: Calibration | None = None, blocked: str = "") -> Lift:
    """The lift of `treatment` over `control` for one (skill, agent, model) cell.

    `blocked` (e.g. a contaminated control bundle) makes the answer ERROR whatever the numbers.
    """
    runs = {treatment: len(t_runs), control: len(c_runs)}
    if blocked:
        return Lift(treatment, control, ERROR, 0, reason=blocked, runs=runs)
    for name, arm_runs in ((treatment, t_runs), (control, c_runs)):
        bad = infra_error_rate(arm_runs)
        if bad > settings.max_infra_error_rate:
            return Lift(treatment, control, ERROR, 0, runs=runs,
                        reason=f"{bad:.0%} of {name} runs are infra errors (> {settings.max_infra_error_rate:.0%}): not a sample of the skill")
    hollow = inconclusive_reason(((treatment, t_runs), (control, c_runs)), settings)
    if hollow:
        return Lift(treatment, control, INCONCLUSIVE, 0, runs=runs, reason=hollow)
    diffs = list(paired_differences(scenario_rates(t_runs), scenario_rates(c_runs)).values())
    n = len(diffs)
    if n < settings.min_paired_scenarios:
        return Lift(treatment, control, INDETERMINATE, n, runs=runs,
                    reason=f"{n} paired scenario(s) < min_paired_scenarios {settings.min_paired_scenarios}")
    effect = sum(diffs) / n
    lo, hi = bootstrap_ci(diffs, settings.bootstrap_samples, settings.seed, settings.confidence)
    wins, losses = sum(1 for d in diffs if d > 0), sum(1 for d in diffs if d < 0)
    p = sign_test(wins, losses)
    floor = calibration.noise_floor if calibration is not None and calibration.status == "ok" else None
    base: dict[str, Any] = {"n_paired": n, "effect": effect, "ci": (lo, hi), "wins": wins, "losses": losses, "ties": n - wins - losses,
            "sign_p": p, "noise_floor": floor, "calibrated": floor is not None, "runs": runs}
    significant = (lo > 0 or hi < 0) and p < settings.alpha
    if not significant:
        why = f"CI [{lo:+.3f}, {hi:+.3f}] includes 0" if lo <= 0 <= hi else f"sign test p = {p:.3g} >= {settings.alpha:.3g}"
        return Lift(treatment, control, NO_LIFT, reason=f"no significant difference: {why}", **base)
    if floor is None:
        return Lift(treatment, control, UNCALIBRATED, **base,
                    reason=f"effect {effect:+.3f} is significant but no A/A recording gives a noise floor "
                           f"(record one: skill-eval run --arm {treatment} --aa)")
    if abs(effect) <= floor:
        return Lift(treatment, control, NO_LIFT, **base,
                    reason=f"effect {effect:+.3f} is within the A/A noise floor {floor:.3f}")
    return Lift(treatment, control, LIFT if effect > 0 else REGRESSION, **base,
                reason=f"effect {effect:+.3f}, CI [{lo:+.3f}, {hi:+.3f}], sign test p = {p:.3g}, A/A floor {floor:.3f}")


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _p(x: float | None) -> float | None:
    """p-values keep 6 significant digits (a tiny p must not round to 0)."""
    return None if x is None else float(f"{x:.6g}")
