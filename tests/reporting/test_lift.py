"""Known-answer tests for skill_eval.reporting.lift: every expected value is computed here independently."""

from __future__ import annotations

import math
import random

import pytest

from skill_eval.reporting import lift
from skill_eval.reporting.lift import Run, Settings

SETTINGS = Settings(bootstrap_samples=2000, min_paired_scenarios=6, seed=20260101, confidence=0.95)


def runs(rates: dict[str, list[bool]]) -> list[Run]:
    return [Run(s, p) for s, results in rates.items() for p in results]


def scenario_set(n: int, treatment: list[bool], control: list[bool]) -> tuple[list[Run], list[Run]]:
    """n scenarios, each with the same per-run results (repeats)."""
    return runs({f"s{i}": treatment for i in range(n)}), runs({f"s{i}": control for i in range(n)})


# -- the sign test against exact binomial tail sums ---------------------------------------------

def exact_two_sided(wins: int, losses: int) -> float:
    """P(|X - n/2| >= |wins - n/2|) for X ~ Bin(n, 1/2), summed over every outcome (no shortcut)."""
    n = wins + losses
    if n == 0:
        return 1.0
    dev = abs(wins - n / 2)
    return sum(math.comb(n, x) for x in range(n + 1) if abs(x - n / 2) >= dev) / 2**n


@pytest.mark.parametrize("wins", range(0, 13))
@pytest.mark.parametrize("losses", [0, 1, 2, 5, 12])
def test_sign_test_matches_exact_binomial(wins, losses):
    assert lift.sign_test(wins, losses) == pytest.approx(exact_two_sided(wins, losses), abs=1e-15)


def test_sign_test_textbook_values():
    assert lift.sign_test(5, 0) == 1 / 16
    assert lift.sign_test(6, 0) == 1 / 32
    assert lift.sign_test(8, 2) == 2 * (1 + 10 + 45) / 1024
    assert lift.sign_test(3, 3) == 1.0
    assert lift.sign_test(0, 0) == 1.0


# -- the seeded bootstrap CI -------------------------------------------------------------------

def exact_bootstrap_quantiles(n: int, ones: int, confidence: float) -> tuple[float, float]:
    """For 0/1 differences the bootstrap mean is Bin(n, ones/n)/n exactly: its percentile interval."""
    p = ones / n
    cdf, acc = [], 0.0
    for x in range(n + 1):
        acc += math.comb(n, x) * p**x * (1 - p) ** (n - x)
        cdf.append(acc)
    a = 1 - confidence
    lo = next(x for x in range(n + 1) if cdf[x] >= a / 2)
    hi = next(x for x in range(n + 1) if cdf[x] >= 1 - a / 2)
    return lo / n, hi / n


def test_bootstrap_ci_equals_the_exact_bootstrap_distribution():
    diffs = [1.0] * 7 + [0.0] * 3
    expected = exact_bootstrap_quantiles(10, 7, 0.95)
    assert expected == (0.4, 1.0)
    for samples in (2000, 20000):
        assert lift.bootstrap_ci(diffs, samples, 20260101, 0.95) == expected


@pytest.mark.parametrize("ones", [2, 5, 9])
def test_bootstrap_ci_tracks_exact_quantiles_within_one_grid_step(ones):
    n = 12
    diffs = [1.0] * ones + [0.0] * (n - ones)
    lo, hi = lift.bootstrap_ci(diffs, 20000, 3, 0.9)
    elo, ehi = exact_bootstrap_quantiles(n, ones, 0.9)
    assert abs(lo - elo) <= 1 / n + 1e-9 and abs(hi - ehi) <= 1 / n + 1e-9


def test_bootstrap_ci_is_seeded_and_pinned():
    diffs = [1, 1, 1, 2 / 3, 2 / 3, 1 / 3, 0, 0, -1 / 3, 1]
    first = lift.bootstrap_ci(diffs, 2000, 7, 0.95)
    assert first == lift.bootstrap_ci(diffs, 2000, 7, 0.95)
    assert first == pytest.approx((7 / 30, 0.8))  # pinned: a change of resampling protocol must be deliberate
    assert lift.bootstrap_ci([0.5] * 8, 500, 1, 0.95) == (0.5, 0.5)


