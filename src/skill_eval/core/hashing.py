"""Content digests: the tree digest T(domain, root) and canonical JSON record digests.

Freshness compares these digests, so they must be exact and portable: files are
ordered by the bytes of their '/'-separated path, only the executable bit of the mode
counts, and anything whose content is not plainly "a regular file" (symlinks,
devices, hard-link aliases, NUL or non-UTF-8 names) is refused rather than guessed at.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rfc8785

from skill_eval.core.errors import InputError

TREE_DOMAIN = "skill-eval-tree-v1"
MODE_FILE = "100644"
MODE_EXEC = "100755"


@dataclass(frozen=True, order=True)
class TreeEntry:
    """One regular file of a (possibly virtual) tree."""

    path: str  # '/'-separated, relative
    mode: str  # MODE_FILE or MODE_EXEC
    data: bytes


def _check_name(rel: str, root: object) -> None:
    if "\x00" in rel:
        raise InputError(f"path {rel!r} contains NUL", source=root)
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"path {rel!r} is not valid UTF-8", source=root, fix="rename the file") from None


def walk_tree(root: Path, *, skip_dirs: frozenset[str] = frozenset({".git"}), top_level_skip: bool = False
              ) -> list[TreeEntry]:
    """Read every regular file below root, refusing what a digest cannot represent.

    skip_dirs are left out (at any depth, or only directly under root with top_level_skip: a
    sandbox's own `.git` is the runner's business, a nested one is content); a skipped name that
    is a symlink is still refused — `.git -> elsewhere` must not vanish from a digest."""
    if root.is_symlink():
        raise InputError("is a symlink; hashed trees may not contain symlinks", source=root)
    if not root.is_dir():
        raise InputError("is not a directory", source=root)
    entries: list[TreeEntry] = []
    seen_inodes: dict[tuple[int, int], str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for d in dirnames:
            if (base / d).is_symlink():
                raise InputError(
                    f"{(base / d).relative_to(root).as_posix()} is a symlink; hashed trees may not contain symlinks",
                    source=root,
                    fix="replace the link with the real directory",
                )
        skipping = skip_dirs if (not top_level_skip or base == root) else frozenset()
        dirnames[:] = sorted(d for d in dirnames if d not in skipping)
        for name in filenames:
            full = base / name
            rel = full.relative_to(root).as_posix()
            _check_name(rel, root)
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                raise InputError(
                    f"{rel} is a symlink; hashed trees may not contain symlinks",
                    source=root,
                    fix="replace the link with a copy of the file",
                )
            if not stat.S_ISREG(st.st_mode):
                raise InputError(f"{rel} is not a regular file", source=root)
            key = (st.st_dev, st.st_ino)
            if st.st_nlink > 1 and key in seen_inodes:
                raise InputError(
                    f"{rel} is a hard link to {seen_inodes[key]}; hard-link aliases are refused", source=root
                )
            seen_inodes[key] = rel
            mode = MODE_EXEC if st.st_mode & stat.S_IXUSR else MODE_FILE
            entries.append(TreeEntry(rel, mode, full.read_bytes()))
    return entries


def digest_entries(domain: str, entries: Iterable[TreeEntry]) -> str:
    """T(domain, entries): the tree digest of an in-memory list of files."""
    ordered = sorted(entries, key=lambda e: e.path.encode("utf-8"))
    h = hashlib.sha256()
    h.update(domain.encode("utf-8") + b"\x00")
    previous = None
    for entry in ordered:
        if entry.path == previous:
            raise InputError(f"duplicate path {entry.path!r} in tree")
        previous = entry.path
        _check_name(entry.path, domain)
        if entry.mode not in (MODE_FILE, MODE_EXEC):
            raise InputError(f"unsupported mode {entry.mode} for {entry.path}")
        h.update(entry.path.encode("utf-8") + b"\x00")
        h.update(entry.mode.encode() + b"\x00")
        h.update(str(len(entry.data)).encode() + b"\x00")
        h.update(entry.data + b"\x00")
    return h.hexdigest()


def tree_digest(root: Path, domain: str = TREE_DOMAIN) -> str:
    """T(domain, root) over the files on disk."""
    return digest_entries(domain, walk_tree(root))


def canonical_json(value: Any) -> bytes:
    """RFC 8785 (JCS) canonical bytes of a JSON value."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise InputError(f"value cannot be canonicalized: {exc}") from None


def record_digest(domain: str, value: Any) -> str:
    """SHA-256 of `domain NUL` + the RFC 8785 form of a JSON record."""
    return hashlib.sha256(domain.encode("utf-8") + b"\x00" + canonical_json(value)).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
