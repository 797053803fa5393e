"""Atomic bundle writer (DESIGN §6, §8): a bundle appears whole, or not at all — and never with a credential.

Why: resume treats a sealed, fresh bundle as "this run finished" (runner.plan.existing_state),
and the evidence gate treats every bundle it finds as evidence. A bundle half-written by a crashed
or interrupted run must therefore never sit at its final path. The writer builds it in a temp dir
beside the destination (same filesystem, so the final rename is atomic), fsyncs every file and
directory, and renames into place. Temp dirs of dead writers are discarded on the next start.

Paths: the destination's directories are reached from the repository root one component at a
time without following symlinks (skill_eval.core.fsio), and every file is created relative to the
open temp directory, so a symlink planted in the evidence tree can neither redirect the bundle
nor its removal outside the repository.

Credentials (runner.secrets): every file and file name is redacted on the way in, by the exact
values the runner injected, in every encoding. A bundle in which anything had to be redacted, or
that still holds any form at sealing, is *held back*: never sealed, moved redacted to the held
location (`<evidence>/.held/<bundle path>/`, see `held_path`) with a HELD.txt naming the
variables, forms and files (never a value); a file still holding a form there is replaced by a
placeholder, so unredacted bytes exist nowhere. Why hold rather than seal the redacted copy: the
agent got hold of a credential and wrote it out, and the redacted files no longer match the
digests their call records attest, so the bundle is not evidence; the run reports it loudly.

Temp dirs are named `.tmp-<name>.<pid>.<random>`; runner.plan.discard_partials applies
`discard_partials` to every directory of the evidence tree at the start of a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets as _random
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skill_eval.core import fsio, seal, strict
from skill_eval.core.errors import InputError, SkillEvalError, message_of
from skill_eval.harness.runner.isolation import pid_alive
from skill_eval.harness.runner.secrets import MIN_SECRET_LEN, Hit, SecretLeak, describe, scan_fd, scanner

TMP_PREFIX = ".tmp-"  # must equal runner.plan.TMP_PREFIX (a test holds them together)
HELD_DIR = ".held"
HELD_NOTE = "HELD.txt"
WITHHELD = b"[WITHHELD: this file still held a credential form the writer could not redact]\n"
FILE_IO_HELPERS = ("_fsync_tree", "discard_partials", "_discard_in", "_create", "_read_source", "_open_dir_at")


class BundleWriteError(SkillEvalError):
    """The bundle could not be written or sealed; nothing is left at the destination."""


class BundleHeld(SecretLeak):
    """The bundle held a credential: it was kept aside redacted, never sealed."""


def held_path(evidence_root: Path, dest: Path) -> Path:
    """Where a held-back bundle goes: `<evidence>/.held/<its path below evidence>` (the gate flags it)."""
    return Path(evidence_root) / HELD_DIR / Path(dest).relative_to(evidence_root)


def _discard_in(parent_fd: int, prefix: str) -> list[str]:
    removed = []
    for entry in sorted(os.scandir(parent_fd), key=lambda e: e.name):
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        parts = entry.name[len(TMP_PREFIX):].rsplit(".", 2)
        pid = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None
        if pid is not None and (pid == os.getpid() or pid_alive(pid)):
            continue  # a writer that may still be working on it
        with contextlib.suppress(OSError):
            shutil.rmtree(entry.name, dir_fd=parent_fd)
        removed.append(entry.name)
    return removed


def discard_partials(parent: Path, name: str | None = None) -> list[Path]:
    """Remove temp dirs in `parent` (for bundle `name`, or any) whose writer process is gone.

    A temp dir of a live writer (another -j worker) is left alone; its pid is in its name.
    Removal goes through the directory's descriptor and never follows a link.
    """
    prefix = TMP_PREFIX + (f"{name}." if name is not None else "")
    try:
        fd = os.open(parent, fsio.DIR_FLAGS)
    except OSError:
        return []
    try:
        return [Path(parent) / n for n in _discard_in(fd, prefix)]
    finally:
        os.close(fd)


def _create(dir_fd: int, name: str, data: bytes, *, exclusive: bool = True) -> None:
    """Create dir_fd/name (never through a link); exclusive: a bundle file is written once."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _read_source(path: Path) -> bytes:
    """A file of the sandbox's record dir being copied into the bundle (sandbox-private, not an input)."""
    return strict.read_bytes(path)


def _open_dir_at(dir_fd: int, name: str) -> int:
    return os.open(name, fsio.DIR_FLAGS, dir_fd=dir_fd)


def _fsync_tree(dir_fd: int) -> None:
    """fsync every file and directory below dir_fd, then dir_fd itself."""
    for _dirpath, _dirnames, filenames, fd in os.fwalk(".", dir_fd=dir_fd, topdown=False, follow_symlinks=False):
        for name in filenames:
            f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            try:
                os.fsync(f)
            finally:
                os.close(f)
        os.fsync(fd)
    os.fsync(dir_fd)


