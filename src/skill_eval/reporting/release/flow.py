"""The two halves of a release, with the human in between: `stage` and `resume`.

`stage` runs the credential-free gates, takes the snapshot, writes `stage.json` (sealed,
canonical) and `worksheet.yaml` into `<out>/<session>/`, optionally signs the stage, and
stops. It never renders a report or invents a comparison. `resume` verifies (signature when
asked, then seal and canonical bytes), recomputes the snapshot from the checkout and the raw
evidence and refuses any difference, reads the worksheet and optional waiver, and writes
`report.json` (canonical) and `report.md` beside the stage. It never runs an agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import strict
from skill_eval.core.errors import CheckFailed, InputError, SkillEvalError
from skill_eval.reporting.release import REPORT_JSON, REPORT_MD, STAGE_FILE, WORKSHEET_FILE, write_atomic
from skill_eval.reporting.release import candidate as candidate_mod
from skill_eval.reporting.release import report as report_mod
from skill_eval.reporting.release import sign as sign_mod
from skill_eval.reporting.release import snapshot as snap
from skill_eval.reporting.release import stage as stage_mod
from skill_eval.reporting.release import waiver as waiver_mod
from skill_eval.reporting.release import worksheet as worksheet_mod

MAX_LISTED = 6


@dataclass
class Staged:
    record: dict[str, Any]
    stage_path: Path
    worksheet_path: Path
    signature: Path | None


def stage(cfg: Config, *, out_dir: Path, session: str, source: str, released_ref: str | None,
          checks: list[dict[str, Any]], sign_key: Path | None = None, force: bool = False, now: str | None = None,
          candidate: dict[str, Any] | None = None) -> Staged:
    """`candidate`: the settled candidate record (candidate.settle: the CLI refuses a dirty one before recording);
    None inspects it now and records it undecided (a dirty, unwaived candidate then fails the report)."""
    stage_mod.check_session(session)
    if candidate is None:
        candidate = candidate_mod.unsettled(candidate_mod.inspect(cfg.root))
    stage_dir = out_dir / session
    stage_path = stage_dir / STAGE_FILE
    if stage_path.exists() and not force:
        raise InputError("a stage already exists for this session (its worksheet may hold a review)", source=stage_path,
                         fix="choose another --session, or pass --force to replace it")
    ws_path = stage_dir / WORKSHEET_FILE
    if force and _has_answers(ws_path):
        raise InputError("holds a filled-in review; re-staging would overwrite it", source=ws_path,
                         fix="move the worksheet elsewhere (or choose another --session) before re-staging")
    raw_root = stage_mod.raw_root_path(cfg, stage_dir, source)
    if source == "session" and not raw_root.is_dir():
        raise InputError("the session has no raw evidence", source=raw_root, fix="record the session's runs first (--run)")
    snapshot = snap.build(cfg, source=source, released_ref=released_ref, raw_root=raw_root)
    record = stage_mod.render(cfg, session=session, source=source, released_ref=released_ref, checks=checks,
                              snapshot=snapshot, candidate=candidate, now=now)
    stage_mod.write(stage_path, record)
    write_atomic(ws_path, worksheet_mod.render(record, _display(cfg, stage_path)).encode())
    sig = sign_mod.sign(stage_path, sign_key) if sign_key else None
    return Staged(record, stage_path, ws_path, sig)


def _has_answers(path: Path) -> bool:
    """True when a worksheet exists and any case has a comparison or review (a person's work)."""
    if not path.is_file():
        return False
    try:
        doc = strict.load_yaml(path)
    except SkillEvalError:
        return True  # unreadable: do not guess that it is disposable
    rows = doc.get("cases") if isinstance(doc, dict) else None
    return not isinstance(rows, list) or any(isinstance(r, dict) and (r.get("comparison") or r.get("review")) for r in rows)


def _display(cfg: Config, path: Path) -> str:
    try:
        return path.resolve().relative_to(cfg.root.resolve()).as_posix()
    except ValueError:
        return path.name


@dataclass
class Resumed:
    record: dict[str, Any]
    json_path: Path
    md_path: Path
    signature: Path | None


def recheck(cfg: Config, stage_path: Path, allowed_signers: Path | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Decode a stage and refuse it unless a freshly recomputed snapshot equals the staged one."""
    if allowed_signers is not None:
        sign_mod.verify(stage_path, allowed_signers)
    record = stage_mod.decode(stage_path)
    label = stage_mod.raw_root_label(cfg, record["source"])
    if record["raw_root"] != label:
        raise CheckFailed(f"stage names raw root {record['raw_root']!r}, this checkout's is {label!r}", source=stage_path,
                          field="raw_root", fix="resume in the repository that produced the stage")
    raw_root = stage_mod.raw_root_path(cfg, stage_path.parent, record["source"])
    fresh = snap.build(cfg, source=record["source"], released_ref=record["released_ref"], raw_root=raw_root)
    diffs = stage_mod.differences(record["snapshot"], fresh, record["raw_root"])
    if diffs:
        more = f" (+{len(diffs) - MAX_LISTED} more)" if len(diffs) > MAX_LISTED else ""
        raise CheckFailed("stage no longer matches the checkout and raw evidence: " + "; ".join(diffs[:MAX_LISTED]) + more,
                          source=stage_path, fix="restore the staged inputs, or re-stage and review again")
    return record, fresh


def resume(cfg: Config, stage_path: Path, worksheet_path: Path, *, waiver_path: Path | None = None,
           out_dir: Path | None = None, sign_key: Path | None = None, allowed_signers: Path | None = None,
           now: str | None = None) -> Resumed:
    record, fresh = recheck(cfg, stage_path, allowed_signers)
    answers = worksheet_mod.load(worksheet_path, record)
    outcome, reasons, incomplete = report_mod.decide(record, answers)
    waiver = None
    if waiver_path is not None:
        waiver = waiver_mod.load(waiver_path)
        waiver_mod.apply(waiver_path, waiver, outcome, reasons, incomplete, record["checks"])
        outcome = "waived"
        reasons = [f"incomplete evidence waived by {waiver['approver']}: {waiver['reason']}"] + reasons
    rep = report_mod.render(record, answers, outcome, reasons, waiver, fresh["bindings"]["publication"], now=now)
    dest = out_dir or stage_path.parent
    json_path, md_path = dest / REPORT_JSON, dest / REPORT_MD
    write_atomic(json_path, report_mod.canonical_bytes(rep))
    write_atomic(md_path, report_mod.markdown(rep).encode())
    sig = sign_mod.sign(json_path, sign_key) if sign_key else None
    return Resumed(rep, json_path, md_path, sig)
