"""Sealed evidence: a signed manifest per bundle, verified offline (issue 25 item 1).

Why: digests inside a bundle prove that its files agree with each other, not that the runner
made them. Whoever opens a pull request could rewrite a report and recompute every sha256, or turn
scripted evidence into "a real model ran". So the recorder, at sealing time, writes `seal.json` —
every file's path and sha256, the bundle's place in the evidence tree and its identity fields, as
RFC 8785 canonical JSON — and `seal.sig`, a detached SSH signature of exactly those bytes
(`ssh-keygen -Y sign`, namespace `skill-eval-evidence`) made with a key the recording maintainer
or a recording CI job holds, never the repository. The repository commits `allowed_signers`
(git's format: principals, options `namespaces=`, `valid-after=`, `valid-before=`, key) naming who
may sign evidence. Verification needs no network, no credential and no ssh-keygen: the signature
is checked with the `sshsig` library (a Python port of `ssh-keygen -Y check-novalidate`), the key
against `allowed_signers` at the seal's own `signed_at` time (so rotating a key by giving the old
one a `valid-before` keeps what it signed before valid; removing its line revokes all of it).

Not covered by the seal: `judgments.json`, a layer the judge adds after sealing (issue 28). The seal
is over a bundle's *logical* files (core.stored): compacting a bundle (raw streams gzip-compressed,
captured artifacts moved to the evidence tree's content store) leaves its seal valid, and a stored
form is verified against the sealed digest like a plain file.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from skill_eval.core import formats, hashing, schemas, stored, strict
from skill_eval.core.errors import ConfigError, InputError, message_of

NAMESPACE = "skill-eval-evidence"
SEAL, SIG = "seal.json", "seal.sig"
# the seal's own files, and the judge's later layer (bound by its own signature: grading/judgments.py)
UNSEALED = frozenset({SEAL, SIG, "judgments.json", "judgments.sig"})
SEAL_VERSION = formats.FORMATS["seal"]
IDENTITY = ("kind", "arm", "run_id", "k", "skill", "scenario", "prompt_id", "model", "scripted", "isolation", "status")
MAX_SIG_BYTES = 1 << 14
MAX_SEAL_BYTES = 1 << 22
KEY_ENV = "SKILL_EVAL_SIGNING_KEY"  # the private key file (or the public key of one in ssh-agent) the recorder signs with
Policy = Literal["require", "warn"]
State = Literal["signed", "unsigned", "invalid"]


# ----------------------------------------------------------------------------- writing


def manifest(files: Mapping[str, str], *, bundle: str, meta: Mapping[str, Any], signed_at: str) -> bytes:
    """The canonical bytes of seal.json: path -> sha256 of every sealed file, where the bundle sits, who it is."""
    identity = {k: meta.get(k) for k in IDENTITY if k in meta}
    identity["agent"] = (meta.get("agent") or {}).get("name")
    return hashing.canonical_json({"schema_version": SEAL_VERSION, "namespace": NAMESPACE, "bundle": bundle,
                                   "signed_at": signed_at, "identity": identity, "files": dict(sorted(files.items()))})


def signing_key(env: Mapping[str, str] | None = None, repo: Path | None = None) -> Path | None:
    """The key named by SKILL_EVAL_SIGNING_KEY (None: record unsigned). A key inside the repository is refused:
    whoever can read the repository could sign."""
    value = (env if env is not None else os.environ).get(KEY_ENV)
    if not value:
        return None
    key = Path(value).expanduser().resolve()
    if not key.is_file():
        raise ConfigError(f"{KEY_ENV}={value} is not a file", fix="point it at your evidence signing key (docs/SIGNING.md)")
    if repo is not None and key.is_relative_to(Path(repo).resolve()):
        raise ConfigError(f"{KEY_ENV} names a key inside the repository ({value})",
                          fix="keep the signing key outside every repository (docs/SIGNING.md)")
    return key


def sign(data: bytes, key: Path, namespace: str = NAMESPACE) -> bytes:
    """A detached armored SSH signature of `data` (ssh-keygen -Y sign; an ssh-agent key works too)."""
    try:
        res = subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", namespace, "-f", str(key)], input=data,
                             capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"cannot run ssh-keygen to sign evidence: {exc}", fix="install openssh-client") from None
    if res.returncode != 0 or not res.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        tail = res.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise ConfigError(f"ssh-keygen could not sign with {key}: {tail[0][:200]}",
                          fix="check the key (an encrypted key needs ssh-agent)")
    return res.stdout


def seal_tree(root: Path, bundle: str, meta: Mapping[str, Any] | None, key: Path, *, signed_at: str | None = None) -> str:
    """Write seal.json and seal.sig into the bundle directory `root` (before it is renamed into place);
    returns the manifest's sha256. meta: the bundle's meta (None: read from its meta.json)."""
    when = signed_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if meta is None:
        meta = strict.loads_json(strict.decode_utf8(strict.read_bytes(root / "meta.json"), "meta.json"), "meta.json")
        if not isinstance(meta, dict):
            raise InputError("is not an object", source=root / "meta.json")
    data = manifest(digests(root), bundle=bundle, meta=meta, signed_at=when)
    sig = sign(data, key)
    for name, payload in ((SEAL, data), (SIG, sig)):
        fd = os.open(root / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------- allowed signers


@dataclass(frozen=True)
class Signer:
    """One allowed_signers line: who, which key, for which namespaces, and when."""

    principals: tuple[str, ...]
    key: Any  # sshsig.PublicKey
    namespaces: tuple[str, ...] | None
    valid_after: datetime | None
    valid_before: datetime | None
    line: int

    def valid_at(self, when: datetime) -> bool:
        return (self.valid_after is None or when >= self.valid_after) and (self.valid_before is None or when < self.valid_before)

    @property
    def principal(self) -> str:
        return ",".join(self.principals)

    def describe(self) -> str:
        """The line's meaning without its key bytes: who, which namespaces, when (for trust-change findings)."""
        spaces = ",".join(self.namespaces) if self.namespaces is not None else "any namespace"
        when = [f"{label} {t:%Y-%m-%d %H:%M:%S}Z" for label, t in (("valid after", self.valid_after),
                                                                    ("valid before", self.valid_before)) if t]
        return f"{self.principal} ({spaces}{'; ' + ', '.join(when) if when else ''})"

    def fingerprint(self) -> str:
        """The key's SHA256 fingerprint (as ssh-keygen -l prints it)."""
        return str(self.key.sha256_str())