class BundleWriter:
    """Collect a bundle's files in a temp dir, then `seal()` it into place atomically.

    dest: the bundle directory. secrets: credential name -> exact value to redact (the runner
    passes what it injected). root: the repository (or evidence) root the destination must stay
    inside; no component below it may be a symlink (default: dest's parent). held: where a
    held-back bundle goes (default `<dest's parent>/.held/<name>`; the runner passes `held_path`).

    Use as a context manager: leaving the block without sealing (an exception, a budget cut)
    removes the temp dir, so nothing partial survives even without a restart.
    """

    def __init__(self, dest: Path, secrets: Mapping[str, str] | None = None, *, root: Path | None = None,
                 held: Path | None = None, sign: tuple[Path, str] | None = None):
        self.dest = Path(dest)
        self.sign = sign  # (signing key, the bundle's path below the evidence root): core/seal.py, at sealing
        if root is None:  # no repository named: only the bundle's own directory is guarded
            self.dest.parent.mkdir(parents=True, exist_ok=True)
        self.root = Path(root) if root is not None else self.dest.parent
        self.held = Path(held) if held is not None else self.dest.parent / HELD_DIR / self.dest.name
        self.secrets = dict(secrets or {})
        self._scanner = scanner(self.secrets)
        self.redacted: list[tuple[str, list[Hit]]] = []
        self.sealed = False
        self._parts = fsio.rel_parts(self.root, self.dest)
        if not self._parts:
            raise BundleWriteError("the bundle destination is the root itself", source=self.dest)
        self._parent_fd = fsio.open_dir(self.root, self._parts[:-1], create=True)
        self._tmp_fd = -1
        try:
            name = self._parts[-1]
            _discard_in(self._parent_fd, f"{TMP_PREFIX}{name}.")
            try:
                st = os.stat(name, dir_fd=self._parent_fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise InputError("is a symlink; refusing to write a bundle through it", source=self.dest,
                                      fix="remove the link")
            if st is not None:
                raise BundleWriteError("a sealed bundle already exists here; bundles are immutable", source=self.dest,
                                       fix="delete it to re-record, or skip this item (resume)")
            self._tmp_name = f"{TMP_PREFIX}{name}.{os.getpid()}.{_random.token_hex(4)}"
            os.mkdir(self._tmp_name, 0o755, dir_fd=self._parent_fd)
            self._tmp_fd = _open_dir_at(self._parent_fd, self._tmp_name)
        except BaseException:
            self._close()
            raise
        self.tmp = self.dest.parent / self._tmp_name

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self.sealed:
            self.abort()

    def _close(self) -> None:
        for attr in ("_tmp_fd", "_parent_fd"):
            fd = getattr(self, attr, -1)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, attr, -1)

    def _target(self, rel: str) -> tuple[str, ...]:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            raise BundleWriteError(f"bundle path {rel!r} must be relative and inside the bundle")
        return tuple(p for p in parts if p != ".")

    def _note(self, rel: str, hits: list[Hit]) -> None:
        if hits:
            self.redacted.append((rel, hits))

    # -- writing -----------------------------------------------------------------------------
    def add_bytes(self, rel: str, data: bytes) -> str:
        """Write one file, its name and bytes redacted; returns its (redacted) relative path."""
        if self.sealed or self._tmp_fd < 0:
            raise BundleWriteError("bundle already sealed or aborted", source=self.dest)
        self._target(rel)
        safe_name, name_hits = self._scanner.redact_bytes(rel.encode("utf-8", "surrogateescape"))
        safe_rel = safe_name.decode("utf-8", "surrogateescape")
        parts = self._target(safe_rel)
        data, hits = self._scanner.redact_bytes(data)
        self._note(safe_rel, name_hits + [h for h in hits if h not in name_hits])
        dir_fd = fsio.open_from(os.dup(self._tmp_fd), parts[:-1], True, self.tmp)
        try:
            _create(dir_fd, parts[-1], data)
        except FileExistsError:
            raise BundleWriteError(f"bundle file {safe_rel} is written twice", source=self.dest) from None
        except OSError as exc:  # ENOSPC, EDQUOT, EIO: name the file (the bare OSError named none)
            raise BundleWriteError(f"cannot write bundle file {safe_rel} ({exc.strerror or exc})", source=self.dest,
                                   fix="free disk space (or quota) and run again: nothing partial is kept") from None
        finally:
            os.close(dir_fd)
        return safe_rel

    def add_text(self, rel: str, text: str) -> str:
        return self.add_bytes(rel, text.encode("utf-8"))

    def add_json(self, rel: str, value: Any) -> str:
        """The project's one JSON form (strict.dumps_json), after redacting every string in value."""
        return self.add_text(rel, strict.dumps_json(self._scanner.redact(value)))

    def add_jsonl(self, rel: str, records: Iterable[Any]) -> str:
        lines = [json.dumps(self._scanner.redact(r), sort_keys=True, ensure_ascii=False, allow_nan=False)
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
                written.append(self.add_bytes(f"{rel}/{sub}" if rel else sub, _read_source(path)))
        return written

    # -- sealing -----------------------------------------------------------------------------
    def seal(self) -> Path:
        """Scan for credentials (hold back on any), fsync everything, rename into place; returns dest."""
        if self.sealed:
            return self.dest
        if self._tmp_fd < 0:
            raise BundleWriteError("bundle was aborted", source=self.dest)
        try:
            remaining = scan_fd(self._tmp_fd, self._scanner)
        except OSError as exc:
            self.abort()
            raise BundleWriteError(f"cannot scan the bundle ({exc.strerror})", source=self.dest) from None
        short = [n for n in self.secrets if 0 < len(self.secrets[n]) < MIN_SECRET_LEN]
        if self.redacted or remaining or short:
            self._hold(remaining, short)  # raises BundleHeld
        if self.sign is not None:  # the runner's signature over every file, made outside any agent's reach
            try:
                seal.seal_tree(self.tmp, self.sign[1], None, self.sign[0])
            except (OSError, SkillEvalError) as exc:
                self.abort()
                raise BundleWriteError(f"cannot sign the bundle: {message_of(exc) if isinstance(exc, SkillEvalError) else exc}",
                                       source=self.dest, fix="check SKILL_EVAL_SIGNING_KEY (docs/SIGNING.md)") from None
        try:
            _fsync_tree(self._tmp_fd)
            os.rename(self._tmp_name, self._parts[-1], src_dir_fd=self._parent_fd, dst_dir_fd=self._parent_fd)
        except OSError as exc:  # the rename fails if dest appeared meanwhile (non-empty dir): never merges
            self.abort()
            raise BundleWriteError(f"cannot move the bundle into place ({exc.strerror})", source=self.dest) from None
        os.fsync(self._parent_fd)
        self.sealed = True
        self._close()
        return self.dest

    def _hold(self, remaining: list[tuple[str, list[Hit]]], short: list[str]) -> None:
        """Move the redacted temp bundle to the held location with a reason note, then raise BundleHeld."""
        for rel, _hits in remaining:  # what redaction could not remove is withheld, whole
            parts = self._target(rel.rstrip("/"))
            with contextlib.suppress(OSError):
                dir_fd = fsio.open_from(os.dup(self._tmp_fd), parts[:-1], False, self.tmp)
                if dir_fd >= 0:
                    try:
                        if rel.endswith("/"):
                            shutil.rmtree(parts[-1], dir_fd=dir_fd)
                        else:
                            os.unlink(parts[-1], dir_fd=dir_fd)
                        placeholder = f"withheld-{_random.token_hex(4)}" if self._scanner.scan(parts[-1].encode()) else parts[-1]
                        _create(dir_fd, placeholder, WITHHELD, exclusive=False)
                    finally:
                        os.close(dir_fd)
        reasons = [f"{rel}: redacted {describe(hits)}" for rel, hits in self.redacted]
        reasons += [f"{rel if not self._scanner.scan(rel.encode()) else '<a file name>'}: still held {describe(hits)} "
                    "after redaction; file withheld" for rel, hits in remaining]
        reasons += [f"credential {n} has fewer than {MIN_SECRET_LEN} characters and cannot be redacted reliably" for n in short]
        variables = sorted({h.name for _rel, hits in self.redacted + remaining for h in hits} | set(short))
        files = sorted({rel for rel, _hits in self.redacted + remaining})
        note = ("This bundle was held back, not sealed: it contained credentials the runner injected.\n"
                "Every file here is redacted; a file that could not be redacted was replaced by a placeholder.\n"
                "It is not evidence. Find out how the agent reached the credential, then delete this directory.\n\n"
                + "".join(f"- {r}\n" for r in reasons))
        held_fd = -1
        try:
            _create(self._tmp_fd, HELD_NOTE, note.encode("utf-8"), exclusive=False)
            _fsync_tree(self._tmp_fd)
            hparts = fsio.rel_parts(self.root, self.held)
            fsio.remove_tree(self.root, self.held)
            held_fd = fsio.open_dir(self.root, hparts[:-1], create=True)
            os.rename(self._tmp_name, hparts[-1], src_dir_fd=self._parent_fd, dst_dir_fd=held_fd)
            os.fsync(held_fd)
        except (OSError, SkillEvalError) as exc:
            self.abort()  # no safe place to keep it: drop the redacted copy rather than seal it
            raise BundleHeld(f"held back (and discarded: {exc}): {'; '.join(reasons[:3])}", source=self.dest,
                             fix="do not let the agent print credentials") from None
        finally:
            if held_fd >= 0:
                os.close(held_fd)
        self._close()
        where = self.held.relative_to(self.root) if self.held.is_relative_to(self.root) else self.held
        shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
        raise BundleHeld(f"held back, not sealed: the bundle contained credential {', '.join(variables)}"
                         + (f" in {shown}" if shown else "") + f"; redacted copy kept at {where}",
                         source=self.dest, fix=f"see {HELD_NOTE} there; keep credentials out of the agent's reach, then re-run")

    def abort(self) -> None:
        if self._tmp_fd >= 0 and self._parent_fd >= 0:
            with contextlib.suppress(OSError):
                shutil.rmtree(self._tmp_name, dir_fd=self._parent_fd)
        self._close()
