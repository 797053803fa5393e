"""The one way skill-eval writes into a repository, and the check every configured-tree read makes.

Why one helper: `generate` runs as a pre-commit hook and `run`, `pack`, `baseline update` and
`init` write into trees a contributor controls. A symlink planted anywhere on the way
(`.agents -> /home/me`, a dangling `baselines/x.json -> /etc/...`) turned those writes into
writes — and deletions — outside the repository. Path-string checks cannot close that (the
link can be swapped between the check and the write), so writes here walk the path one
component at a time from an open descriptor of the repository root, each component opened
with O_NOFOLLOW (`openat`-style, through `dir_fd`): a symlink anywhere is refused, never
followed, and the refusal names it. Files are written atomically (temp file in the same
directory, fsync, rename, fsync of the directory); whole trees are built beside their
destination and swapped in, and removals use the descriptor-based `shutil.rmtree(dir_fd=)`
that never descends through a link.

Reads of configured trees (skills-src/ with its shared/ folder, the published trees, fixtures/,
evidence/, golden/, baselines, content files, the pack) go through `repo_path`, which refuses a
path one of whose components is a symlink leading outside the repository (the configured root
itself included), naming the link. A symlink that stays inside the repository is followed for
reading; trees that are hashed refuse every symlink anyway (hashing.walk_tree).

Every refusal is an InputError (exit 2): the repository is in a state the tool will not act on.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from skill_eval.core import memo as memo_mod
from skill_eval.core.errors import InputError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_MODE = 0o644
EXEC_MODE = 0o755
DIR_MODE = 0o755
_LINK_FIX = "replace the symlink with a real file or directory inside the repository"


def _token() -> str:
    """8 random hex digits for a temp name (what secrets.token_hex(4) gives, without importing secrets)."""
    return os.urandom(4).hex()


# ----------------------------------------------------------------------------- path arithmetic


def rel_parts(root: Path | str, path: Path | str) -> tuple[str, ...]:
    """`path` (absolute under root, or relative to it) as components; refuses `..`, `.` and leaving root.

    Purely lexical on purpose: the components are then opened one by one without following links.
    """
    root = Path(root)
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(root)
        except ValueError:
            raise InputError(f"{path} is outside the repository {root}", source=path,
                             fix="write only inside the repository") from None
    parts = tuple(part for part in p.parts if part not in ("", "."))
    if ".." in parts:
        raise InputError(f"{path} leaves the repository through '..'", source=path,
                         fix="name the path without '..'")
    return parts


def _show(root: Path | str, parts: tuple[str, ...]) -> str:
    return str(Path(root, *parts))


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _refuse_link(root: Path | str, parts: tuple[str, ...]) -> InputError:
    return InputError("is a symlink; refusing to follow it (writes never follow links)",
                      source=_show(root, parts), fix=_LINK_FIX)


@contextlib.contextmanager
def _fd(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def _open_root(root: Path | str) -> int:
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot open the repository root ({exc.strerror})", source=root) from None


def open_dir(root: Path | str, parts: tuple[str, ...], *, create: bool = False) -> int:
    """A descriptor of root/parts, reached without following any symlink (creating missing dirs).

    Returns -1 when a component is missing and `create` is false. The caller closes the fd.
    """
    return open_from(_open_root(root), parts, create, root)


def open_from(fd: int, parts: tuple[str, ...], create: bool, shown_root: Path | str) -> int:
    """Descend from fd (consumed: pass a dup to keep yours) through parts, one O_NOFOLLOW open per component.

    -1 when a component is missing and `create` is false; shown_root names paths in errors.
    """
    try:
        for i, part in enumerate(parts):
            try:
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return -1
                try:
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                except FileExistsError:
                    pass  # raced with another writer, or a dangling link: the open below decides
                try:
                    nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _component_error(shown_root, parts[: i + 1], fd, exc) from None
            except OSError as exc:
                raise _component_error(shown_root, parts[: i + 1], fd, exc) from None
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def _component_error(root: Path | str, parts: tuple[str, ...], parent_fd: int, exc: OSError) -> InputError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST, errno.ENOENT) and _is_link(parts[-1], parent_fd):
        return _refuse_link(root, parts)
    if exc.errno == errno.ENOTDIR:
        return InputError("is not a directory", source=_show(root, parts), fix="remove or rename it")
    return InputError(f"cannot open ({exc.strerror})", source=_show(root, parts))


# ----------------------------------------------------------------------------- writing


def _write_at(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """Atomically replace dir_fd/name with data: temp + fsync + rename + directory fsync."""
    tmp = f".{name[:80]}.tmp-{os.getpid()}-{_token()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        with _fd(fd):
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
            os.fsync(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


def _check_target(root: Path | str, parts: tuple[str, ...], dir_fd: int, *, want_dir: bool = False) -> bool:
    """Whether the final component exists; refuses a symlink (dangling or not) or the wrong kind."""
    try:
        st = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise _refuse_link(root, parts)
    if want_dir and not stat.S_ISDIR(st.st_mode):
        raise InputError("exists and is not a directory; refusing to replace it", source=_show(root, parts))
    if not want_dir and not stat.S_ISREG(st.st_mode):
        raise InputError("exists and is not a regular file; refusing to replace it", source=_show(root, parts))
    return True


def write_file(root: Path | str, path: Path | str, data: bytes | str, *, mode: int | None = None) -> Path:
    """Write one file under root atomically, never through a symlink; returns root/path."""
    parts = rel_parts(root, path)
    if not parts:
        raise InputError("is the repository root, not a file", source=path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        with _fd(open_dir(root, parts[:-1], create=True)) as dir_fd:
            _check_target(root, parts, dir_fd)
            _write_at(dir_fd, parts[-1], data, FILE_MODE if mode is None else mode)
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"cannot be written ({exc.strerror})", source=_show(root, parts)) from None
    return Path(root, *parts)


def write_output(path: Path | str, data: bytes | str) -> Path:
    """Write a user-chosen output file (`--out`, possibly outside any repository) atomically.

    The directory is the one the user named (created if missing); the final component is
    never followed if it is a symlink, and a temp file + rename means a reader never sees half
    a stage, report or scorecard.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _fd(os.open(path.parent, DIR_FLAGS & ~os.O_NOFOLLOW)) as dir_fd:
            _check_target(path.parent, (path.name,), dir_fd)
            _write_at(dir_fd, path.name, data, FILE_MODE)
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"cannot be written ({exc.strerror})", source=path,
                         fix="choose a writable output directory") from None
    return path


