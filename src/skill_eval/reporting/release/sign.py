"""Opt-in SSH signatures over stages and reports (`ssh-keygen -Y`, namespace `skill-eval`).

The seal is keyless: anyone who edits a stage can recompute it. A maintainer who opts in signs
the exact canonical bytes with an SSH key; `release verify` checks the signature against an
allowed-signers file, so a single flipped byte anywhere in a signed stage or report fails. The
signature sits beside the file (`stage.json.sig`, `report.json.sig`).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from skill_eval.core.errors import CheckFailed, ConfigError
from skill_eval.reporting.release import SIG_SUFFIX, SIGN_NAMESPACE


def _ssh_keygen() -> str:
    exe = shutil.which("ssh-keygen")
    if exe is None:
        raise ConfigError("ssh-keygen is not installed; signing needs OpenSSH 8.2 or later", fix="install openssh-client")
    return exe


def sig_path(path: Path) -> Path:
    return path.with_name(path.name + SIG_SUFFIX)


def sign(path: Path, key: Path) -> Path:
    if not key.is_file():
        raise ConfigError("signing key does not exist", source=key, field="--sign", fix="pass the private key file")
    sig = sig_path(path)
    sig.unlink(missing_ok=True)  # ssh-keygen refuses to overwrite
    out = subprocess.run([_ssh_keygen(), "-Y", "sign", "-n", SIGN_NAMESPACE, "-f", str(key), str(path)],
                         capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if out.returncode != 0 or not sig.is_file():
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(f"ssh-keygen could not sign ({last})", source=key, field="--sign",
                          fix="use an unencrypted key or load it into ssh-agent")
    return sig


def verify(path: Path, allowed_signers: Path) -> str:
    """The principal whose signature over `path` verifies; CheckFailed otherwise. The seal's verifier
    (core/seal.check_signature: offline, no ssh-keygen), in the release namespace, at the current time."""
    from datetime import UTC, datetime

    from skill_eval.core import seal, strict

    sig = sig_path(path)
    if not sig.is_file():
        raise CheckFailed("has no signature beside it", source=path, fix=f"sign it: expected {sig.name}")
    if not allowed_signers.is_file():
        raise ConfigError("allowed-signers file does not exist", source=allowed_signers, field="--allowed-signers")
    signers = seal.load_allowed_signers(allowed_signers)
    signer = seal.check_signature(strict.read_bytes(path), strict.read_bytes(sig), SIGN_NAMESPACE, signers, datetime.now(UTC))
    if isinstance(signer, seal.Signer):
        return signer.principal
    if "not in allowed_signers" in signer:
        raise CheckFailed("signature is by no key in the allowed-signers file", source=path,
                          fix="sign with an allowed key, or add the signer to the allowed-signers file")
    raise CheckFailed(f"signature {signer}: the file changed after it was signed, or the signature is damaged",
                      source=path, fix="re-stage (or re-render the report) and sign again")
