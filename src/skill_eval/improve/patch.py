"""A proposal's diff: the agent's copy read back safely, every change checked, a `git apply`-able patch.

Why the care: the copy was the agent's to edit, so it is read like an adversary's tree. The walk
opens every directory and file through a descriptor with O_NOFOLLOW (`openat`-style, `dir_fd`), so a
symlink is refused wherever it is, never followed; so are devices, FIFOs, sockets, hard links (a
file the runner wrote has one link) and names git would have to quote. Only then is it compared
with the originals the runner copied in: a change outside the skill source folders, under a
protected path (fixtures, scenarios, golden, evidence, published copies), in a `.git` folder, or to
a file that is not UTF-8 text refuses the whole proposal (`ProposalRejected`, exit 1): a human
reviews one patch, not a patch and a list of things that were quietly dropped.

The patch is rendered here (difflib hunks, git's extended headers for new/deleted files and mode
changes, "\\ No newline at end of file") and then proven: `verify` applies it with `git apply` to a
scratch copy of the originals it touches and demands the proposed bytes and modes back.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from skill_eval.core.errors import CheckFailed

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
MAX_FILES = 20_000  # files in the copy after the run
MAX_FILE_BYTES = 4 * 1024 * 1024  # one file
MAX_TOTAL_BYTES = 64 * 1024 * 1024  # the whole copy: an agent filling the disk is refused, not read
MAX_DEPTH = 64
# names a unified diff carries unquoted and `git apply` reads back as written
SAFE_NAME = re.compile(r"[A-Za-z0-9._+@=,~-][A-Za-z0-9 ._+@=,~-]*")
CONTEXT = 3


class ProposalRejected(CheckFailed):
    """The agent's copy holds something a proposal may not contain: no patch is written (exit 1)."""


@dataclass(frozen=True)
class FileState:
    """One regular file: its bytes and whether it is executable (git's 100755)."""

    data: bytes
    executable: bool = False

    @property
    def mode(self) -> str:
        return "100755" if self.executable else "100644"


@dataclass(frozen=True)
class Change:
    """One file that differs: `old` None for an added file, `new` None for a deleted one."""

    path: str
    old: FileState | None
    new: FileState | None

    @property
    def status(self) -> str:
        return "added" if self.old is None else "deleted" if self.new is None else "modified"


def _reject(message: str, fix: str) -> ProposalRejected:
    return ProposalRejected(message, source="propose", fix=fix)


@contextlib.contextmanager
def _closing(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def read_copy(root: Path) -> dict[str, FileState]:
    """Every regular file below `root` (repository-relative '/'-paths), read through descriptors.

    Refuses (ProposalRejected) a symlink, a special file, a hard link, an undecodable or unsafe
    name, and a tree over the file, size or depth caps."""
    out: dict[str, FileState] = {}
    total = [0]
    try:
        fd = os.open(root, DIR_FLAGS)
    except OSError as exc:
        raise _reject(f"the agent's copy cannot be opened ({exc.strerror})", "re-run the proposal") from None
    with _closing(fd):
        try:
            _walk(fd, (), out, total)
        except OSError as exc:  # a folder the agent made unreadable, say: refused, never half-read
            where = f" at {exc.filename}" if exc.filename else ""
            raise _reject(f"the agent's copy cannot be read{where} ({exc.strerror})", "re-run the proposal") from None
    return out


def _walk(dir_fd: int, parts: tuple[str, ...], out: dict[str, FileState], total: list[int]) -> None:
    if len(parts) > MAX_DEPTH:
        raise _reject(f"the agent's copy nests deeper than {MAX_DEPTH} folders at {'/'.join(parts)}", "re-run the proposal")
    for name in sorted(os.listdir(dir_fd)):
        rel = "/".join((*parts, name))
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise _reject(f"the agent created {rel.encode('utf-8', 'backslashreplace').decode()!r}, "
                          "whose name is not UTF-8", "re-run the proposal") from None
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise _reject(f"the agent's copy holds a symlink, {rel} (a proposal may not contain links)",
                          "re-run the proposal; skill sources are plain files")
        if stat.S_ISDIR(st.st_mode):
            sub = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
            with _closing(sub):
                if os.fstat(sub).st_ino != st.st_ino:
                    raise _reject(f"{rel} changed while it was read", "re-run the proposal")
                _walk(sub, (*parts, name), out, total)
            continue
        if not stat.S_ISREG(st.st_mode):
            raise _reject(f"the agent's copy holds {rel}, which is not a regular file", "re-run the proposal")
        if st.st_nlink > 1:
            raise _reject(f"the agent's copy holds {rel}, a hard link (a proposal may not contain links)",
                          "re-run the proposal")
        if len(out) >= MAX_FILES:
            raise _reject(f"the agent's copy holds more than {MAX_FILES} files", "re-run the proposal")
        out[rel] = FileState(_read(dir_fd, name, rel, st, total), bool(st.st_mode & stat.S_IXUSR))


def _read(dir_fd: int, name: str, rel: str, st: os.stat_result, total: list[int]) -> bytes:
    if st.st_size > MAX_FILE_BYTES:
        raise _reject(f"{rel} is {st.st_size} bytes (over {MAX_FILE_BYTES})", "re-run the proposal")
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _reject(f"{rel} cannot be opened ({exc.strerror})", "re-run the proposal") from None
    with _closing(fd):
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode) or fst.st_ino != st.st_ino or fst.st_size > MAX_FILE_BYTES:
            raise _reject(f"{rel} changed while it was read", "re-run the proposal")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise _reject(f"{rel} is over {MAX_FILE_BYTES} bytes", "re-run the proposal")
            chunks.append(chunk)
    total[0] += size
    if total[0] > MAX_TOTAL_BYTES:
        raise _reject(f"the agent's copy is over {MAX_TOTAL_BYTES} bytes", "re-run the proposal")
    return b"".join(chunks)