def read_file(root: Path | str, path: Path | str) -> bytes | None:
    """The bytes of root/path read without following any symlink; None when it does not exist."""
    parts = rel_parts(root, path)
    dir_fd = open_dir(root, parts[:-1])
    if dir_fd < 0:
        return None
    with _fd(dir_fd):
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            if _is_link(parts[-1], dir_fd):
                raise _refuse_link(root, parts) from None
            return None
        except OSError as exc:
            raise _component_error(root, parts, dir_fd, exc) from None
        with _fd(fd), os.fdopen(os.dup(fd), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError("is not a regular file", source=_show(root, parts))
            return fh.read()


def _make_tree(dir_fd: int, files: Mapping[str, tuple[bytes, int]], display: str) -> None:
    for rel in sorted(files):
        data, mode = files[rel]
        sub = rel_parts(display, rel)
        if not sub:
            raise InputError(f"empty file name in tree {display}")
        with _fd(open_from(os.dup(dir_fd), sub[:-1], True, display)) as fd:
            _write_at(fd, sub[-1], data, mode)


def replace_dir(root: Path | str, path: Path | str, files: Mapping[str, bytes | tuple[bytes, int]]) -> Path:
    """Make root/path exactly `files` (rel -> bytes or (bytes, mode)): built beside it, then swapped in.

    Nothing on the way, and not the directory itself, may be a symlink; the old tree is removed
    without following links. A crash leaves the old or the new tree (for the instant between the two
    renames, only the dot-named old one) plus dot-named leftovers, never a mixture of the two.
    """
    parts = rel_parts(root, path)
    if not parts:
        raise InputError("refusing to replace the repository root", source=root)
    norm = {rel: (v, FILE_MODE) if isinstance(v, bytes) else v for rel, v in files.items()}
    name = parts[-1]
    try:
        with _fd(open_dir(root, parts[:-1], create=True)) as parent:
            exists = _check_target(root, parts, parent, want_dir=True)
            tmp = f".{name}.tmp-{os.getpid()}-{_token()}"
            os.mkdir(tmp, DIR_MODE, dir_fd=parent)
            try:
                with _fd(os.open(tmp, DIR_FLAGS, dir_fd=parent)) as tfd:
                    _make_tree(tfd, norm, _show(root, parts))
                old = None
                if exists:
                    old = f".{name}.old-{os.getpid()}-{_token()}"
                    os.rename(name, old, src_dir_fd=parent, dst_dir_fd=parent)
                try:
                    os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
                except OSError:
                    if old is not None:  # put the old tree back rather than leave nothing
                        os.rename(old, name, src_dir_fd=parent, dst_dir_fd=parent)
                    raise
                os.fsync(parent)
                if old is not None:
                    _rmtree(old, parent)
            finally:
                with contextlib.suppress(OSError):
                    _rmtree(tmp, parent)
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"cannot be written ({exc.strerror})", source=_show(root, parts)) from None
    return Path(root, *parts)


