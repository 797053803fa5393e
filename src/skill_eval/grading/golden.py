"""L4: the golden corpus proves every grader rule can fail, and a bundle writer.

`agent-evals/skills/golden/manifest.yaml` lists every golden bundle with its primary
dimension and its FULL expected failure set; `check()` re-grades each bundle and
demands the exact set — a grader that starts under-reporting (or over-reporting) is
caught either way. Unlisted bundle directories and listed-but-missing ones are errors.

`write_bundle` writes a bundle in the ARCHITECTURE.md format from in-memory recorded
calls; the golden generator, the tests and the benchmark share it so they cannot drift
from the format the loader reads.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.claim import extract
from skill_eval.content.config import Config, SubjectProfile
from skill_eval.content.evals import GOLDEN_DIR, GOLDEN_SCENARIOS, golden_dir, load_golden_scenarios  # noqa: F401 - re-exported
from skill_eval.core import fsio, hashing, schemas, strict
from skill_eval.core.errors import ConfigError
from skill_eval.core.formats import FORMATS
from skill_eval.core.vocab import CallStatus
from skill_eval.grading import judgments
from skill_eval.grading.graders import Catalog, is_sub_check

MANIFEST = "manifest.yaml"


# --------------------------------------------------------------------------- writer
@dataclass
class RecordedOutput:
    option: str
    format: str | None
    requested: str
    kind: str = "file"  # file | dir | stdout
    data: bytes | None = None  # file content (None: the call produced nothing)
    files: dict[str, bytes] = field(default_factory=dict)  # dir outputs


@dataclass
class RecordedCall:
    argv: list[str]
    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    cwd: str = "."
    outputs: list[RecordedOutput] = field(default_factory=list)
    status: CallStatus = "complete"
    substitutions: dict[str, int] = field(default_factory=lambda: {"stdout": 0, "stderr": 0})
    # Call v2 input digests ({"arg", "path", "kind", "sha256", "stable"}); None writes an
    # upgraded-v1-shaped record (no input evidence), which graders refuse as evidence.
    inputs: list[dict[str, Any]] | None = None
    signal: int | None = None


def file_input(arg: int, path: str, data: bytes, *, stable: bool = True) -> dict[str, Any]:
    """The v2 `inputs` entry for a file argument with these bytes."""
    return {"arg": arg, "path": path, "kind": "file", "sha256": hashing.sha256_bytes(data), "stable": stable}


def _write(dest: Path, rel: str, data: bytes) -> None:
    fsio.write_file(dest, rel, data)  # never through a link below the bundle directory


def call_records(dest: Path, calls: list[RecordedCall], *, started: str = "2026-11-30T00:00:00Z",
                 first: int = 1) -> list[dict[str, Any]]:
    """Write captured/ for each call and return the calls.jsonl records (call format v2)."""
    records = []
    for n, c in enumerate(calls, start=first):
        rec: dict[str, Any] = {
            "schema_version": FORMATS["call"], "call": n, "status": c.status, "argv": list(c.argv), "cwd": c.cwd,
            "started_at": started, "finished_at": started if c.status == "complete" else None,
            "duration_ms": 700 if c.status == "complete" else None,
            "exit_code": c.exit_code if c.status == "complete" else None, "signal": c.signal,
            "stdout": None, "stderr": None, "outputs": [], "substitutions": dict(c.substitutions),
            "inputs": None if c.inputs is None else [dict(i) for i in c.inputs],
        }
        if c.status == "complete":
            for stream, data, suffix in (("stdout", c.stdout, "out"), ("stderr", c.stderr, "err")):
                rel = f"captured/{n}.{suffix}"
                _write(dest, rel, data)
                rec[stream] = {"path": rel, "sha256": hashing.sha256_bytes(data), "bytes": len(data)}
        for i, o in enumerate(c.outputs):
            out: dict[str, Any] = {"option": o.option, "format": o.format, "requested": o.requested, "kind": o.kind,
                                   "snapshot": None, "sha256": None}
            name = Path(o.requested.rstrip("/")).name or "out"
            if o.kind == "file" and o.data is not None and c.status == "complete":
                snap = f"captured/{n}.out.d/{i}/{name}"
                _write(dest, snap, o.data)
                out.update(snapshot=snap, sha256=hashing.sha256_bytes(o.data))
            elif o.kind == "dir" and o.files and c.status == "complete":
                snap = f"captured/{n}.out.d/{i}/{name}"
                for rel, data in o.files.items():
                    _write(dest, f"{snap}/{rel}", data)
                out.update(snapshot=snap, files={rel: hashing.sha256_bytes(d) for rel, d in o.files.items()})
            rec["outputs"].append(out)
        records.append(rec)
    return records


DEFAULT_USAGE = {"turns": 6, "tool_calls": 4, "tokens_in": 12000, "tokens_out": 900, "cost_usd": None,
                 "wall_clock_s": 30.0, "retries": 0, "stop_reason": "end_turn"}


def write_bundle(
    dest: Path,
    *,
    meta: dict[str, Any],
    calls: list[RecordedCall] | None = None,
    events: list[dict[str, Any]] | None = None,
    final: str = "",
    subject: SubjectProfile | None = None,
    claim_file: dict[str, Any] | None = None,
    prompt: str = "prompt\n",
    usage: dict[str, Any] | None = None,
    judgments: dict[str, Any] | None = None,
    facts: dict[str, Any] | None = None,
    blobs: list[bytes] | None = None,
    recorded: tuple[list[dict[str, Any]], Path] | None = None,
) -> Path:
    """Write one bundle. claim.json is derived from final.md (as the runner does) unless given.

    `recorded` = (call records, the recorder's captured/ dir) writes a recorder's own output
    verbatim instead of synthesizing it from `calls`.
    """
    dest.mkdir(parents=True, exist_ok=True)
    _write(dest, "meta.json", strict.dumps_json(meta).encode())
    _write(dest, "prompt.txt", prompt.encode())
    _write(dest, "final.md", final.encode())
    _write(dest, "events.jsonl", "".join(_line(e) for e in events or []).encode())
    if recorded is not None:
        records, captured = recorded
        if captured.is_dir():
            shutil.copytree(captured, dest / "captured", dirs_exist_ok=True)
        _write(dest, "calls.jsonl", "".join(_line(r) for r in records).encode())
    elif calls is not None or meta.get("kind") == "behavioral":
        records = call_records(dest, calls or [])
        _write(dest, "calls.jsonl", "".join(_line(r) for r in records).encode())
    if claim_file is None and subject is not None and meta.get("kind") == "behavioral":
        claim_file = extract(final, subject).as_file()
    if claim_file is not None:
        _write(dest, "claim.json", strict.dumps_json(claim_file).encode())
    _write(dest, "usage.json", strict.dumps_json(usage or DEFAULT_USAGE).encode())
    if judgments is not None:
        _write(dest, "judgments.json", strict.dumps_json(judgments).encode())
    if facts is not None:
        _write(dest, "facts.json", strict.dumps_json(facts).encode())
    for data in blobs or ():
        _write(dest, f"facts/blobs/{hashing.sha256_bytes(data)}", data)
    return dest


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def envelope(claim: dict[str, Any], prose: str = "Summary of the comparison.") -> str:
    """A final answer ending in one claim envelope."""
    return f"{prose}\n\n```skill-eval-claim\n{json.dumps(claim, indent=2)}\n```\n"


# --------------------------------------------------------------------------- check
@dataclass(frozen=True)
class Entry:
    id: str
    path: str
    good: bool
    primary: int | str | None
    expected: tuple[int | str, ...]
    description: str


@dataclass
class Outcome:
    entry: Entry
    actual: list[int | str]
    reasons: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return list(self.entry.expected) == self.actual


def load_manifest(cfg: Config) -> list[Entry]:
    path = golden_dir(cfg) / MANIFEST
    raw = schemas.validate(strict.load_yaml(path), "golden_manifest", path)
    entries, seen = [], set()
    for rec in raw["bundles"]:
        if rec["id"] in seen:
            raise ConfigError(f"duplicate golden bundle id {rec['id']!r}", source=path)
        seen.add(rec["id"])
        expected = tuple(sorted(f for f in rec["expected_failures"] if isinstance(f, int))) + tuple(
            sorted(f for f in rec["expected_failures"] if isinstance(f, str))
        )
        if rec["good"] and expected:
            raise ConfigError(f"golden bundle {rec['id']}: a good bundle must expect no failures", source=path)
        if not rec["good"] and rec.get("primary") not in expected:
            raise ConfigError(f"golden bundle {rec['id']}: primary {rec.get('primary')!r} is not in its expected failures", source=path)
        entries.append(Entry(rec["id"], rec.get("path", rec["id"]), rec["good"], rec.get("primary"), expected, rec["description"]))
    return entries


def check(cfg: Config, catalog: Any = None) -> tuple[list[Outcome], list[str]]:
    """Grade every golden bundle; return outcomes and corpus-level problems (unlisted/missing bundles)."""
    catalog = catalog or Catalog(cfg)
    root = golden_dir(cfg)
    entries = load_manifest(cfg)
    problems = []
    listed = {e.path for e in entries}
    on_disk = {p.parent.relative_to(root).as_posix() for p in root.rglob("meta.json")}
    for extra in sorted(on_disk - listed):
        problems.append(f"golden/{extra} is a bundle not listed in manifest.yaml")
    outcomes = []
    for e in entries:
        if e.path not in on_disk:
            problems.append(f"golden bundle {e.id}: directory golden/{e.path} has no meta.json")
            continue
        g = judgments.graded(root / e.path, catalog, (), fixture=True)[0]  # hand-written test bundles, not evidence
        outcomes.append(Outcome(e, g.failures(), {n: c.reasons for n, c in g.checks.items() if c.failed and not is_sub_check(n)}))
    return outcomes, problems
