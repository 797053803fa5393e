"""Atomic bundle writer (DESIGN §6, §8): a bundle appears whole, or not at all.

Why: resume treats a sealed, fresh bundle as "this run finished" (runner.plan.existing_state),
and the evidence gate treats every bundle it finds as evidence. A bundle half-written by a crashed
or interrupted run must therefore never sit at its final path. The writer builds it in a temp dir
beside the destination (same filesystem, so the final rename is atomic), redacts credential values
from everything it writes, refuses to seal if one remains anyway, fsyncs every file and directory,
and renames into place. Temp dirs of dead writers are discarded on the next start.

Temp dirs are named `.tmp-<name>.<pid>.<random>`; runner.plan.discard_partials applies
`discard_partials` to every directory of the evidence tree at the start of a run.
"""

from __future__ import annotations

import contextlib
import os
import secrets as _random
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skill_eval import strict
from skill_eval.errors import SkillEvalError
from skill_eval.runner.sandbox import assert_no_secrets, redact

TMP_PREFIX = ".tmp-"  # must equal runner.plan.TMP_PREFIX (a test holds them together)
FILE_IO_HELPERS = ("_write_bytes", "_read_bytes", "_fsync_path")


class BundleWriteError(SkillEvalError):
    """The bundle could not be written or sealed; nothing is left at the destination."""


def _write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "xb") as fh:  # x: a bundle file is written once
        fh.write(data)


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def discard_partials(parent: Path, name: str | None = None) -> list[Path]:
    """Remove temp dirs in `parent` (for bundle `name`, or any) whose writer process is gone.

    A temp dir of a live writer (another -j worker) is left alone; its pid is in its name.
    """
    removed: list[Path] = []
    if not Path(parent).is_dir():
        return removed
    prefix = TMP_PREFIX + (f"{name}." if name is not None else "")
    for entry in sorted(Path(parent).iterdir()):
        if not entry.name.startswith(prefix) or entry.is_symlink() or not entry.is_dir():
            continue
        parts = entry.name[len(TMP_PREFIX):].rsplit(".", 2)
        pid = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None
        if pid is not None and (pid == os.getpid() or _pid_alive(pid)):
            continue  # a writer that may still be working on it
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


class BundleWriter:
    """Collect a bundle's files in a temp dir, then `seal()` it into place atomically.

    Use as a context manager: leaving the block without sealing (an exception, a budget cut)
    removes the temp dir, so nothing partial survives even without a restart.
    """

    def __init__(self, dest: Path, secrets: Mapping[str, str] | None = None):
        self.dest = Path(dest)
        self.secrets = dict(secrets or {})
        self.sealed = False
        parent = self.dest.parent
        parent.mkdir(parents=True, exist_ok=True)
        discard_partials(parent, self.dest.name)
        if self.dest.exists():
            raise BundleWriteError("a sealed bundle already exists here; bundles are immutable", source=self.dest,
                                   fix="delete it to re-record, or skip this item (resume)")
        self.tmp = parent / f"{TMP_PREFIX}{self.dest.name}.{os.getpid()}.{_random.token_hex(4)}"
        self.tmp.mkdir()

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self.sealed:
            self.abort()

    def _target(self, rel: str) -> Path:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            raise BundleWriteError(f"bundle path {rel!r} must be relative and inside the bundle")
        return self.tmp / rel

    # -- writing -----------------------------------------------------------------------------
    def add_bytes(self, rel: str, data: bytes) -> str:
        """Write one file (credential values redacted); returns its relative path."""
        if self.sealed:
            raise BundleWriteError("bundle already sealed", source=self.dest)
        _write_bytes(self._target(rel), redact(data, self.secrets))
        return rel

    def add_text(self, rel: str, text: str) -> str:
        return self.add_bytes(rel, text.encode("utf-8"))

    def add_json(self, rel: str, value: Any) -> str:
        """The project's one JSON form (strict.dumps_json), after redacting every string in value."""
        return self.add_text(rel, strict.dumps_json(redact(value, self.secrets)))

    def add_jsonl(self, rel: str, records: Iterable[Any]) -> str:
        import json

        lines = [json.dumps(redact(r, self.secrets), sort_keys=True, ensure_ascii=False, allow_nan=False)
                 for r in records]
        return self.add_text(rel, "".join(line + "\n" for line in lines))

    def add_tree(self, rel: str, source: Path) -> list[str]:
        """Copy every regular file below source into rel/ (e.g. the shim's captured/); symlinks refused."""
        written = []
        source = Path(source)
        for dirpath, dirnames, filenames in os.walk(source):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file():
                    raise BundleWriteError("is not a regular file; bundles hold regular files only", source=path)
                sub = path.relative_to(source).as_posix()
                written.append(self.add_bytes(f"{rel}/{sub}" if rel else sub, _read_bytes(path)))
        return written

    # -- sealing -----------------------------------------------------------------------------
    def seal(self) -> Path:
        """Check for secrets, fsync everything, rename into place, fsync the parent; returns dest."""
        if self.sealed:
            return self.dest
        try:
            assert_no_secrets(self.tmp, self.secrets)
        except SkillEvalError:
            self.abort()
            raise
        for dirpath, _dirnames, filenames in os.walk(self.tmp, topdown=False):
            for name in filenames:
                _fsync_path(Path(dirpath) / name)
            _fsync_path(Path(dirpath))
        try:
            os.rename(self.tmp, self.dest)  # fails if dest appeared meanwhile (non-empty dir) — never merges
        except OSError as exc:
            self.abort()
            raise BundleWriteError(f"cannot move the bundle into place ({exc.strerror})", source=self.dest) from None
        _fsync_path(self.dest.parent)
        self.sealed = True
        return self.dest

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(self.tmp)