def under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def changes(original: Mapping[str, FileState], proposed: Mapping[str, FileState], *,
            allowed: Iterable[str], protected: Iterable[str]) -> list[Change]:
    """The files that differ, after refusing any change outside `allowed` folders, under a
    `protected` one, in a `.git` folder, with an unsafe name, or to a file that is not UTF-8 text."""
    allowed, protected = list(allowed), list(protected)
    found = []
    for path in sorted(set(original) | set(proposed), key=lambda p: p.encode("utf-8")):
        old, new = original.get(path), proposed.get(path)
        if old == new:
            continue
        what = "adds" if old is None else "deletes" if new is None else "changes"
        if not any(under(path, a) for a in allowed):
            raise _reject(f"the proposal {what} {path}, outside the skill sources ({', '.join(allowed)})",
                          "only skill sources may change: fixtures, scenarios, golden, evidence and published "
                          "copies are never the agent's")
        hit = next((p for p in protected if under(path, p)), None)
        if hit is not None:
            raise _reject(f"the proposal {what} {path}, under the protected {hit}",
                          "fixtures, scenarios, golden, evidence and published copies are never the agent's")
        parts = PurePosixPath(path).parts
        if any(p.lower() == ".git" for p in parts) or not all(SAFE_NAME.fullmatch(p) and not p.endswith(" ") for p in parts):
            raise _reject(f"the proposal {what} {path!r}, a name a patch cannot carry safely",
                          "name skill files with letters, digits, '.', '-', '_' and spaces only")
        for side in (old, new):
            if side is not None and not _is_text(side.data):
                raise _reject(f"the proposal {what} {path}, which is not UTF-8 text",
                              "skill sources are text; binary files are changed by hand")
        found.append(Change(path, old, new))
    return found


def _is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _lines(data: bytes) -> list[str]:
    """Lines split at '\\n' only (str.splitlines would also split at \\r, \\x0c, \\u2028, ...)."""
    text = data.decode("utf-8")
    pieces = text.split("\n")
    lines = [p + "\n" for p in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def render(found: Iterable[Change]) -> str:
    """The unified diff of `found`, with git's headers: `git apply` from the repository root reads it."""
    out: list[str] = []
    for c in found:
        out.append(f"diff --git a/{c.path} b/{c.path}\n")
        if c.old is None:
            assert c.new is not None
            out.append(f"new file mode {c.new.mode}\n")
        elif c.new is None:
            out.append(f"deleted file mode {c.old.mode}\n")
        elif c.old.mode != c.new.mode:
            out.append(f"old mode {c.old.mode}\nnew mode {c.new.mode}\n")
        a = _lines(c.old.data) if c.old else []
        b = _lines(c.new.data) if c.new else []
        if a == b:
            continue  # a mode change, or an empty file added or deleted: the headers say it all
        out.append(f"--- {'a/' + c.path if c.old else '/dev/null'}\n")
        out.append(f"+++ {'b/' + c.path if c.new else '/dev/null'}\n")
        for line in list(difflib.unified_diff(a, b, n=CONTEXT))[2:]:  # its own ---/+++ lines are replaced above
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent",
           "XDG_CONFIG_HOME": "/nonexistent", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def verify(patch: str, found: Iterable[Change]) -> None:
    """Prove the patch: `git apply` it to a scratch repository holding the originals it touches and
    demand exactly the proposed files back (bytes and executable bit). ProposalRejected otherwise."""
    found = list(found)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, **GIT_ENV}
    with tempfile.TemporaryDirectory(prefix="skill-eval-propose-check-") as tmp:
        root = Path(tmp)
        for c in found:
            if c.old is not None:
                target = root / c.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(c.old.data)
                target.chmod(0o755 if c.old.executable else 0o644)
        try:
            subprocess.run(["git", "init", "-q", str(root)], env=env, capture_output=True, check=True, timeout=60)
            res = subprocess.run(["git", "-C", str(root), "apply", "--whitespace=nowarn", "-"], input=patch.encode("utf-8"),
                                 env=env, capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise _reject(f"the patch could not be checked with git ({exc})", "install git") from None
        if res.returncode != 0:
            tail = res.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise _reject(f"git apply refused the rendered patch: {tail[0][:300]}", "report this as a skill-eval bug")
        for c in found:
            target = root / c.path
            if c.new is None:
                ok = not target.exists()
            else:
                ok = (target.is_file() and target.read_bytes() == c.new.data
                      and bool(target.stat().st_mode & stat.S_IXUSR) == c.new.executable)
            if not ok:
                raise _reject(f"the rendered patch does not reproduce {c.path}", "report this as a skill-eval bug")
