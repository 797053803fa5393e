"""The release report: one outcome, derived by a fixed precedence from the stage and the worksheet.

  fail        any failed credential-free gate, any failed case, any `worse` comparison, or a
              lift gate that failed (a skill's CI lower bound below -margin, lift_gate.py);
  pass        every gate passed, every case complete and same / better / candidate-only, and
              every skill's lift over baseline (and over its released arm) passed;
  incomplete  anything else (missing, cut-off, stale, unjudged or scripted evidence, an
              incomplete pair, a skipped gate, an `inconclusive` answer, no cases at all, a
              lift that is INDETERMINATE: then every case of that skill is incomplete);
  waived      only over incomplete, with a waiver covering exactly the incomplete cases.

The report carries states and reasons the tool derived — never raw provider output — plus
the publication build digest of the published skill trees it clears.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skill_eval.core import formats, hashing, schemas, strict
from skill_eval.core.errors import CheckFailed, InputError
from skill_eval.core.vocab import ReleaseOutcome
from skill_eval.reporting.release import candidate as candidate_mod
from skill_eval.reporting.release import cells, lift_gate
from skill_eval.reporting.release import waiver as waiver_mod

# a report restates its stage's cases, so it is read under the stage's cap (stage.MAX_STAGE_BYTES;
# stage imports the whole grading stack, which reading a report must not pay for: a test keeps them equal)
MAX_REPORT_BYTES = 64 * 1024 * 1024


def decide(stage: dict[str, Any], answers: dict[str, Any]) -> tuple[ReleaseOutcome, list[str], dict[str, str]]:
    """(outcome before any waiver, reasons, incomplete case id -> skill)."""
    fail: list[str] = []
    incomplete: dict[str, str] = {}
    other: list[str] = []
    dirty = candidate_mod.problem(stage["candidate"])
    if dirty:
        fail.append(dirty)
    for c in stage["checks"]:
        if c["status"] == "fail":
            fail.append(f"credential-free gate {c['gate']} failed")
        elif c["status"] != "pass":
            other.append(f"credential-free gate {c['gate']} was {c['status']}")
    cases = stage["snapshot"]["cases"]
    if not cases:
        other.append("the stage has no cases")
    for cid, c in sorted(cases.items()):
        comparison = answers["cases"][cid]["comparison"]
        if c["state"] == "fail":
            fail.append(f"case {cid} failed: {'; '.join(c['reasons'][:2])}")
        elif comparison == "worse":
            fail.append(f"case {cid} was judged worse than the released skill")
        elif c["state"] == "incomplete" or comparison == "inconclusive":
            incomplete[cid] = c["skill"]
    lift_fail, lift_incomplete = lift_gate.problems(stage["snapshot"]["lift"])
    fail += lift_fail
    for skill, why in lift_incomplete.items():
        other += why
        incomplete.update({cid: c["skill"] for cid, c in cases.items()
                           if cells.scoped(c["skill"], c.get("cell", cells.ANY)) == skill and c["state"] != "fail"})
    if fail:
        return "fail", fail, incomplete
    if incomplete or other:
        reasons = other + [f"case {cid} is incomplete: {_why_incomplete(cases[cid], answers['cases'][cid]['comparison'])}"
                           for cid in sorted(incomplete)]
        return "incomplete", reasons, incomplete
    return "pass", ["every gate passed, every case is complete with an acceptable comparison, and every skill's lift "
                    "passed the lift gate"], incomplete


def _why_incomplete(case: dict[str, Any], comparison: str) -> str:
    if case["reasons"]:
        return "; ".join(case["reasons"][:2])
    return "judged inconclusive" if comparison == "inconclusive" else f"the lift of skill {case['skill']} is incomplete"


def render(stage: dict[str, Any], answers: dict[str, Any], outcome: ReleaseOutcome, reasons: list[str],
           waiver: dict[str, Any] | None, publication: dict[str, Any], now: str | None = None) -> dict[str, Any]:
    cases = []
    for cid, c in sorted(stage["snapshot"]["cases"].items()):
        rel, base = c["arms"]["released"], c["arms"]["baseline"]
        cases.append({"case": cid, "skill": c["skill"], "cell": c.get("cell", cells.ANY), "evidence": c["state"], "baseline_required": c["baseline_required"],
                      "candidate": c["arms"]["candidate"]["state"], "released": rel["state"] if rel else None,
                      "baseline": base["state"],
                      "comparison": answers["cases"][cid]["comparison"], "review": answers["cases"][cid]["review"],
                      "reasons": list(c["reasons"])})
    record = {
        "schema_version": formats.FORMATS["release_report"], "session": stage["session"], "stage_seal": stage["seal"],
        "generated_at": now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "outcome": outcome, "reasons": reasons,
        "reviewer": answers.get("reviewer"), "tested_head": stage["tested_head"], "candidate": stage["candidate"], "bindings": stage["snapshot"]["bindings"],
        "publication": publication, "checks": stage["checks"], "cases": cases, "lift": stage["snapshot"]["lift"], "waiver": waiver,
    }
    schemas.validate(record, "release_report", "rendered report")
    return record


def canonical_bytes(record: dict[str, Any]) -> bytes:
    return hashing.canonical_json(record) + b"\n"


def decode(path: Path) -> dict[str, Any]:
    """Read a report back: strict JSON, known version, schema, canonical bytes (an edit shows)."""
    data = strict.read_bytes(path, max_bytes=MAX_REPORT_BYTES)
    record: dict[str, Any] = formats.upgrade(strict.loads_json(strict.decode_utf8(data, path), path), "release_report", path)
    schemas.validate(record, "release_report", path)
    if data != canonical_bytes(record):
        raise InputError("is not in canonical form (RFC 8785 + newline): it was edited after rendering", source=path,
                         fix="re-run `skill-eval release resume`")
    return record


def _cell(text: Any) -> str:
    """Table-safe text: reviews and reasons are people's and tools' words, not Markdown."""
    s = str(text if text is not None else "—").replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    for ch in "`*_[]<>":
        s = s.replace(ch, "\\" + ch)
    return s


def _figure(x: Any, fmt: str = "+.3f") -> str:
    return "—" if x is None else format(x, fmt)


def _lift_lines(lift: dict[str, Any]) -> list[str]:
    lines = ["", f"## Lift gate (CI lower bound >= -{lift['margin']}; fewer than {lift['min_paired_scenarios']} paired "
             f"scenarios is incomplete; {lift['confidence']:.0%} CI)", "",
             "| skill | cell | control | gate | verdict | n paired | effect | CI | sign test p |", "|---|---|---|---|---|---|---|---|---|"]
    for scoped, controls in sorted(lift["skills"].items()):
        skill, cell = cells.unscoped(scoped)
        for key, r in sorted(controls.items()):
            ci = r.get("ci")
            sign = r.get("sign_test") or {}
            lines.append(f"| {_cell(skill)} | {_cell(cells.label(cell))} | {_cell(r.get('control') or key)} | **{r['gate']}** | {r.get('verdict', '—')} "
                         f"| {r.get('n_paired', '—')} | {_figure(r.get('effect'))} "
                         f"| {'[' + _figure(ci[0]) + ', ' + _figure(ci[1]) + ']' if ci else '—'} | {_figure(sign.get('p'), '.3g')} |")
    return lines


def _cells_line(binding: dict[str, Any] | None) -> str:
    """The cells the release needed, where that came from, and recorded cells it left out."""
    if not binding:
        return "not recorded"
    if binding["configured_by"] == "none":
        return "any single cell (no [[evals.matrix]])"
    other = f"; recorded but not required: {', '.join(map(_cell, binding['other']))}" if binding["other"] else ""
    return f"{', '.join(map(_cell, binding['required']))} (from {_cell(binding['configured_by'])}){other}"


def _seed_statuses(checks: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The seed gates' status from the stage's steps; None (the mapping alone) if a step maps to no seed gate."""
    try:
        return waiver_mod.seed_gate_status(checks)
    except CheckFailed:
        return None