def _rmtree(name: str, dir_fd: int) -> None:
    """shutil.rmtree(name, dir_fd=dir_fd), importing shutil only here (~2 ms with its compression
    modules, which no reading check needs)."""
    import shutil

    shutil.rmtree(name, dir_fd=dir_fd)


def remove_tree(root: Path | str, path: Path | str) -> bool:
    """Remove root/path (file or directory) without following any link; False if it was absent.

    A symlink at the path or on the way is refused, not unlinked: it is the contributor's to fix.
    """
    parts = rel_parts(root, path)
    if not parts:
        raise InputError("refusing to remove the repository root", source=root)
    parent = open_dir(root, parts[:-1])
    if parent < 0:
        return False
    with _fd(parent):
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(st.st_mode):
            raise _refuse_link(root, parts)
        if stat.S_ISDIR(st.st_mode):
            _rmtree(parts[-1], parent)
        else:
            os.unlink(parts[-1], dir_fd=parent)
        os.fsync(parent)
    return True


def rename_within(root: Path | str, src: Path | str, dst: Path | str) -> None:
    """Rename root/src to root/dst (same parent or not), reaching both without following links."""
    sp, dp = rel_parts(root, src), rel_parts(root, dst)
    if not sp or not dp:
        raise InputError("refusing to rename the repository root", source=root)
    sfd = open_dir(root, sp[:-1])
    if sfd < 0:
        raise InputError("does not exist", source=_show(root, sp))
    with _fd(sfd), _fd(open_dir(root, dp[:-1], create=True)) as dfd:
        if _is_link(sp[-1], sfd):
            raise _refuse_link(root, sp)
        os.rename(sp[-1], dp[-1], src_dir_fd=sfd, dst_dir_fd=dfd)
        os.fsync(dfd)


# ----------------------------------------------------------------------------- reading


def within(root: Path | str, path: Path | str) -> Path | None:
    """`path` (relative paths taken from `root`) relative to `root` when it lies lexically inside the
    repository (root itself: `.`), else None: a path outside it is a user's explicit choice."""
    full, base = Path(os.path.abspath(Path(root) / path)), Path(os.path.abspath(root))
    return full.relative_to(base) if full == base or base in full.parents else None