_TIME = re.compile(r"^(\d{8})(\d{4})?(\d{2})?(Z)?$")


def _time(value: str, where: str) -> datetime:
    m = _TIME.match(value)
    if not m:
        raise InputError(f"{value!r} is not a time", source=where, fix="write YYYYMMDD[HHMM[SS]]Z (UTC)")
    text = m.group(1) + (m.group(2) or "0000") + (m.group(3) or "00")
    try:
        return datetime.strptime(text, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        raise InputError(f"{value!r} is not a valid time", source=where, fix="write YYYYMMDD[HHMM[SS]]Z (UTC)") from None


def load_allowed_signers(path: Path) -> list[Signer]:
    """Parse git's allowed_signers format strictly (an error names the line and the fix)."""
    return parse_allowed_signers(strict.read_bytes(path), str(path))


def parse_allowed_signers(data: bytes, path: str) -> list[Signer]:
    """Parse allowed_signers bytes (a file, or a blob read from git at the base); `path` names it in errors."""
    from sshsig import PublicKey
    from sshsig.allowed_signers import AllowedSigner

    text = strict.decode_utf8(data, path)
    signers = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            entry = AllowedSigner.parse(line)
            key = PublicKey.from_openssh_str(f"{entry.key_type} {entry.base64_key}")
        except (ValueError, NotImplementedError) as exc:
            raise InputError(f"not an allowed_signers line: {exc}", source=where,
                             fix="write `principal [namespaces=\"skill-eval-evidence\"] [valid-after=...] ssh-ed25519 AAAA...`") from None
        opts = entry.options or {}
        unknown = set(opts) - {"namespaces", "valid-after", "valid-before"}
        if unknown:
            raise InputError(f"option {sorted(unknown)[0]!r} is not supported here", source=where,
                             fix="use only namespaces=, valid-after=, valid-before=")
        spaces = tuple(s.strip() for s in opts["namespaces"].split(",")) if "namespaces" in opts else None
        signers.append(Signer(tuple(p for p in entry.principals.split(",") if p), key, spaces,
                              _time(opts["valid-after"], where) if "valid-after" in opts else None,
                              _time(opts["valid-before"], where) if "valid-before" in opts else None, number))
    return signers


# ----------------------------------------------------------------------------- verifying

NO_TRUST_ROOT = "no trust root (no allowed_signers at the base): a seal proves nothing until one is merged"


def check_signature(data: bytes, sig: bytes, namespace: str, signers: Sequence[Signer], when: datetime,
                    listed: Sequence[str] | None = None) -> Signer | str:
    """The allowed signer whose key made `sig` over `data` in `namespace`, valid at `when`; else why not.
    `listed`: the namespaces an allowed_signers line with `namespaces=` may name for it (default: `namespace`).

    The one SSH signature verifier (the seal's, the judgments' and the release signature's). Never raises
    on the bytes: the signature library asserts and indexes its way through a malformed armor or blob
    (a flipped bit raised AssertionError), so any exception it raises is a signature that does not verify."""
    import sshsig

    try:
        key = sshsig.check_signature(data, sig, namespace=namespace)
    except Exception as exc:  # noqa: BLE001 - parsing boundary: whatever malformed bytes raise is "does not verify"
        return f"does not verify: {type(exc).__name__}: {str(exc)[:200]}".rstrip(": ")
    names = set(listed or (namespace,))
    matching = [s for s in signers if s.key == key and (s.namespaces is None or names & set(s.namespaces))]
    if not matching:
        return "is signed by a key that is not in allowed_signers"
    valid = [s for s in matching if s.valid_at(when)]
    if not valid:
        return f"was signed at {when:%Y-%m-%dT%H:%M:%SZ}, outside the validity of allowed_signers line {matching[0].line}"
    return valid[0]


def parse_manifest(data: bytes) -> dict[str, Any] | str:
    """seal.json's bytes as a validated manifest, or why they are not one (never raises on the bytes)."""
    try:
        value = strict.loads_json(strict.decode_utf8(data, SEAL), SEAL)  # the signature covers these exact bytes
        value = schemas.validate(formats.upgrade(value, "seal", SEAL), "seal", SEAL)
        datetime.strptime(value["signed_at"], "%Y-%m-%dT%H:%M:%SZ")
    except InputError as exc:
        return message_of(exc)
    except Exception as exc:  # noqa: BLE001 - parsing boundary (deep nesting, odd numbers): an invalid manifest
        return f"{SEAL}: {type(exc).__name__}: {str(exc)[:200]}"
    if not isinstance(value, dict):
        return f"{SEAL}: not an object"
    return value


@dataclass(frozen=True)
class Verdict:
    """A bundle's seal: `signed` (by `principal`), `unsigned`, or `invalid` (`reason` names the first difference)."""

    state: State
    principal: str | None = None
    reason: str | None = None


def _files(root: Path) -> dict[str, str] | str:
    """Every regular file of the bundle (relative path -> absolute path), or why it cannot be sealed."""
    return stored.files_of(root)


def _sha256(path: str) -> str:
    """A file's sha256, read in chunks through a descriptor that never follows a link."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


def _small(path: str, limit: int) -> bytes | None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    return data if len(data) <= limit else None


def digests(root: Path) -> dict[str, str]:
    """sha256 of every file the seal covers (the recorder calls this on the bundle it is sealing)."""
    files = _files(root)
    if isinstance(files, str):
        raise InputError(files, source=root)
    sources = stored.logical({rel: full for rel, full in files.items() if rel not in UNSEALED}, root)
    if isinstance(sources, str):
        raise InputError(sources, source=root)
    return {rel: stored.sha256_of(src, root, rel) for rel, src in sources.items()}


def verify(root: Path, bundle: str, signers: Sequence[Signer]) -> Verdict:
    """Check the seal of the bundle at `root`, whose place in the evidence tree is `bundle`. Offline; never
    raises on the bundle's bytes (any failure to parse them is an `invalid` verdict with its reason).
    With no signers (no trust root at the base) a seal proves nothing: the bundle counts as unsigned."""
    files = _files(root)
    if isinstance(files, str):
        return Verdict("invalid", reason=files)
    if SEAL not in files and SIG not in files:
        return Verdict("unsigned")
    if SEAL not in files or SIG not in files:
        return Verdict("invalid", reason=f"{SIG if SEAL in files else SEAL} is missing (a seal is the pair)")
    data, sig = _small(files[SEAL], MAX_SEAL_BYTES), _small(files[SIG], MAX_SIG_BYTES)
    if data is None or sig is None:
        return Verdict("invalid", reason=f"{SEAL if data is None else SIG} is too large")
    parsed = parse_manifest(data)
    if isinstance(parsed, str):
        return Verdict("invalid", reason=parsed)
    listed, when = parsed["files"], datetime.strptime(parsed["signed_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    if not signers:
        return Verdict("unsigned", reason=NO_TRUST_ROOT)
    signer = check_signature(data, sig, NAMESPACE, signers, when)
    if isinstance(signer, str):
        return Verdict("invalid", reason=f"{SIG} {signer}")
    principal = signer.principal
    value = parsed
    if value.get("bundle") != bundle:
        return Verdict("invalid", principal, f"sealed as {value.get('bundle')!r}, found at {bundle!r} (moved)")
    sources = stored.logical({rel: full for rel, full in files.items() if rel not in UNSEALED}, root)
    if isinstance(sources, str):
        return Verdict("invalid", principal, sources)
    for rel in sorted(set(listed) | set(sources)):
        if rel not in sources:
            return Verdict("invalid", principal, f"{rel} is sealed but missing")
        if rel not in listed:
            return Verdict("invalid", principal, f"{rel} is not in the seal (added after sealing)")
        src = sources[rel]
        try:
            actual = _sha256(src.path) if src.form == "plain" and src.path else stored.sha256_of(src, root, rel)
        except (InputError, OSError) as exc:
            return Verdict("invalid", principal, message_of(exc) if isinstance(exc, InputError) else f"{rel}: {exc}")
        if listed[rel] != actual:
            return Verdict("invalid", principal, f"{rel} differs from its sealed sha256 (edited after sealing)")
    return Verdict("signed", principal)
