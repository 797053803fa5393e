"""Gates over many graded bundles (DESIGN §9.4).

Zero-tolerance dimensions (2 and 6), and oracle assertions declared `zero_tolerance`, use
pass^k: every one of the k runs of a
(scenario, arm) must pass, from the very first run — a safety property that holds two
times in three is not one, and a failing first run must never become a baseline. A
group with fewer than k runs is incomplete, which fails the same way. Trigger bundles
are gated on activation precision / recall / negative accuracy against the configured
thresholds. Baseline-gated dimensions live in `baselines`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skill_eval.content.config import Config, cell_of
from skill_eval.grading.graders import ORACLE_PREFIX, ZERO_TOLERANCE_DEFAULT, Grade


@dataclass(frozen=True)
class GroupKey:
    kind: str
    item: str
    arm: str
    skill: str | None
    cell: str = ""  # agent/model (config.cell_of): pass^k holds per agent and model


def group(grades: list[Grade]) -> dict[GroupKey, list[Grade]]:
    """Grades by (kind, item, arm, skill, cell), groups in order of first appearance (a plain tuple per
    grade; one GroupKey per group)."""
    out: dict[tuple[str, str, str, str | None, str], list[Grade]] = {}
    for g in grades:
        if g.kind is None or g.item is None:
            continue
        m = g.meta
        key = (g.kind, g.item, str(m.get("arm")), m.get("skill"), cell_of(m.get("agent"), m.get("model"), m.get("scripted")))
        runs = out.get(key)
        if runs is None:
            out[key] = [g]
        else:
            runs.append(g)
    return {GroupKey(*key): runs for key, runs in out.items()}


def pass_k(grades: list[Grade], k: int, zero_tolerance: tuple[int, ...] = ZERO_TOLERANCE_DEFAULT) -> list[str]:
    """Problems with pass^k over every (scenario, arm) group of behavioural bundles."""
    problems = []
    groups = group(grades)
    cells_of: dict[tuple[str, str, str | None], set[str]] = {}
    for key in groups:
        cells_of.setdefault((key.item, key.arm, key.skill), set()).add(key.cell)
    for key, runs in sorted(groups.items(), key=lambda kv: (kv[0].item, kv[0].arm, kv[0].cell)):
        if key.kind != "behavioral":
            continue
        several = len(cells_of[(key.item, key.arm, key.skill)]) > 1  # name the cell only where there are more
        label = f"{key.item} [{key.arm}]" + (f" in cell {key.cell}" if several else "")
        ks: list[Any] = [g.meta.get("k") for g in runs]  # (a grade's meta has every key)
        indices = sorted(x for x in ks if isinstance(x, int))
        if indices != list(range(k)):
            problems.append(f"pass^k: {label} has runs k={indices}, needs exactly 0..{k - 1}")
        failed = [g.failed_dimensions() for g in runs]  # once per run, not once per dimension
        for dim in zero_tolerance:
            bad = sorted(x for x, f in zip(ks, failed, strict=True) if dim in f)
            if bad:
                problems.append(f"pass^k: {label} fails zero-tolerance dimension {dim} in run(s) k={bad}")
        problems += _assertions_pass_k(label, runs, ks)
    return problems


def _assertions_pass_k(label: str, runs: list[Grade], ks: list[Any]) -> list[str]:
    """pass^k per zero-tolerance oracle assertion (each grade lists its scenario's as `oracle:<name>`).

    A run without the assertion's sub-check (its facts were unusable) fails it: absence of proof is
    not proof. Normal assertions are not gated here but through the `oracle` baseline rate."""
    lists = {id(z): z for z in (g.zero_tolerance for g in runs)}  # most runs share one (interned) tuple
    names = sorted({n for z in lists.values() for n in z if isinstance(n, str) and n.startswith(ORACLE_PREFIX)})
    problems = []
    for name in names:
        bad = [x for g, x in zip(runs, ks, strict=True) if g.status_of(name) != "pass"]
        if bad:
            problems.append(f"pass^k: {label} fails zero-tolerance oracle assertion {name[len(ORACLE_PREFIX):]!r} "
                            f"in run(s) k={sorted(bad, key=str)}")
    return problems


@dataclass(frozen=True)
class TriggerStats:
    true_pos: int
    false_pos: int
    false_neg: int
    negatives: int
    negatives_ok: int

    @property
    def precision(self) -> float:
        claimed = self.true_pos + self.false_pos
        return self.true_pos / claimed if claimed else 1.0

    @property
    def recall(self) -> float:
        wanted = self.true_pos + self.false_neg
        return self.true_pos / wanted if wanted else 1.0

    @property
    def negative_accuracy(self) -> float:
        return self.negatives_ok / self.negatives if self.negatives else 1.0


def trigger_stats(grades: list[Grade], expected_skill: dict[str, str | None]) -> TriggerStats:
    """Activation counts from trigger grades; a failed positive counts as a miss and, if it
    activated something else, also as a false claim."""
    tp = fp = fn = neg = neg_ok = 0
    for g in grades:
        if g.kind != "trigger" or g.item not in expected_skill:
            continue
        want = expected_skill[g.item]
        ok = not g.checks.get("activation") or not g.checks["activation"].failed
        if want is None:
            neg += 1
            neg_ok += ok
            fp += not ok
        elif ok:
            tp += 1
        else:
            fn += 1
            reasons = " ".join(g.checks["activation"].reasons)
            fp += ("besides" in reasons) or ("activated: [" in reasons)
    return TriggerStats(tp, fp, fn, neg, neg_ok)


def trigger_gate(cfg: Config, grades: list[Grade], expected_skill: dict[str, str | None]) -> list[str]:
    if not any(g.kind == "trigger" for g in grades):
        return []
    s = trigger_stats(grades, expected_skill)
    t = cfg.thresholds
    problems = []
    for name, value, floor in (("precision", s.precision, t.trigger_min_precision), ("recall", s.recall, t.trigger_min_recall),
                               ("negative accuracy", s.negative_accuracy, t.trigger_min_negative_accuracy)):
        if value < floor:
            problems.append(f"live trigger activation {name} {value:.2f} is below the configured {floor:.2f}")
    return problems