# -- one vote per scenario ---------------------------------------------------------------------

def test_repeats_are_averaged_within_a_scenario_never_pooled():
    """5 scenarios x 8 repeats, treatment always passes, control always fails.

    One vote per scenario: 5 paired scenarios, sign test p = 2/2^5 = 1/16. Pooling the repeats as
    independent pairs would report 40 pairs and p = 2/2^40 — this test fails if that happens.
    """
    t, c = scenario_set(5, [True] * 8, [False] * 8)
    result = lift.lift("skill-agent", "baseline", t, c, Settings(min_paired_scenarios=5))
    assert result.n_paired == 5
    assert result.sign_p == 1 / 16
    assert result.sign_p != lift.sign_test(40, 0)
    assert result.effect == 1.0


def test_a_heavily_repeated_scenario_gets_one_vote():
    """One scenario run 10 times where the skill wins, five run once where it loses.

    Per scenario: (+1 - 5) / 6 = -2/3. Pooling runs would give (+10 - 5) / 15 = +1/3 and the
    opposite sign: the scenario, not the run, is the unit.
    """
    t = runs({"heavy": [True] * 10, **{f"s{i}": [False] for i in range(5)}})
    c = runs({"heavy": [False] * 10, **{f"s{i}": [True] for i in range(5)}})
    result = lift.lift("skill-agent", "baseline", t, c, SETTINGS)
    assert result.effect == pytest.approx(-4 / 6)
    assert (result.wins, result.losses) == (1, 5)


def test_scenario_rates_average_repeats_and_skip_infra_errors():
    rates = lift.scenario_rates([Run("a", True), Run("a", False), Run("a", None, True), Run("b", None, True)])
    assert rates == {"a": 0.5}  # b had no scored run: not paired


# -- verdicts ----------------------------------------------------------------------------------

def test_below_the_minimum_of_paired_scenarios_is_indeterminate_never_a_number():
    t, c = scenario_set(5, [True] * 3, [False] * 3)
    result = lift.lift("skill-agent", "baseline", t, c, SETTINGS)
    assert result.verdict == lift.INDETERMINATE
    assert result.n_paired == 5
    out = result.to_json()
    assert out["effect"] is None and out["ci"] is None and out["sign_test"] is None
    assert "5 paired scenario(s) < min_paired_scenarios 6" in result.reason


def test_unpaired_scenarios_do_not_count_towards_the_minimum():
    t = runs({f"s{i}": [True] for i in range(10)})
    c = runs({f"x{i}": [False] for i in range(10)})
    assert lift.lift("skill-agent", "baseline", t, c, SETTINGS).verdict == lift.INDETERMINATE


def test_a_clear_effect_without_an_aa_recording_is_uncalibrated_not_lift():
    t, c = scenario_set(10, [True] * 3, [False] * 3)
    result = lift.lift("skill-agent", "baseline", t, c, SETTINGS)
    assert result.verdict == lift.UNCALIBRATED
    assert result.effect == 1.0 and result.ci == (1.0, 1.0)
    assert "--aa" in result.reason


def test_a_clear_effect_above_the_aa_floor_is_lift_and_a_drop_is_regression():
    t, c = scenario_set(10, [True] * 3, [False] * 3)
    calm = lift.calibrate("skill-agent", t, list(t), SETTINGS)
    assert calm.status == "ok" and calm.noise_floor == 0 and calm.false_difference_rate == 0
    assert lift.lift("skill-agent", "baseline", t, c, SETTINGS, calibration=calm).verdict == lift.LIFT
    assert lift.lift("skill-agent", "baseline", c, t, SETTINGS, calibration=calm).verdict == lift.REGRESSION


def noisy_replicate(rng: random.Random, probs: list[float], k: int) -> list[Run]:
    return [Run(f"s{i}", rng.random() < p) for i, p in enumerate(probs) for _ in range(k)]