def markdown(record: dict[str, Any]) -> str:
    b = record["bindings"]
    lines = [f"# Release report — session {_cell(record['session'])}", "",
             f"**Outcome: {record['outcome'].upper()}**", ""]
    lines += [f"- {_cell(r)}" for r in record["reasons"]]
    lines += ["", f"- stage seal `{record['stage_seal']}`", f"- tested head `{record['tested_head']}`",
              f"- candidate: {_cell(candidate_mod.describe(record.get('candidate')))}",
              f"- cells: {_cells_line(b.get('cells'))}",
              f"- publication build digest `{record['publication']['sha256']}`",
              f"- released baseline: {_cell(b['released']['ref']) + ' @ `' + b['released']['commit'] + '`' if b['released'] else 'none'}",
              f"- models: {', '.join(_cell(m) for m in b['models']) or 'none'}", "",
              "## Credential-free gates", "", "| gate | status |", "|---|---|"]
    lines += [f"| {_cell(c['gate'])} | {c['status']} |" for c in record["checks"]]
    lines += ["", "## The seed's credential-free gates (docs/RELEASE_GATES.md)", "",
              waiver_mod.table_markdown(_seed_statuses(record["checks"])).rstrip("\n")]
    lines += _lift_lines(record["lift"])
    lines += ["", "## Cases", "", "| case | skill | cell | evidence | candidate | released | baseline | comparison | review |",
              "|---|---|---|---|---|---|---|---|---|"]
    for c in record["cases"]:
        lines.append(f"| {_cell(c['case'])} | {_cell(c['skill'])} | {_cell(cells.label(c.get('cell', cells.ANY)))} | {c['evidence']} "
                     f"| {c['candidate']} | {c['released'] or '—'} "
                     f"| {c['baseline']} | {c['comparison']} | {_cell(c['review'])} |")
    w = record["waiver"]
    if w:
        lines += ["", "## Waiver (must be disclosed in the release notes)", "",
                  f"- approver: {_cell(w['approver'])}", f"- reason: {_cell(w['reason'])}",
                  f"- unavailable capability: {_cell(w['unavailable_capability'])}",
                  f"- skills: {', '.join(map(_cell, w['skills']))}", f"- cases: {', '.join(map(_cell, w['cases']))}",
                  f"- residual risk: {_cell(w['residual_risk'])}",
                  f"- compensating evidence: {', '.join(map(_cell, w['compensating_evidence']))}",
                  f"- follow-up: {_cell(w['follow_up'])}"]
    return "\n".join(lines) + "\n"
