"""Identity of an agent binary for meta.json: its version string and the digest of its code.

Kept apart from the interface because it is the one adapter concern that runs a process
(`<binary> --version`) and reads files; the digest is `hashing.sha256_file`, the same one
every other record uses.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from skill_eval.core import strict
from skill_eval.core.errors import InputError
from skill_eval.core.hashing import sha256_file


@dataclass(frozen=True)
class BinaryInfo:
    """Identity of an agent binary for meta.json: version string + digest of the resolved file.

    `package` is `name@version` from the nearest package.json when the binary came from npm;
    `extra` digests files the entry point runs (Codex's codex.js execs a vendored native binary).
    """

    path: str
    resolved: str
    version: str | None
    sha256: str
    package: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def binary_info(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    extra: Sequence[Path] = (),
) -> BinaryInfo:
    """Version string (first line of `<binary> --version`) and sha256 of the resolved file.

    npm installs put a symlink in node_modules/.bin; the digest is of the file it resolves to
    (Claude: the native binary; Codex: the JS launcher, its native binary in `extra`; Gemini:
    the JS bundle entry point, its chunks identified by `package`). A binary that does not
    answer --version still gets a digest, with version None.
    """
    p = Path(path)
    resolved = p.resolve(strict=True)
    return BinaryInfo(
        path=str(p),
        resolved=str(resolved),
        version=_version(p, env, timeout),
        sha256=sha256_file(resolved),
        package=_npm_package(resolved),
        extra={str(x): sha256_file(x) for x in extra},
    )


def _version(p: Path, env: Mapping[str, str] | None, timeout: float) -> str | None:
    try:
        proc = subprocess.run(
            [str(p), "--version"],
            capture_output=True,
            timeout=timeout,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = proc.stdout.decode("utf-8", errors="replace").strip().splitlines()
    if proc.returncode == 0 and lines:
        return lines[-1].strip()  # Codex prints a warning line first on some setups
    return None


def _npm_package(resolved: Path) -> str | None:
    for parent in list(resolved.parents)[:4]:
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                data = strict.load_json(manifest)
            except InputError:
                return None
            if isinstance(data, dict) and isinstance(data.get("name"), str) and isinstance(data.get("version"), str):
                return f"{data['name']}@{data['version']}"
            return None
    return None