def test_aa_recordings_produce_no_lift():
    """Two recordings of one arm (same per-scenario pass probabilities, independent noise)."""
    rng = random.Random(11)
    probs = [rng.uniform(0.2, 0.9) for _ in range(12)]
    first, second = noisy_replicate(rng, probs, 3), noisy_replicate(rng, probs, 3)
    calib = lift.calibrate("skill-agent", first, second, SETTINGS)
    assert calib.status == "ok" and calib.noise_floor > 0 and 0 < calib.false_difference_rate <= 1
    for cal in (None, calib):
        result = lift.lift("skill-agent", "skill-agent (A/A)", first, second, SETTINGS, calibration=cal)
        assert result.verdict == lift.NO_LIFT, result.reason


def test_aa_false_lift_rate_stays_below_alpha_over_many_recordings():
    """Calibration of the procedure itself: 200 simulated A/A pairs, at most alpha + slack called significant."""
    rng = random.Random(5)
    settings = Settings(bootstrap_samples=400, seed=1)
    called = 0
    for _ in range(200):
        probs = [rng.uniform(0.1, 0.9) for _ in range(10)]
        r = lift.lift("a", "a2", noisy_replicate(rng, probs, 3), noisy_replicate(rng, probs, 3), settings)
        called += r.verdict in (lift.LIFT, lift.REGRESSION, lift.UNCALIBRATED)
    assert called / 200 <= 0.05 + 0.03


def test_a_significant_effect_inside_the_aa_noise_floor_is_not_called():
    """A/A disagrees by a full scenario half the time (floor ~0.5); a real +1/3 effect stays NO_LIFT."""
    aa_first = runs({f"s{i}": [i % 2 == 0] for i in range(12)})
    aa_second = runs({f"s{i}": [i % 2 == 1] for i in range(12)})
    calib = lift.calibrate("skill-agent", aa_first, aa_second, SETTINGS)
    assert calib.false_difference_rate == 1.0 and calib.noise_floor > 1 / 3
    t, c = scenario_set(12, [True, True, False], [True, False, False])
    result = lift.lift("skill-agent", "baseline", t, c, SETTINGS, calibration=calib)
    assert result.effect == pytest.approx(1 / 3) and result.ci == pytest.approx((1 / 3, 1 / 3))
    assert result.sign_p < SETTINGS.alpha
    assert result.verdict == lift.NO_LIFT and "noise floor" in result.reason


def test_infra_error_heavy_cell_is_error_not_a_number():
    t, c = scenario_set(10, [True] * 3, [False] * 3)
    broken = [Run(r.scenario, None, True) if i % 10 < 3 else r for i, r in enumerate(c)]  # 30 % infra errors
    assert lift.infra_error_rate(broken) == pytest.approx(0.3)
    result = lift.lift("skill-agent", "baseline", t, broken, SETTINGS)
    assert result.verdict == lift.ERROR and "infra errors" in result.reason
    assert result.to_json()["effect"] is None


def test_exactly_the_infra_limit_is_still_scored():
    t = runs({f"s{i}": [True] * 4 for i in range(8)})
    c = [Run(f"s{i}", None, True) if j == 0 else Run(f"s{i}", False) for i in range(8) for j in range(4)]  # 25 %
    assert lift.lift("skill-agent", "baseline", t, c, SETTINGS).verdict != lift.ERROR


def test_aa_calibration_below_minimum_or_infra_heavy_gives_no_floor():
    few = runs({f"s{i}": [True] for i in range(3)})
    assert lift.calibrate("skill-agent", few, few, SETTINGS).status == lift.INDETERMINATE
    bad = [Run("s0", None, True)] * 4 + runs({f"s{i}": [True] for i in range(8)})
    cal = lift.calibrate("skill-agent", bad, runs({f"s{i}": [True] for i in range(8)}), SETTINGS)
    assert cal.status == lift.ERROR and cal.noise_floor is None
    t, c = scenario_set(10, [True], [False])
    assert lift.lift("skill-agent", "baseline", t, c, SETTINGS, calibration=cal).verdict == lift.UNCALIBRATED


def test_blocked_comparison_is_error_whatever_the_numbers():
    t, c = scenario_set(10, [True], [False])
    result = lift.lift("skill-agent", "baseline", t, c, SETTINGS, blocked="contaminated control bundle")
    assert result.verdict == lift.ERROR and result.reason == "contaminated control bundle"
