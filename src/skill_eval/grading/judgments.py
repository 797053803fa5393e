"""The judgments layer, bound like a bundle (issue 34 item 2): `judgments.sig` and the one reader.

Why: the judge appends `judgments.json` after the recorder sealed the bundle, so the seal cannot cover it
(core/seal.UNSEALED). Unbound, anyone with a pull request could drop a hand-written judgments file (one
made-up judge) into a signed bundle and turn dimensions 4 and 5 from "not judged" to pass. So whoever
judges signs, with the recorder's signing key (SKILL_EVAL_SIGNING_KEY), the canonical pair

    (sha256 of the bundle's seal.json, sha256 of judgments.json)

in its own namespace (`skill-eval-judgments`: a judgments signature can never pass for a seal, or the
reverse), re-signed on every append; the signed bytes are rebuilt by the reader, so `judgments.sig` is the
signature alone. It is verified against the allowed signers at the base (content/trust.py), valid at the
latest entry's `judged_at`; a line limited to `namespaces="skill-eval-evidence"` (the recorder's key) may
sign judgments too, as may one that names `skill-eval-judgments`.

`read_judgments` is the one reader of judgments.json for `grade`, `pr`, `evidence`, `baseline` and the
release snapshot: it returns the entries only when they verify. An unsigned, mismatched or foreign file is
named (`state`, `reason`) and ignored — never a pass; the evidence gate fails it under `signatures =
"require"`. The golden corpus (hand-written bundles that test the graders themselves, never evidence) reads
its judgments through the same parser with `fixture=True`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from skill_eval.core import formats, hashing, schemas, seal, strict
from skill_eval.core.errors import InputError, SkillEvalError, message_of

JUDGMENTS, SIG = "judgments.json", "judgments.sig"
NAMESPACE = "skill-eval-judgments"
MAX_BYTES = 1 << 24
State = Literal["absent", "signed", "unsigned", "invalid", "fixture"]


@dataclass(frozen=True)
class Read:
    """What `read_judgments` found: the entries (`doc`) only when they count, else why not."""

    state: State
    doc: dict[str, Any] | None = None
    principal: str | None = None
    reason: str | None = None

    @property
    def ignored(self) -> bool:
        """A judgments file is present but does not count (unsigned, mismatched, foreign or unreadable)."""
        return self.state in ("unsigned", "invalid")


def payload(seal_sha256: str, judgments_sha256: str) -> bytes:
    """The signed bytes: the canonical pair, versioned (schemas/judgments_seal.schema.json)."""
    record = {"schema_version": formats.FORMATS["judgments_seal"], "namespace": NAMESPACE,
              "seal_sha256": seal_sha256, "judgments_sha256": judgments_sha256}
    schemas.validate(record, "judgments_seal", SIG)
    return hashing.canonical_json(record)


def _read(path: Path, limit: int) -> bytes | None:
    """A small file's bytes through a descriptor that never follows a link (None: absent or not a file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"is larger than {limit} bytes", source=path.name)
    return data


def _parse(data: bytes) -> dict[str, Any]:
    value = strict.loads_json(strict.decode_utf8(data, JUDGMENTS), JUDGMENTS)
    value = formats.upgrade(value, "judgments", JUDGMENTS)
    doc: dict[str, Any] = schemas.validate(value, "judgments", JUDGMENTS)
    return doc


def _latest(doc: dict[str, Any]) -> datetime:
    """When the file was last appended to (the latest judged_at): the signer must be valid then."""
    times = [datetime.fromisoformat(e["judged_at"].replace("Z", "+00:00")) for e in doc["judgments"]]
    times = [t if t.tzinfo else t.replace(tzinfo=UTC) for t in times]
    return max(times) if times else datetime.now(UTC)


