"""Dimensions 4 and 5 (judged): replayed from judgments.json, never re-judged here.

The judge is a model, so its verdict is recorded once (off-CI, by `skill-eval judge`)
and replayed: the latest entry per dimension stamped with the current rubric version
decides. A recorded failure propagates; entries for another rubric version are stale
and ignored; no entry means "not judged" — complete for the merge gate, incomplete for
the release gate (the caller decides which).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from skill_eval.core.vocab import CheckStatus

JUDGED = (4, 5)


def _when(entry: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(entry["judged_at"].replace("Z", "+00:00"))


def replay(judgments: dict[str, Any] | None, rubric_version: str | None, dimension: int) -> tuple[CheckStatus, list[str]]:
    """(status, reasons) with status pass | fail | not_judged."""
    if judgments is None:
        return "not_judged", ["no judgments.json: not judged"]
    if rubric_version is None:
        return "fail", ["rubric.yaml is unavailable, so judgments cannot be matched to a rubric version"]
    entries = []
    for pos, e in enumerate(judgments["judgments"]):
        if e["dimension"] != dimension:
            continue
        try:
            entries.append((_when(e), pos, e))
        except ValueError:
            return "fail", [f"judgments[{pos}].judged_at {e['judged_at']!r} is not a timestamp"]
    current = [t for t in entries if t[2]["rubric_version"] == rubric_version]
    if not current:
        stale = sorted({e["rubric_version"] for _, _, e in entries})
        note = f" (only rubric version(s) {stale}: re-judge needed)" if stale else ""
        return "not_judged", [f"no judgment for rubric version {rubric_version!r}{note}"]
    try:
        _, pos, latest = max(current, key=lambda t: (t[0], t[1]))
    except TypeError:  # naive and aware timestamps mixed
        return "fail", ["judgments mix timestamps with and without a UTC offset"]
    who = f"{latest['judge_model']} {latest['judge_version']}, score {latest['score']}"
    if latest.get("needs_human_review"):  # a judge panel left it to a person: never a pass (issue 28 item 4)
        return "not_judged", [f"needs human review ({who}): {latest['needs_human_review']}"]
    if latest["passed"]:
        return "pass", [f"judged pass ({who})"]
    return "fail", [f"judged failure ({who}): {latest['rationale']}"]
