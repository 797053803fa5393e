"""Agreement of a judge panel (issue 28 item 4): Cohen's κ for two judges, Fleiss' κ for three or more.

Computed per dimension over the items judged in one `skill-eval judge` invocation; the categories
are the rubric scores (0, 0.5, 1). κ is undefined (None) when chance agreement is total — every
judge gave every item the same single score — or there is no item; an undefined κ is reported as
such and does not trip the floor (there is no disagreement to measure), while any item on which
the judges disagree needs human review whatever κ says. Pure functions, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

Table = Sequence[Sequence[float]]  # one row per item, one score per judge (the same judge order in every row)


def cohen(table: Table) -> float | None:
    """Cohen's κ of two judges: (p_o − p_e) / (1 − p_e), p_e from each judge's own marginals."""
    rows = [r for r in table if len(r) == 2]
    if not rows or len(rows) != len(table):
        return None
    n = len(rows)
    p_o = sum(1 for a, b in rows if a == b) / n
    first, second = Counter(a for a, _ in rows), Counter(b for _, b in rows)
    p_e = sum(first[c] * second[c] for c in set(first) | set(second)) / (n * n)
    return None if p_e == 1 else (p_o - p_e) / (1 - p_e)


def fleiss(table: Table) -> float | None:
    """Fleiss' κ of m ≥ 2 judges rating every item: (P̄ − P̄_e) / (1 − P̄_e)."""
    if not table:
        return None
    m = len(table[0])
    if m < 2 or any(len(r) != m for r in table):
        return None
    n_items = len(table)
    counts = [Counter(r) for r in table]
    p_bar = sum((sum(v * v for v in c.values()) - m) / (m * (m - 1)) for c in counts) / n_items
    totals: Counter[float] = Counter()
    for c in counts:
        totals.update(c)
    p_e = sum((v / (n_items * m)) ** 2 for v in totals.values())
    return None if p_e == 1 else (p_bar - p_e) / (1 - p_e)


def kappa(table: Table) -> tuple[str, float | None]:
    """("cohen" | "fleiss", κ) by panel size."""
    m = len(table[0]) if table else 0
    return ("cohen", cohen(table)) if m == 2 else ("fleiss", fleiss(table))
