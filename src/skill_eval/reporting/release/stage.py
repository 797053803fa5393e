"""The sealed stage: canonical bytes, seal, decode, and the difference against a fresh snapshot.

The stage file is the RFC 8785 form of the record plus one newline, so its bytes are a
function of its content: a hand edit that keeps valid JSON (reordered keys, changed spacing)
is refused as non-canonical, and any content edit breaks the seal. The seal is keyless — it
detects accidents, not a forger who recomputes it — which is why stages and reports can be
signed (`sign`) and why `resume` never trusts the stage alone: it recomputes the snapshot
from the checkout and raw evidence and refuses any difference, naming it.

No machine-local path is ever written: the raw root is repository-relative (committed
evidence) or stage-relative (`raw/`, a session's own runs) and reconstructed on resume.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import formats, hashing, schemas, strict
from skill_eval.core.errors import CheckFailed, InputError
from skill_eval.reporting.release import RAW_DIR, write_atomic
from skill_eval.reporting.release import snapshot as snap

SEAL_DOMAIN = "skill-eval-release-stage-v1"
SESSION_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_STAGE_BYTES = 64 * 1024 * 1024
# Digests derived from other staged fields: their inputs are compared one by one instead.
DERIVED = {"raw_sha256", "receipt_sha256", "case_set_sha256", "sha256"}


def check_session(session: str) -> str:
    if not SESSION_RE.match(session) or len(session) > 64:
        raise InputError(f"session id {session!r} must be lower-case letters/digits in '-'-separated words, at most 64 bytes",
                         field="--session", fix="e.g. --session v1-2-0-rc1")
    return session


def raw_root_label(cfg: Config, source: str) -> str:
    if source == "evidence":
        return (cfg.evals_dir / "evidence").relative_to(cfg.root).as_posix()
    return RAW_DIR


def raw_root_path(cfg: Config, stage_dir: Path, source: str) -> Path:
    """Reconstruct the producer-local raw root from current input (never read from the stage)."""
    return cfg.evals_dir / "evidence" if source == "evidence" else stage_dir / RAW_DIR


def seal_of(record: dict[str, Any]) -> str:
    return hashing.record_digest(SEAL_DOMAIN, {k: v for k, v in record.items() if k != "seal"})


def render(cfg: Config, *, session: str, source: str, released_ref: str | None, checks: list[dict[str, Any]],
           snapshot: dict[str, Any], candidate: dict[str, Any], now: str | None = None) -> dict[str, Any]:
    record = {
        "schema_version": formats.FORMATS["release_stage"],
        "session": check_session(session),
        "created_at": now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": source,
        "raw_root": raw_root_label(cfg, source),
        "released_ref": released_ref,
        "tested_head": snap.tested_head(cfg),
        "candidate": candidate,
        "checks": sorted(checks, key=lambda c: c["gate"]),
        "snapshot": snapshot,
    }
    record["seal"] = seal_of(record)
    schemas.validate(record, "release_stage", "rendered stage")
    text = canonical_bytes(record).decode("utf-8")
    for local in {str(cfg.root), str(cfg.root.resolve())}:
        if local in text:  # a bug, not bad input: the stage must never carry a producer-local path
            raise RuntimeError(f"refusing to write a stage that contains the local path {local!r}")
    return record


def canonical_bytes(record: dict[str, Any]) -> bytes:
    return hashing.canonical_json(record) + b"\n"


def write(path: Path, record: dict[str, Any]) -> None:
    write_atomic(path, canonical_bytes(record))


def decode(path: Path) -> dict[str, Any]:
    """Read a stage: strict JSON, known version, schema, canonical bytes, intact seal."""
    data = strict.read_bytes(path, max_bytes=MAX_STAGE_BYTES)
    record: dict[str, Any] = strict.loads_json(strict.decode_utf8(data, path), path)
    record = formats.upgrade(record, "release_stage", path)
    schemas.validate(record, "release_stage", path)
    if data != canonical_bytes(record):
        raise InputError("is not in canonical form (RFC 8785 + newline): it was edited after staging",
                         source=path, fix="re-run `skill-eval release stage`")
    if record["seal"] != seal_of(record):
        raise CheckFailed("seal does not match the staged content: the stage was altered", source=path, field="seal",
                          fix="re-run `skill-eval release stage`")
    return record


def _runs_by_bundle(value: Any) -> Any:
    """Lists of runs become {bundle: run} so a difference names the bundle, not a list index."""
    if isinstance(value, dict):
        return {k: (_runs_by_bundle({r["bundle"]: r for r in v}) if k == "runs" and isinstance(v, list)
                    else _runs_by_bundle(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_runs_by_bundle(v) for v in value]
    return value


def _walk(a: Any, b: Any, path: tuple[str, ...], out: list[tuple[tuple[str, ...], Any, Any]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key in DERIVED:
                continue
            if key not in a or key not in b:
                out.append(((*path, key), a.get(key, "<absent>"), b.get(key, "<absent>")))
            else:
                _walk(a[key], b[key], (*path, key), out)
    elif a != b:
        out.append((path, a, b))


def _short(v: Any) -> str:
    s = str(v)
    return s[:12] + "…" if len(s) > 16 and re.fullmatch(r"[0-9a-f]+", s) else (s if len(s) <= 60 else s[:57] + "...")


def describe(path: tuple[str, ...], old: Any, new: Any, raw_label: str) -> str:
    """One phrase naming what changed: the raw file, the receipt, the skill, the case."""
    if len(path) >= 7 and path[0] == "cases" and path[4] == "runs" and path[6] == "files" and len(path) == 8:
        what = "receipt" if path[7] == "facts.json" else "raw byte"
        verb = "added" if old == "<absent>" else "removed" if new == "<absent>" else "changed"
        return f"{verb} {what}: {raw_label}/{path[5]}/{path[7]}"
    if len(path) == 7 and path[0] == "cases" and path[4] == "runs" and path[6] == "judgments_sha256":
        verb = "added" if old is None else "removed" if new is None else "changed"
        return (f"{verb} judgments: {raw_label}/{path[5]}/{snap.JUDGMENTS} (the judgments layer is frozen when the stage is "
                "sealed: judge before staging)")
    if len(path) >= 6 and path[0] == "cases" and path[4] == "runs":
        if len(path) == 6:
            return f"run {'added' if old == '<absent>' else 'removed'}: {raw_label}/{path[5]}"
        return f"re-derived {'.'.join(path[6:])} of {raw_label}/{path[5]} changed ({_short(old)} -> {_short(new)})"
    if path[:2] == ("bindings", "candidate_skills") and len(path) == 3:
        return f"candidate skill {path[2]} changed ({_short(old)} -> {_short(new)})"
    if path[:3] == ("bindings", "released", "skills") and len(path) == 4:
        return f"released skill {path[3]} changed ({_short(old)} -> {_short(new)})"
    if path[0] == "cases" and len(path) == 2:
        return f"case {path[1]} {'added to' if old == '<absent>' else 'removed from'} the case set"
    if path[0] == "cases":
        return f"case {path[1]}: {'.'.join(path[2:])} changed ({_short(old)} -> {_short(new)})"
    return f"{'.'.join(path)} changed ({_short(old)} -> {_short(new)})"


def differences(staged: dict[str, Any], fresh: dict[str, Any], raw_label: str) -> list[str]:
    out: list[tuple[tuple[str, ...], Any, Any]] = []
    _walk(_runs_by_bundle(staged), _runs_by_bundle(fresh), (), out)
    return [describe(p, o, n, raw_label) for p, o, n in out]
