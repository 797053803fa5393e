"""A call's operands: which paths it names, and the read-only snapshot the subject reads them from.

Why (issue 24 items 1 and 2): the agent is still running while the runner handles its files, so a
path it names is reached beneath a descriptor of the work root, component by component with
O_NOFOLLOW (runner/fdtree.py), and copied once into the call's snapshot, digested as copied: the
subject reads the snapshot, so the recorded input digests describe exactly the bytes it read, and a
swap-and-restore during the call changes nothing it sees. Refused (the tool never runs): an operand
that is or holds a symbolic link, a FIFO or device, one that is unreadable, one above the work root
named relatively (from the snapshot it would name the runner's store), one naming a tree the agent may
not read, and operands over SNAPSHOT_MAX_BYTES per call (apparent size: a sparse file costs what it
claims).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from skill_eval.harness.runner import fdtree

FILE_IO_HELPERS = ("open_root", "discard_snapshot", "links_in", "collect")  # the work tree by descriptor; the store
OUTSIDE = "<outside-sandbox>"
SNAPSHOT_MAX_BYTES = 512 << 20  # the operands one call may have copied (their apparent size): beyond, refused


class Refused(Exception):  # noqa: N818 - the recorder words it as the call's refusal
    """The call is refused before anything runs (recorded as spawn_failed, exit EXIT_REFUSED)."""


def inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def open_root(path: str) -> int:
    """A descriptor of the work root: every operand and output is reached beneath it (runner/fdtree.py)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def discard_snapshot(path: str) -> None:
    """Remove a call's read-only snapshot (by descriptor, never following a link in it)."""
    if os.path.lexists(path):
        fdtree.discard(path)


def links_in(path: str) -> list[str]:
    """Symbolic links in a snapshot (runner-private): a link the subject would follow could name a
    file outside the snapshot, whose bytes no digest covers."""
    if os.path.islink(path):
        return [path]
    found = []
    for dirpath, dirnames, filenames in os.walk(path):
        found += [os.path.join(dirpath, n) for n in [*dirnames, *filenames] if os.path.islink(os.path.join(dirpath, n))]
    return found


def operand(arg: str) -> str | None:
    """The path an argument may name: an operand, or the VALUE of --opt=VALUE (None: a bare option)."""
    if arg.startswith("-"):
        return arg.split("=", 1)[1] if "=" in arg else None
    return arg


def map_token(token: str, old: str, new: str) -> str:
    """`token` (an operand, or OPT=VALUE / FMT=VALUE) with a leading `old` root replaced by `new`."""
    if old == new:
        return token
    head, sep, value = token.rpartition("=") if "=" in token and not token.startswith(old) else ("", "", token)
    if value == old or value.startswith(old + "/"):
        return head + sep + new + value[len(old):]
    return token


def collect(argv: list[str], seen: list[str], cwd: str, skip: set[int], root_fd: int, snap: str, *,
        root: str, deny: Sequence[str], copy: bool = True) -> list[dict[str, Any]]:
    """Every operand (or --opt=VALUE, or @LIST) naming an existing path: copied once, through
    descriptors, into the call's snapshot (the subject reads only the snapshot), digested as copied.
    argv: the call with the agent's work root mapped to the host's; seen: as the agent wrote it (what
    a record may show: never a host path)."""
    found: dict[int, dict[str, Any]] = {}
    inner: list[tuple[int, str, str]] = []
    for i, (arg, shown) in enumerate(zip(argv[1:], seen[1:], strict=True), start=1):
        if i in skip or arg == "-":
            continue
        value = operand(arg)
        if not value:
            continue
        named = operand(shown) or value
        if value.startswith("@") and len(value) > 1 and not os.path.lexists(os.path.join(cwd, value)):
            value, named = value[1:], named[1:] if named.startswith("@") else named  # `@FILE`: a list file the tool reads
        path = os.path.normpath(os.path.join(cwd, value))
        if path == root or path.startswith(root + os.sep):
            inner.append((i, named, os.path.relpath(path, root).replace(os.sep, "/")))
            continue
        if any(inside(path, d) for d in deny):  # before "missing": a denied path is refused, never probed
            raise Refused(f"operand {named} names a path the agent may not read; refusing to run")
        if not os.path.isabs(value):
            # relative, yet above the work root: from the snapshot it would name the runner's store
            raise Refused(f"operand {named} leaves the work tree; name files inside it (or an absolute "
                          "system path); refusing to run")
        if not os.path.lexists(path):
            if "/" in value:
                found[i] = {"arg": i, "path": named, "kind": "missing", "sha256": None, "stable": True}
            continue
        found[i] = {"arg": i, "path": OUTSIDE, "kind": "dir" if os.path.isdir(path) else "file",
                    "sha256": None, "stable": False}
    copied: list[str] = []  # operands copied whole; one inside them is digested from its copy
    budget = SNAPSHOT_MAX_BYTES  # per call, apparent size: a sparse file costs what it claims
    for i, value, rel in sorted(inner, key=lambda t: (t[2] != ".", t[2].count("/"), t[2])):
        dest = snap if rel == "." else os.path.join(snap, rel)
        try:
            if not copy:  # no copy: digested beneath the work root (a link or FIFO refused all the same)
                kind, digest = fdtree.digest(root_fd, rel)
            elif any(c == "." or rel == c or rel.startswith(c + "/") for c in copied):
                kind, digest = fdtree.digest_path(dest)
            else:
                if rel != ".":
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                got = fdtree.snapshot(root_fd, rel, dest, max_bytes=max(1, budget))
                budget -= got.bytes
                kind, digest = got.kind, got.sha256
                copied.append(rel)
                if links := links_in(dest):
                    where = os.path.relpath(links[0], snap)
                    raise Refused(f"operand {value} holds a symbolic link ({where}); the subject reads only regular "
                                  "files and directories of the work tree; refusing to run")
        except (FileNotFoundError, NotADirectoryError):
            if "/" in value:
                found[i] = {"arg": i, "path": value, "kind": "missing", "sha256": None, "stable": True}
            continue
        except fdtree.Unsafe as exc:
            raise Refused(f"operand {value} cannot be read safely ({exc}); refusing to run") from None
        except OSError as exc:  # unreadable (mode 000, ...): the agent's doing, not an infrastructure error
            raise Refused(f"operand {value} cannot be read ({exc.strerror or exc}); refusing to run") from None
        found[i] = {"arg": i, "path": rel, "kind": kind, "sha256": digest, "stable": True, "_rel": rel}
    return [found[i] for i in sorted(found)]
