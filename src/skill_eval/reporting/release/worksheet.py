"""The human worksheet: one comparison and one review per staged case.

The stage writes it pre-filled with everything a reviewer needs except the judgement itself
(`comparison: null`, `review: null`): the case, its skill, the mechanical evidence state and
why, and the scenario's `human_review_questions`. On resume it must name exactly the staged
cases with the staged questions — a renamed, missing, extra or repeated case, or a question
that drifted, is refused — and each comparison must be one the evidence allows:
  - incomplete evidence        -> exactly `inconclusive` (no invented comparison);
  - complete, no released arm  -> exactly `candidate-only`;
  - complete pair              -> better | same | worse | inconclusive;
  - failed candidate           -> anything but candidate-only on a paired case (the failure decides).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from skill_eval.core import formats, schemas, strict
from skill_eval.core.errors import InputError

HEADER = """\
# skill-eval release worksheet (schemas/release_worksheet.schema.json).
# For every case: read its `runs` (final.md, calls.jsonl, events.jsonl; a session's runs are beside
# the stage), answer the human_review_questions in `review`, and set `comparison` to one of:
#   better | same | worse       a completed candidate/released pair (worse fails the release)
#   candidate-only              a completed case whose skill has no released arm
#   inconclusive                required when `evidence` is incomplete; allowed for any case
# `runs` lists every arm: the candidate (skill-agent), the baseline (no skill) and the released arm.
# Each skill's lift gate (skill-agent over baseline and over released) is in the stage: `release stage` prints it.
# A case is one scenario in one agent/model cell (`cell`): each cell's runs are reviewed on their own.
# Do not edit `case`, `skill`, `cell`, `evidence`, `baseline_required`, `notes`, `runs` or the questions.
# Then: skill-eval release resume {stage} --worksheet THIS_FILE [--waiver WAIVER]
"""


def render(stage: dict[str, Any], stage_name: str = "STAGE") -> str:
    cases = []
    for cid, c in sorted(stage["snapshot"]["cases"].items()):
        runs = {arm: [f"{stage['raw_root']}/{r['bundle']}" for r in a["runs"]] for arm, a in c["arms"].items() if a}
        cell = {"cell": c["cell"]} if c.get("cell") else {}
        cases.append({"case": cid, "skill": c["skill"], **cell, "evidence": c["state"], "baseline_required": c["baseline_required"],
                      "notes": list(c["reasons"]), "runs": runs, "human_review_questions": list(c["human_review_questions"]),
                      "comparison": None, "review": None})
    body = {"schema_version": formats.FORMATS["release_worksheet"], "session": stage["session"], "reviewer": None, "cases": cases}
    text = HEADER.format(stage=stage_name) + yaml.safe_dump(body, sort_keys=False, width=110, allow_unicode=True)
    strict.loads_yaml(text, "rendered worksheet")
    return text


def allowed(evidence: str, baseline_required: bool) -> tuple[str, ...]:
    if evidence == "incomplete":
        return ("inconclusive",)
    if not baseline_required:
        return ("candidate-only",) if evidence == "complete" else ("candidate-only", "inconclusive")
    return ("better", "same", "worse", "inconclusive")


def load(path: Path, stage: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """case id -> {comparison, review}; every problem is one line naming the worksheet field."""
    data = strict.load_yaml(path)
    data = formats.upgrade(data, "release_worksheet", path)
    schemas.validate(data, "release_worksheet", path)
    if data["session"] != stage["session"]:
        raise InputError(f"is for session {data['session']!r}, the stage is {stage['session']!r}", source=path, field="session",
                         fix="use the worksheet written beside this stage")
    staged = stage["snapshot"]["cases"]
    seen: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(data["cases"]):
        cid, where = row["case"], f"cases[{i}]"
        if cid in seen:
            raise InputError(f"case {cid!r} appears twice", source=path, field=where, fix="keep one row per case")
        if cid not in staged:
            raise InputError(f"case {cid!r} is not in the stage (renamed or invented)", source=path, field=f"{where}.case",
                             fix=f"the staged cases are: {', '.join(sorted(staged))}")
        c = staged[cid]
        if row.get("cell", "") != c.get("cell", ""):
            raise InputError(f"case {cid!r}: cell differs from the stage (the worksheet is stale or was edited)",
                             source=path, field=f"{where}.cell", fix="re-create the worksheet from this stage")
        for key, want in (("skill", c["skill"]), ("evidence", c["state"]), ("baseline_required", c["baseline_required"]),
                          ("human_review_questions", c["human_review_questions"])):
            if row[key] != want:
                raise InputError(f"case {cid!r}: {key} differs from the stage (the worksheet is stale or was edited)",
                                 source=path, field=f"{where}.{key}", fix="re-create the worksheet from this stage")
        if row["comparison"] is None or not (row["review"] or "").strip():
            raise InputError(f"case {cid!r} is not filled in (comparison and review are required)", source=path,
                             field=f"{where}.comparison", fix="answer the questions in review and choose a comparison")
        ok = allowed(c["state"], c["baseline_required"])
        if row["comparison"] not in ok:
            raise InputError(f"case {cid!r}: comparison {row['comparison']!r} is not allowed for {c['state']} evidence"
                             f"{' with a released arm' if c['baseline_required'] else ' without a released arm'}",
                             source=path, field=f"{where}.comparison", fix=f"use {' | '.join(ok)}")
        seen[cid] = {"comparison": row["comparison"], "review": row["review"].strip()}
    missing = sorted(set(staged) - set(seen))
    if missing:
        raise InputError(f"case(s) {missing} of the stage are missing", source=path, field="cases",
                         fix="add a row for every staged case")
    return {"reviewer": data.get("reviewer"), "cases": seen}
