"""How a bundle's files lie on disk: compact evidence with every byte kept (issue 26 item 3).

A bundle's *logical* files are the ones the recorder wrote and sealed (`raw/stream.jsonl`,
`captured/1.out.d/0/report.json`, ...). Every digest — the seal's, calls.jsonl's, facts.json's — is
over those logical bytes. On disk a logical file takes one of three forms:

  plain    the file itself (what the recorder writes; what every bundle had before compaction);
  gzip     `<rel>.gz`, the logical bytes gzip-compressed (mtime 0, no name: the same bytes give the
           same file) — the agent's raw streams under `raw/`, kept for review, never graded;
  object   listed in the bundle's `objects.json` (`{"schema_version": 1, "files": {rel: sha256}}`);
           its bytes, gzip-compressed, live once in the evidence tree's content store
           `<evidence>/.objects/<sha[:2]>/<sha>.gz`, shared by every bundle that captured the same
           bytes — the subject's captured outputs (`captured/`) and facts blobs (`facts/blobs/`).

Why: a real agent's bundle is mostly its raw stream and the subject's reports, and the same report is
captured by every repeat of a scenario: ~51 KB per bundle on this repository, ~6 GB of git for the
15,000 runs of a large matrix. Why it stays evidence: nothing in `objects.json` or the store is
trusted. An object is read only through its digest (the bytes must hash to their name, checked on
every read, once per process), a listed digest must equal the seal's for that path, and a path both
plain and stored is refused. Compaction therefore never invalidates a seal: the signature is over the
logical files, which compaction does not change.

`compact` and `expand` convert a bundle in place, idempotently (an interrupted compaction leaves the
bundle readable and the next run finishes it). Files are created with O_EXCL/O_NOFOLLOW and renamed
into place; nothing follows a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skill_eval.core import fsio, schemas, strict
from skill_eval.core.errors import InputError

INDEX = "objects.json"
STORE = ".objects"
GZ = ".gz"
COMPRESSED = ("raw/",)  # logical prefixes stored gzip-compressed in the bundle
SHARED = ("captured/", "facts/blobs/")  # logical prefixes stored once in the content store
MIN_COMPRESS = 256  # smaller files stay plain: gzip's header would outweigh the saving
INDEX_VERSION = 1
MAX_INDEX_BYTES = 1 << 22
_SHA = re.compile("[0-9a-f]{64}")
TREE_DEPTH = 5  # a bundle lies at <evidence>/<skill|trigger>/<arm>/<run-id>/<item>/<k>: its store is <evidence>/.objects
Form = Literal["plain", "gzip", "object"]


@dataclass(frozen=True)
class Source:
    """Where one logical file's bytes are: a path (plain or gzip), or a digest in the store."""

    form: Form
    path: str | None = None
    sha256: str | None = None


class StoredError(InputError):
    """A stored form that cannot be trusted (bad index, missing or altered object, a path stored twice)."""


# ----------------------------------------------------------------------------- reading


def gunzip(data: bytes, max_bytes: int, where: str) -> bytes:
    """Decompress, refusing more than `max_bytes` of output (a small gzip can expand without bound)."""
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise StoredError(f"is not valid gzip ({exc})", source=where, fix="re-run `skill-eval evidence compact`") from None
    if len(out) > max_bytes or d.unconsumed_tail:
        raise StoredError(f"expands to more than {max_bytes} bytes", source=where)
    if not d.eof or d.unused_data:
        raise StoredError("is a truncated or concatenated gzip stream", source=where, fix="re-run `skill-eval evidence compact`")
    return out


