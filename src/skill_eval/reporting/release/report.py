"""The release report: one outcome, derived by a fixed precedence from the stage and the worksheet.

  fail        any failed credential-free gate, any failed case, or any `worse` comparison;
  pass        every gate passed, every case complete and same / better / candidate-only;
  incomplete  anything else (missing, cut-off, stale, unjudged or scripted evidence, an
              incomplete pair, a skipped gate, an `inconclusive` answer, no cases at all);
  waived      only over incomplete, with a waiver covering exactly the incomplete cases.

The report carries states and reasons the tool derived — never raw provider output — plus
the publication build digest of the published skill trees it clears.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skill_eval.core import formats, hashing, schemas, strict
from skill_eval.core.errors import InputError
from skill_eval.core.vocab import ReleaseOutcome

# a report restates its stage's cases, so it is read under the stage's cap (stage.MAX_STAGE_BYTES;
# stage imports the whole grading stack, which reading a report must not pay for: a test keeps them equal)
MAX_REPORT_BYTES = 64 * 1024 * 1024


def decide(stage: dict[str, Any], answers: dict[str, Any]) -> tuple[ReleaseOutcome, list[str], dict[str, str]]:
    """(outcome before any waiver, reasons, incomplete case id -> skill)."""
    fail: list[str] = []
    incomplete: dict[str, str] = {}
    other: list[str] = []
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
    if fail:
        return "fail", fail, incomplete
    if incomplete or other:
        reasons = other + [f"case {cid} is incomplete: {'; '.join(cases[cid]['reasons'][:2]) or 'judged inconclusive'}"
                           for cid in sorted(incomplete)]
        return "incomplete", reasons, incomplete
    return "pass", ["every gate passed and every case is complete with an acceptable comparison"], incomplete


def render(stage: dict[str, Any], answers: dict[str, Any], outcome: ReleaseOutcome, reasons: list[str],
           waiver: dict[str, Any] | None, publication: dict[str, Any], now: str | None = None) -> dict[str, Any]:
    cases = []
    for cid, c in sorted(stage["snapshot"]["cases"].items()):
        rel = c["arms"]["released"]
        cases.append({"case": cid, "skill": c["skill"], "evidence": c["state"], "baseline_required": c["baseline_required"],
                      "candidate": c["arms"]["candidate"]["state"], "released": rel["state"] if rel else None,
                      "comparison": answers["cases"][cid]["comparison"], "review": answers["cases"][cid]["review"],
                      "reasons": list(c["reasons"])})
    record = {
        "schema_version": formats.FORMATS["release_report"], "session": stage["session"], "stage_seal": stage["seal"],
        "generated_at": now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "outcome": outcome, "reasons": reasons,
        "reviewer": answers.get("reviewer"), "tested_head": stage["tested_head"], "bindings": stage["snapshot"]["bindings"],
        "publication": publication, "checks": stage["checks"], "cases": cases, "waiver": waiver,
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


def markdown(record: dict[str, Any]) -> str:
    b = record["bindings"]
    lines = [f"# Release report — session {_cell(record['session'])}", "",
             f"**Outcome: {record['outcome'].upper()}**", ""]
    lines += [f"- {_cell(r)}" for r in record["reasons"]]
    lines += ["", f"- stage seal `{record['stage_seal']}`", f"- tested head `{record['tested_head']}`",
              f"- publication build digest `{record['publication']['sha256']}`",
              f"- released baseline: {_cell(b['released']['ref']) + ' @ `' + b['released']['commit'] + '`' if b['released'] else 'none'}",
              f"- models: {', '.join(_cell(m) for m in b['models']) or 'none'}", "",
              "## Credential-free gates", "", "| gate | status |", "|---|---|"]
    lines += [f"| {_cell(c['gate'])} | {c['status']} |" for c in record["checks"]]
    lines += ["", "## Cases", "", "| case | skill | evidence | candidate | released | comparison | review |", "|---|---|---|---|---|---|---|"]
    for c in record["cases"]:
        lines.append(f"| {_cell(c['case'])} | {_cell(c['skill'])} | {c['evidence']} | {c['candidate']} | {c['released'] or '—'} "
                     f"| {c['comparison']} | {_cell(c['review'])} |")
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