def read_judgments(bundle: Path, signers: Sequence[seal.Signer], *, fixture: bool = False) -> Read:
    """The bundle's judgments when they count (module docstring); never raises on the bundle's bytes."""
    try:
        data = _read(bundle / JUDGMENTS, MAX_BYTES)
        if data is None:
            return Read("absent")
        doc = _parse(data)
    except SkillEvalError as exc:
        return Read("invalid", reason=f"{JUDGMENTS}: {message_of(exc)}".replace(f"{JUDGMENTS}: {JUDGMENTS}", JUDGMENTS))
    except Exception as exc:  # noqa: BLE001 - parsing boundary: bad bytes are an ignored judgments file, not a crash
        return Read("invalid", reason=f"{JUDGMENTS}: {type(exc).__name__}: {str(exc)[:200]}")
    if fixture:
        return Read("fixture", doc)
    return _verify(bundle, data, doc, signers)


def _verify(bundle: Path, data: bytes, doc: dict[str, Any], signers: Sequence[seal.Signer]) -> Read:
    try:
        sig = _read(bundle / SIG, seal.MAX_SIG_BYTES)
        sealed = _read(bundle / seal.SEAL, seal.MAX_SEAL_BYTES)
        when = _latest(doc)
    except (SkillEvalError, ValueError, OSError) as exc:
        return Read("invalid", reason=f"{SIG}: {message_of(exc) if isinstance(exc, SkillEvalError) else exc}")
    if sig is None:
        return Read("unsigned", reason=f"{JUDGMENTS} has no {SIG}: nothing binds it to the bundle or to a judge "
                                       f"(judge with {seal.KEY_ENV} set)")
    if sealed is None:
        return Read("invalid", reason=f"the bundle has no {seal.SEAL} for {SIG} to bind the judgments to")
    if not signers:
        return Read("unsigned", reason=f"{SIG}: {seal.NO_TRUST_ROOT}")
    signed = payload(hashlib.sha256(sealed).hexdigest(), hashlib.sha256(data).hexdigest())
    # signed in its own namespace (never valid as a seal); allowed to the recorder's evidence keys too
    signer = seal.check_signature(signed, sig, NAMESPACE, signers, when, listed=(NAMESPACE, seal.NAMESPACE))
    if isinstance(signer, str):
        return Read("invalid", reason=f"{SIG} {signer} (for this bundle's seal and these judgments)")
    return Read("signed", doc, signer.principal)


def sign(bundle: Path, key: Path | None) -> bool:
    """(Re-)sign the bundle's judgments.json with `key` after an append (True); without a key remove any
    judgments.sig left from an earlier append, which would no longer match (False: the file is unsigned)."""
    sig_path = bundle / SIG
    if key is None:
        sig_path.unlink(missing_ok=True)
        return False
    sealed = strict.read_bytes(bundle / seal.SEAL) if (bundle / seal.SEAL).is_file() else None
    if sealed is None:
        raise InputError(f"has no {seal.SEAL}: judgments can only be bound to a sealed bundle", source=bundle,
                         fix=f"record the bundle with {seal.KEY_ENV} set")
    data = strict.read_bytes(bundle / JUDGMENTS)
    sig = seal.sign(payload(hashlib.sha256(sealed).hexdigest(), hashlib.sha256(data).hexdigest()), key, NAMESPACE)
    tmp = sig_path.with_name(f".{SIG}.{os.getpid()}")
    tmp.write_bytes(sig)
    os.replace(tmp, sig_path)
    return True


def graded(path: Path, catalog: Any, signers: Sequence[seal.Signer], *, fixture: bool = False,
           loaded: Any = None) -> tuple[Any, Read]:
    """(the bundle's grade with only judgments that count, what `read_judgments` found): how every grading
    path (`grade`, the evidence pass, `baseline`, the release snapshot, the golden corpus) grades a bundle.
    The bundle loader reads no judgments.json itself, so a grade never sees an unverified one."""
    from skill_eval.grading import bundle as bundle_mod
    from skill_eval.grading.graders import grade_bundle

    b = loaded if loaded is not None else bundle_mod.load(path, max_bytes=catalog.cfg.max_bundle_file_bytes)
    found = read_judgments(path, signers, fixture=fixture)
    b.judgments = found.doc
    return grade_bundle(path, catalog, loaded=b), found