def _read(path: str, max_bytes: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoredError("is a symbolic link, not a regular file", source=path) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StoredError(f"is {_kind(mode)}, not a regular file", source=path)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise StoredError(f"is larger than {max_bytes} bytes", source=path)
    return data


_store_of: dict[str, str | None] = {}
_verified: dict[str, int] = {}  # object path -> its verified logical size (this process checked it hashes to its name)
_bytes: dict[str, bytes] = {}  # object path -> its verified logical bytes, up to CACHE_BYTES in all
_cached_total = 0
_indexes: dict[str, tuple[tuple[int, int, int, int], dict[str, str]]] = {}  # objects.json path -> (its stat key, its files)
CACHE_BYTES = 64 << 20


def tree_of(bundle: Path | str) -> str:
    """The evidence tree a bundle lies in: TREE_DEPTH levels above it (<skill|trigger>/<arm>/<run-id>/<item>/<k>)."""
    here = os.path.normpath(os.path.abspath(os.fspath(bundle)))
    for _ in range(TREE_DEPTH):
        here = os.path.dirname(here)
    return here


def store_of(bundle: Path | str) -> str | None:
    """The content store serving a bundle: exactly `<evidence>/.objects` of the evidence tree it lies in
    (TREE_DEPTH levels up), a directory and not a link; None when there is none. Never looked for elsewhere:
    a stray `.objects` nearer the bundle is not a store (issue 34: it made every bundle below it "missing")."""
    tree = tree_of(bundle)
    if tree in _store_of:
        return _store_of[tree]
    found: str | None = None
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(f"{tree}/{STORE}").st_mode):
            found = f"{tree}/{STORE}"
    _store_of[tree] = found
    return found


def object_path(store: str, sha: str) -> str:
    return f"{store}/{sha[:2]}/{sha}{GZ}"


def read_object(store: str | None, sha: str, max_bytes: int, rel: str) -> bytes:
    """The logical bytes of a stored object, verified against its digest."""
    if store is None:
        raise StoredError(f"is in the content store ({STORE}/), which is missing", source=rel,
                          fix=f"copy the evidence tree's {STORE}/ with the bundles (`skill-eval evidence merge` does)")
    path = object_path(store, sha)
    cached = _bytes.get(path)
    if cached is not None and len(cached) <= max_bytes:
        return cached
    try:
        data = gunzip(_read(path, max_bytes), max_bytes, path)
    except FileNotFoundError:
        raise StoredError(f"object {sha[:12]} is missing from {store}", source=rel,
                          fix=f"copy the evidence tree's {STORE}/ with the bundles") from None
    except OSError as exc:
        raise StoredError(f"object {sha[:12]} in {store} cannot be read ({exc.strerror})", source=rel,
                          fix="restore the evidence tree's .objects/ from git") from None
    if path not in _verified:
        if hashlib.sha256(data).hexdigest() != sha:
            raise StoredError(f"object {sha[:12]} in {STORE}/ does not hash to its name (altered)", source=rel,
                              fix="restore it from git, or re-run `skill-eval evidence compact` on an intact copy")
        _verified[path] = len(data)
    global _cached_total
    if _cached_total + len(data) <= CACHE_BYTES:  # the same report is read by every repeat that captured it
        _bytes[path] = data
        _cached_total += len(data)
    return data


def index_of(bundle: Path | str) -> dict[str, str]:
    """The bundle's objects.json (rel -> sha256); {} when the bundle has none. Strict."""
    path = f"{os.fspath(bundle)}/{INDEX}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StoredError(f"cannot be read ({exc.strerror})", source=path) from None
    try:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        hit = _indexes.get(path)
        if hit is not None and hit[0] == key:  # the seal check and the graders read one bundle's index in turn
            return hit[1]
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_INDEX_BYTES:
            raise StoredError("is not a regular file within the size cap", source=path)
        data = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
    finally:
        os.close(fd)
    value = strict.loads_json(strict.decode_utf8(data, path), path)
    if not isinstance(value, dict) or type(value.get("schema_version")) is not int or not isinstance(value.get("files"), dict):
        raise StoredError('is not {"schema_version": 1, "files": {path: sha256}}', source=path,  # (true is not 1)
                          fix="re-run `skill-eval evidence compact`")
    files: dict[str, str] = value["files"]
    for rel, sha in files.items():  # worded per path; then the schema (schemas/objects_index.schema.json) whole
        if not _plain(rel) or not rel.startswith(SHARED) or not (isinstance(sha, str) and _SHA.fullmatch(sha)):
            raise StoredError(f"lists {rel!r}: not a shared path with a sha256", source=path, field=f"files.{rel}",
                              fix="re-run `skill-eval evidence compact`")
    schemas.validate(value, "objects_index", path)
    if len(_indexes) > 4096:
        _indexes.clear()
    _indexes[path] = (key, files)
    return files