def state_dir() -> Path:
    """Where skill-eval keeps its own state, outside every repository: `$XDG_STATE_HOME/skill-eval`
    (default ~/.local/state/skill-eval): crash logs, run locks."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "skill-eval"


def repo_path(root: Path | str, path: Path | str) -> Path:
    """root/path, after refusing any component that is a symlink leading outside the repository.

    The check walks the components from the repository root (lstat each, resolve a link and
    compare with the resolved root), so a symlinked configured root (`skills-src -> /elsewhere`)
    and a symlinked folder deep inside one (`skills-src/shared/x -> /elsewhere`) are both named.
    Missing components end the walk: the reader reports the missing file itself.

    Inside one check (`memo.sharing()`, during which nothing on disk changes) a path whose every
    component exists is checked once: `pr` asks for the same ~50 paths ~160 times.
    """
    shared = memo_mod.shared_memo()
    key = ("repo_path", os.fspath(root), os.fspath(path))
    if shared is not None and key in shared:
        hit: Path = shared[key]
        return hit
    root = Path(root)
    parts = rel_parts(root, path)
    real_root = root.resolve()
    cur = root
    whole = True
    for part in parts:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except OSError:
            whole = False  # a missing component: asked again next time (it may be created in between)
            break
        if stat.S_ISLNK(st.st_mode):
            _refuse_escaping(os.fspath(cur), real_root)
    out = root.joinpath(*parts)
    if shared is not None and whole:
        shared[key] = out
    return out


class Missing:
    """`open_plain`'s answer for a file that does not exist (while every directory above it does)."""


MISSING = Missing()


def open_plain(path: str, max_bytes: int) -> bytes | Missing | None:
    """The bytes of the regular file at `path` in one open + fstat + read, `MISSING` when it does not
    exist, or None for anything a careful reader must look at and word (a symlink: O_NOFOLLOW fails
    the open; a FIFO: O_NONBLOCK keeps it from hanging; not a file, over `max_bytes`, unreadable,
    short or grown while read). The bundle readers' common case (bundle._fast_read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return MISSING
    except OSError:
        return None
    return read_open(fd, max_bytes)


def read_open(fd: int, max_bytes: int) -> bytes | None:
    """The bytes of an open regular file within the cap, or None (the careful path then decides and
    words the refusal: not a file, too large, short or grown while read). Closes fd."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        data = os.read(fd, st.st_size + 1)
        return data if len(data) == st.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _refuse_escaping(link: str, real_root: Path) -> None:
    """Raise the refusal for a symlink at `link` that leads outside `real_root` or cannot be resolved (a loop)."""
    try:
        target = Path(link).resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError for a symlink loop
        raise InputError(f"is a symlink to {os.readlink(link)} that cannot be resolved (a symlink loop); refused",
                         source=Path(link), fix=_LINK_FIX) from None
    if target != real_root and real_root not in target.parents:
        raise InputError(f"is a symlink to {os.readlink(link)}, outside the repository; refused",
                         source=Path(link), fix=_LINK_FIX)


def repo_tree(root: Path | str, path: Path | str) -> Path:
    """repo_path for a whole tree: also refuses any symlink *inside* it that leads outside the repository.

    For trees that are scanned rather than hashed (evidence/, golden/), where a linked bundle
    directory would otherwise just look missing, or be read from outside.
    """
    return scan_tree(root, path)[0]


def scan_tree(root: Path | str, path: Path | str, collect: str | None = None) -> tuple[Path, list[str]]:
    """repo_tree, plus (in the same walk) every entry named `collect` below the tree, as path strings.

    Why one walk with os.scandir: the evidence gate checks the tree for escaping symlinks and then
    lists its meta.json files; with os.walk + Path.is_symlink + rglob that was two walks and three
    syscalls per entry over thousands of bundles, here it is one walk and the directory entry's own
    type (a syscall only for the rare symlink). Collected like `Path.rglob(collect)`: any entry with
    that name, found without descending into symlinked directories.
    """
    return _walk(root, path, collect)


def _walk(root: Path | str, path: Path | str, collect: str | None) -> tuple[Path, list[str]]:
    """scan_tree's walk: every directory below `path`, in sorted preorder."""
    top = repo_path(root, path)
    found: list[str] = []
    if top.is_dir():
        _walk_from([(os.fspath(top), 0)], Path(root).resolve(), collect, found, None, None, ordered=True)
    return top, found


