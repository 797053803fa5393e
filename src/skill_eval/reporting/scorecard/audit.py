"""Eval-quality audit: deterministic flags on the scenarios themselves (no model).

A scenario can make a skill look good or bad without measuring it:
- `baseline_saturated`: it passes in every baseline run — the agent solves it without the skill,
  so it cannot show lift;
- `fails_everywhere`: it fails in every run of every arm — broken, impossible, or mis-graded;
- `prompt_leakage`: its prompt quotes the skill's own text (a shared run of NGRAM words with the
  skill's SKILL.md or reference files) — the prompt hands the agent the answer, or a description
  tuned on it will overfit.
`holdout: true` scenarios are listed so their results can be read apart from the tuning set.
Pure: runs, prompts and skill texts come in as data.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NGRAM = 8  # words; shorter runs ("compare the old and new library") are ordinary phrasing
_WORD = re.compile(r"[a-z0-9][a-z0-9._+-]*")


@dataclass(frozen=True)
class ScenarioInfo:
    id: str
    skill: str
    prompt: str
    holdout: bool = False


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def ngrams(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def leaked(prompt: str, skill_text: str, n: int = NGRAM) -> list[str]:
    """The n-word runs the prompt shares with the skill's text (sorted, as strings)."""
    return sorted(" ".join(g) for g in ngrams(prompt, n) & ngrams(skill_text, n))


def skill_text(skill_dir: Path) -> str:
    """SKILL.md plus every Markdown file under the skill's source directory."""
    if not skill_dir.is_dir():
        return ""
    parts = []
    for p in sorted(skill_dir.rglob("*.md")):
        try:
            parts.append(p.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return "\n".join(parts)


def audit(scenarios: Iterable[ScenarioInfo], runs: Iterable[Any], skill_texts: Mapping[str, str]) -> dict[str, Any]:
    """Flags per scenario. `runs` are RunRecord-like (kind, item, arm, replicate, passed)."""
    by_item: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        if r.kind != "behavioral" or r.passed is None or r.replicate != "main":
            continue
        by_item[r.item][r.arm].append(bool(r.passed))
    flagged, holdout = [], []
    for sc in sorted(scenarios, key=lambda s: s.id):
        if sc.holdout:
            holdout.append(sc.id)
        flags, details = [], {}
        arms = by_item.get(sc.id, {})
        base = arms.get("baseline", [])
        if base and all(base):
            flags.append("baseline_saturated")
            details["baseline_saturated"] = f"passes all {len(base)} baseline run(s): it does not measure the skill"
        every = [p for results in arms.values() for p in results]
        if every and not any(every):
            flags.append("fails_everywhere")
            details["fails_everywhere"] = (f"fails all {len(every)} run(s) in arm(s) {sorted(arms)}: "
                                           "broken, impossible or mis-graded")
        quotes = leaked(sc.prompt, skill_texts.get(sc.skill, ""))
        if quotes:
            flags.append("prompt_leakage")
            details["prompt_leakage"] = f"prompt quotes {len(quotes)} {NGRAM}-word run(s) of the skill's text, e.g. {quotes[0]!r}"
        if flags:
            flagged.append({"scenario": sc.id, "skill": sc.skill, "holdout": sc.holdout, "flags": flags, "details": details})
    return {"ngram": NGRAM, "flagged": flagged, "holdout": holdout}