def _plain(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and "\x00" not in rel and "\\" not in rel and not rel.startswith("/") and \
        "" not in parts and "." not in parts and ".." not in parts


def read(bundle: Path | str, rel: str, max_bytes: int) -> bytes | None:
    """The logical bytes of `rel` when it is stored compactly (gzip or object); None when it is not
    (then it is plain, or missing). Raises StoredError for a stored form that fails its checks."""
    base = os.fspath(bundle)
    if rel.startswith(COMPRESSED) and _plain(rel):
        try:
            return gunzip(_read(f"{base}/{rel}{GZ}", max_bytes), max_bytes, f"{base}/{rel}{GZ}")
        except FileNotFoundError:
            pass
    if rel.startswith(SHARED) and _plain(rel):
        sha = index_of(base).get(rel)
        if sha is not None:
            return read_object(store_of(base), sha, max_bytes, rel)
    return None


def logical(files: dict[str, str], bundle: Path | str) -> dict[str, Source] | str:
    """Map a bundle's physical files (rel -> absolute path, as seal._files lists them) to its logical
    files, or say why the layout is invalid (a path both plain and stored)."""
    out: dict[str, Source] = {}
    for rel, full in files.items():
        if rel == INDEX:
            continue
        if rel.endswith(GZ) and rel.startswith(COMPRESSED):
            name = rel[: -len(GZ)]
            if name in files:
                return f"{name} is stored twice (plain and {GZ})"
            out[name] = Source("gzip", full)
        else:
            out[rel] = Source("plain", full)
    if INDEX in files:
        try:
            index = index_of(bundle)
        except InputError as exc:
            return str(exc)
        for rel, sha in index.items():
            if rel in out:
                return f"{rel} is stored twice (in the bundle and in {STORE}/)"
            out[rel] = Source("object", sha256=sha)
    return out


def sha256_of(src: Source, bundle: Path | str, rel: str, max_bytes: int = strict.MAX_FILE_BYTES) -> str:
    """The sha256 of a logical file's bytes (an object: its verified name)."""
    if src.form == "object":
        assert src.sha256 is not None
        store = store_of(bundle)
        if store is None or object_path(store, src.sha256) not in _verified:
            read_object(store, src.sha256, max_bytes, rel)
        return src.sha256
    assert src.path is not None
    data = _read(src.path, max_bytes)
    return hashlib.sha256(gunzip(data, max_bytes, src.path) if src.form == "gzip" else data).hexdigest()


# ----------------------------------------------------------------------------- the store's own contents


@dataclass
class Audit:
    """What an evidence tree's `.objects/` holds: every well-formed object (sha256 -> path), and every entry
    that is not one (a link, FIFO, device, socket, a directory where an object belongs, a misnamed file)."""

    objects: dict[str, str]
    problems: list[str]

    def unreferenced(self, referenced: set[str]) -> list[str]:
        """Objects no bundle's objects.json lists (paths, sorted): bytes in the evidence tree nothing grades."""
        return sorted(path for sha, path in self.objects.items() if sha not in referenced)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def audit(store: str) -> Audit:
    """Every entry of a content store, read without following a link (lstat only, nothing opened): objects
    are exactly `<sha[:2]>/<sha>.gz` regular files; anything else is named as a problem."""
    out = Audit({}, [])
    try:
        st = os.lstat(store)
    except FileNotFoundError:
        return out
    if not stat.S_ISDIR(st.st_mode):
        out.problems.append(f"{store} is {_kind(st.st_mode)}, not the content store's directory")
        return out
    with os.scandir(store) as top:
        shards = sorted(top, key=lambda e: e.name)
    for shard in shards:
        mode = os.lstat(shard.path).st_mode
        if not stat.S_ISDIR(mode) or not re.fullmatch("[0-9a-f]{2}", shard.name):
            what = _kind(mode) if not stat.S_ISREG(mode) else "a file"
            out.problems.append(f"{shard.path} is {what} where only <sha[:2]>/ directories belong")
            continue
        with os.scandir(shard.path) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            mode = os.lstat(e.path).st_mode
            sha = e.name[: -len(GZ)] if e.name.endswith(GZ) else ""
            if not stat.S_ISREG(mode):
                out.problems.append(f"{e.path} is {_kind(mode)}, not an object file")
            elif not (_SHA.fullmatch(sha) and sha.startswith(shard.name)) and not _is_temp(e.name):
                out.problems.append(f"{e.path} is not named <sha256>.gz under its first two hex digits")
            else:
                out.objects[sha or e.path] = e.path  # an interrupted write's temp file: unreferenced, never read
    return out


# ----------------------------------------------------------------------------- converting


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip: the same logical bytes always give the same stored file."""
    import gzip  # compaction only: reading needs zlib alone

    return gzip.compress(data, compresslevel=9, mtime=0)


def _atomic_write(path: str, data: bytes) -> None:
    """The project's one atomic writer (temp + fsync + rename, never through a link at the target)."""
    fsio.write_output(path, data)


def _is_temp(rel: str) -> bool:
    """fsio's temp file name (`.<name>.tmp-<pid>-<token>`), left by a write a crash interrupted."""
    name = rel.rsplit("/", 1)[-1]
    return name.startswith(".") and ".tmp-" in name


def files_of(root: Path | str) -> dict[str, str] | str:
    """Every regular file below a bundle (relative path -> absolute path), or why the tree cannot be read
    as a bundle (a symlink or special file). One scandir per directory, entry types from the listing (no
    stat per file): the seal's walk (core.seal) and compaction's."""
    out: dict[str, str] = {}
    stack = [(os.fspath(root), "")]
    while stack:
        here, prefix = stack.pop()
        with os.scandir(here) as it:
            for e in it:
                rel = prefix + e.name
                if e.is_symlink():
                    return f"{rel} is not a regular file (a symbolic link)"
                if e.is_dir(follow_symlinks=False):
                    stack.append((e.path, rel + "/"))
                elif e.is_file(follow_symlinks=False):
                    out[rel] = e.path
                else:
                    return f"{rel} is not a regular file"
    return out


def _walk(bundle: str) -> dict[str, str]:
    """files_of, raising: compaction refuses a bundle holding a link or a special file."""
    files = files_of(bundle)
    if isinstance(files, str):
        raise StoredError(files, source=bundle)
    return dict(sorted(files.items()))


def put_object(store: str, data: bytes) -> str:
    """Store `data` once by content; returns its sha256."""
    sha = hashlib.sha256(data).hexdigest()
    path = object_path(store, sha)
    if os.path.lexists(path):  # already stored: trusted only if it still holds these bytes, else replaced
        try:
            if gunzip(_read(path, len(data)), len(data), path) == data:
                return sha
        except (OSError, InputError):
            pass
        if os.path.isdir(path) and not os.path.islink(path):
            raise StoredError("is a directory where an object belongs", source=path, fix="remove it, then compact again")
        _verified.pop(path, None)
        _bytes.pop(path, None)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _atomic_write(path, gzip_bytes(data))
    return sha


@dataclass
class Saved:
    """What a compaction changed: logical bytes seen, bytes on disk before and after (the bundle only)."""

    before: int = 0
    after: int = 0
    objects: int = 0


def compact(bundle: Path | str, store: str, max_bytes: int = strict.MAX_FILE_BYTES) -> Saved:
    """Convert a bundle in place: raw streams gzip, shared artifacts into `store`. Idempotent."""
    base = os.fspath(bundle)
    saved = Saved()
    files = _walk(base)
    index = dict(index_of(base)) if INDEX in files else {}
    saved.before = sum(os.lstat(f).st_size for f in files.values())
    to_remove: list[str] = []
    for rel, full in sorted(files.items()):
        if rel == INDEX:
            continue
        if _is_temp(rel):  # an interrupted write of ours (fsio's temp name): never evidence, gone
            os.unlink(full)
            continue
        if rel.startswith(SHARED):
            data = _read(full, max_bytes)
            sha = put_object(store, data)
            if index.get(rel, sha) != sha:
                raise StoredError(f"{rel} differs from the object {INDEX} lists for it", source=base,
                                  fix="restore the bundle from git")
            index[rel] = sha
            saved.objects += 1
            to_remove.append(full)
        elif rel.startswith(COMPRESSED) and not rel.endswith(GZ) and os.lstat(full).st_size >= MIN_COMPRESS:
            data = _read(full, max_bytes)
            gz = f"{full}{GZ}"
            if os.path.lexists(gz):
                if gunzip(_read(gz, max_bytes), max_bytes, gz) != data:
                    raise StoredError(f"{rel} and {rel}{GZ} differ", source=base, fix="restore the bundle from git")
            else:
                _atomic_write(gz, gzip_bytes(data))
            to_remove.append(full)
    if index:
        _atomic_write(f"{base}/{INDEX}", (json.dumps({"schema_version": INDEX_VERSION, "files": dict(sorted(index.items()))},
                                                     indent=0, sort_keys=True) + "\n").encode())
    for full in to_remove:  # only once every stored form is written and renamed into place
        os.unlink(full)
    _prune_dirs(base)
    saved.after = sum(os.lstat(f).st_size for f in _walk(base).values())
    return saved


def expand(bundle: Path | str, max_bytes: int = strict.MAX_FILE_BYTES) -> None:
    """The inverse of `compact`: every logical file plain again (to hand a bundle to a tool that reads files)."""
    base = os.fspath(bundle)
    files = _walk(base)
    index = index_of(base) if INDEX in files else {}
    store = store_of(base) if index else None
    for rel, sha in sorted(index.items()):
        path = f"{base}/{rel}"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.lexists(path):
            _atomic_write(path, read_object(store, sha, max_bytes, rel))
    for rel, full in sorted(files.items()):
        if rel.endswith(GZ) and rel.startswith(COMPRESSED):
            plain = full[: -len(GZ)]
            if not os.path.lexists(plain):
                _atomic_write(plain, gunzip(_read(full, max_bytes), max_bytes, full))
            os.unlink(full)
    if INDEX in files:
        os.unlink(f"{base}/{INDEX}")


def _prune_dirs(base: str) -> None:
    """Remove directories compaction emptied (deepest first), never the bundle itself."""
    for dirpath, _dirs, _files in os.walk(base, topdown=False):
        if dirpath != base:
            with contextlib.suppress(OSError):  # not empty: kept
                os.rmdir(dirpath)


def materialize(src: Path | str, dest: Path | str, max_bytes: int = strict.MAX_FILE_BYTES) -> None:
    """Copy a bundle with every logical file plain (a bundle copied out of its evidence tree leaves the
    content store behind). `dest` must not exist; the seal, if any, still verifies at a path it names."""
    base, out = os.fspath(src), os.fspath(dest)
    sources = logical(_walk(base), base)
    if isinstance(sources, str):
        raise StoredError(sources, source=base)
    os.makedirs(out)
    for rel, s in sorted(sources.items()):
        if s.form == "object":
            assert s.sha256 is not None
            data = read_object(store_of(base), s.sha256, max_bytes, rel)
        else:
            assert s.path is not None
            data = _read(s.path, max_bytes)
            data = gunzip(data, max_bytes, s.path) if s.form == "gzip" else data
        os.makedirs(os.path.dirname(f"{out}/{rel}"), exist_ok=True)
        fd = os.open(f"{out}/{rel}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