def scan_top(root: Path | str, path: Path | str, collect: str, depth: int) -> tuple[Path, list[str], list[str]]:
    """scan_tree's walk stopped `depth` levels below `path`: (top, the entries named `collect` it met,
    the directories one level further down, not entered).

    With `scan_below` over each of those directories it visits every entry scan_tree visits and
    refuses every escaping symlink scan_tree refuses (perhaps another one first: a caller that words
    a refusal re-runs scan_tree, which names the one it meets first). Why two halves: the evidence
    pass hands the bundle directories (depth 5) to its workers, which scan each one just before
    grading it, on every core, instead of waiting for one walk of the whole tree."""
    top = repo_path(root, path)
    found: list[str] = []
    below: list[str] = []
    if top.is_dir():
        _walk_from([(os.fspath(top), 0)], Path(root).resolve(), collect, found, below, depth, ordered=False)
    return top, found, below


def scan_below(real_root: Path, directory: str, collect: str, links: list[str] | None = None,
               names: set[str] | None = None, files: list[str] | None = None) -> list[str]:
    """The rest of scan_tree's walk from one directory `scan_top` returned (`real_root`: the resolved
    repository root): the entries named `collect` at any depth below it, unordered. `links` (if
    given) gets every symlink met (those staying inside the repository: the others are refused);
    `names` the names of `directory`'s own entries; `files` the paths of the regular files met
    (by the directory entry's own type: never a symlink, never below one)."""
    found: list[str] = []
    try:  # what scan_top saw may have changed since (the gate selects the suite in between): look again
        st = os.lstat(directory)
    except OSError:
        return found  # gone, or unreadable: nothing listed, as the walk lists nothing of an unreadable directory
    if stat.S_ISLNK(st.st_mode):  # now a symlink: refused if it leads outside, else not entered (as scan_tree)
        _refuse_escaping(directory, real_root)
        if links is not None:
            links.append(directory)
        return found
    if stat.S_ISDIR(st.st_mode):
        _walk_below(directory, real_root, collect, found, links, names, files)
    return found


def _walk_below(top: str, real_root: Path, collect: str, found: list[str], links: list[str] | None,
                names: set[str] | None, files: list[str] | None = None) -> None:
    """`_walk_from` without depth, order or listing of what lies below (scan_below's case, once per
    bundle directory on every core: ~30 % fewer steps per entry). Visits the same entries and
    refuses the same links."""
    stack = [top]
    first = names
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = list(it)
        except OSError:
            continue  # os.walk skipped unreadable directories too (and one whose listing fails part-way)
        for entry in entries:
            if first is not None:
                first.add(entry.name)
            if entry.is_symlink():
                _refuse_escaping(entry.path, real_root)
                if links is not None:
                    links.append(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif files is not None and entry.is_file(follow_symlinks=False):
                files.append(entry.path)
            if entry.name == collect:
                found.append(entry.path)
        first = None


def _walk_from(stack: list[tuple[str, int]], real_root: Path, collect: str | None, found: list[str],
               below: list[str] | None, depth: int | None, *, ordered: bool) -> None:
    """The walker of scan_tree / scan_top (scan_below has its own, `_walk_below`): scandir each directory
    on `stack`, refuse an entry that is a symlink leading outside `real_root`, collect entries named
    `collect` (without entering symlinked directories, like Path.rglob), and enter subdirectories — or,
    below `depth`, list them in `below` instead. `ordered`: entries sorted (scan_tree's preorder)."""
    while stack:
        here, level = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name) if ordered else list(it)
        except OSError:
            continue  # os.walk skipped unreadable directories too
        subdirs = []
        for entry in entries:
            if entry.is_symlink():
                _refuse_escaping(entry.path, real_root)
            elif entry.is_dir(follow_symlinks=False):
                if depth is not None and level == depth and below is not None:
                    below.append(entry.path)
                else:
                    subdirs.append((entry.path, level + 1))
            if collect is not None and entry.name == collect:
                found.append(entry.path)
        stack.extend(reversed(subdirs))
