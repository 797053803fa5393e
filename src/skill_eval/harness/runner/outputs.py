"""Which outputs a subject call names, where the recorder redirects them, and how the private
paths are mapped back in the streams (DESIGN §7; moved here from the old in-sandbox shim).

Every output path a call names is redirected to a per-call private location in the recorder's
store, which becomes the call's immutable snapshot, then copied back: a later call reusing the
path (or a failed call writing nothing) is never confused with it. The only edit to the streams
is the private path mapped back to the requested one, counted so the difference is auditable.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
from dataclasses import dataclass
from typing import Any

# The only functions that touch files: the copy-back of a produced output (tests/harness/test_input_accessor.py).
FILE_IO_HELPERS = ("_copy_artifact", "_open_target")


class CopyBackRefused(Exception):  # noqa: N818 - the recorder words it as the call's recording failure
    """A produced output could not be copied back into the agent's tree without leaving it (a link or
    a non-directory on the way) or without writing into something that is not a regular file."""
FORMAT_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*")


@dataclass(frozen=True)
class OutputOptions:
    """The subject profile's output options (a SubjectProfile or anything with these fields)."""

    format_dest_options: tuple[str, ...] = ()
    path_options: tuple[str, ...] = ()
    directory_options: tuple[str, ...] = ()
    stdout_token: str = "-"  # noqa: S105 - the stdout marker, not a secret

    @classmethod
    def of(cls, profile: Any) -> OutputOptions:
        return cls(tuple(getattr(profile, "format_dest_options", ())), tuple(getattr(profile, "path_options", ())),
                   tuple(getattr(profile, "directory_options", ())), str(getattr(profile, "stdout_token", "-")))


@dataclass
class OutputRequest:
    """One output the call names: where the agent asked for it and where the child really writes.

    arg_index/prefix say how to rewrite argv (the token at arg_index becomes prefix + private);
    effective is the store-relative private location (it is the snapshot when the call produced
    something); target is the absolute copy-back destination.
    """

    arg_index: int
    prefix: str
    option: str
    format: str | None
    requested: str
    kind: str
    effective: str | None = None
    private: str | None = None
    target: str | None = None

def _classify(value: str, style: str, cfg: OutputOptions, cwd: str) -> tuple[str | None, str, str] | None:
    """Split an option value into (format, dest, kind), or None when it names no output path."""
    fmt: str | None = None
    dest = value
    if style == "format_dest":
        head, sep, tail = value.partition("=")
        if sep and FORMAT_RE.fullmatch(head):
            fmt, dest = head, tail
        # no FORMAT= part: an older path-style use of the same option (e.g. `dump -o snap.json`)
    if not dest:
        return None
    if dest == cfg.stdout_token:
        return fmt, dest, "stdout"
    if style == "directory" or dest.endswith("/"):
        return fmt, dest, "dir"
    if style == "format_dest" and os.path.isdir(os.path.join(cwd, dest)):
        return fmt, dest, "dir"  # abicheck: a DEST naming an existing directory is a per-component export
    return fmt, dest, "file"


def parse_outputs(argv: list[str], cfg: OutputOptions, cwd: str) -> list[OutputRequest]:
    """Find every output the call names, in argv order (argv[0] is the program name).

    Recognised forms for each configured option OPT: `OPT VALUE`, `--long=VALUE`, and for a
    short option `-oVALUE`. Parsing stops at `--`. Combined short flags (`-vo X`) are not parsed.
    """
    styles = {o: "format_dest" for o in cfg.format_dest_options}
    styles.update({o: "path" for o in cfg.path_options})
    styles.update({o: "directory" for o in cfg.directory_options})
    found: list[OutputRequest] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        option = value = None
        index, prefix = i, ""
        if arg in styles:
            if i + 1 < len(argv):
                option, value, index = arg, argv[i + 1], i + 1
                i += 1
        elif arg.startswith("--") and "=" in arg and arg.split("=", 1)[0] in styles:
            option, value = arg.split("=", 1)
            prefix = option + "="
        elif len(arg) > 2 and arg[:2] in styles and not arg.startswith("--"):
            option, value, prefix = arg[:2], arg[2:], arg[:2]
        i += 1
        if option is None or value is None:
            continue
        parsed = _classify(value, styles[option], cfg, cwd)
        if parsed is None:
            continue
        fmt, dest, kind = parsed
        if fmt is not None:
            prefix += fmt + "="
        found.append(OutputRequest(arg_index=index, prefix=prefix, option=option, format=fmt, requested=dest,
                                   kind=kind))
    return found


def plan_outputs(outputs: list[OutputRequest], record_dir: str, number: int, cwd: str) -> None:
    """Assign each file/dir output its private location `captured/N.out.d/<i>/...`.

    A file keeps its requested base name, so a tool that prints only the name prints the same
    text it would have without the shim.
    """
    for i, out in enumerate(outputs):
        if out.kind == "stdout":
            continue
        rel = f"captured/{number}.out.d/{i}"
        if out.kind == "file":
            rel += "/" + (os.path.basename(out.requested) or "output")
        out.effective = rel
        out.private = os.path.join(record_dir, rel) + ("/" if out.requested.endswith("/") else "")
        out.target = os.path.normpath(os.path.join(cwd, out.requested))


def rewrite_argv(argv: list[str], outputs: list[OutputRequest]) -> list[str]:
    """The child's argv: every redirected destination replaced by its private location."""
    new = list(argv)
    for out in outputs:
        if out.private is not None:
            new[out.arg_index] = out.prefix + out.private
    return new


def substitution_map(outputs: list[OutputRequest]) -> dict[bytes, bytes]:
    """private -> requested, as bytes (directories without their trailing slash)."""
    strip = {o.private: "/" if o.kind == "dir" else "" for o in outputs if o.private is not None}
    return {os.fsencode(o.private.rstrip(strip[o.private])): os.fsencode(o.requested.rstrip(strip[o.private])
            or o.requested) for o in outputs if o.private is not None}


class Substituter:
    """Replace private path strings by the requested ones in a byte stream, chunk by chunk.

    A key may straddle two chunks, so the shortest tail that is still a proper prefix of some key
    is held back until the next chunk (or the end) decides it; other bytes pass at once, so a
    prompt or partial line that cannot start a private path is never delayed.
    """

    def __init__(self, mapping: dict[bytes, bytes]):
        self.mapping = {k: v for k, v in mapping.items() if k}
        self.keys = sorted(self.mapping, key=len, reverse=True)  # longest first: `/x/1` never shadows `/x/10`
        self.pattern = re.compile(b"|".join(re.escape(k) for k in self.keys)) if self.keys else None
        self.hold = max((len(k) for k in self.keys), default=1) - 1
        self.carry = b""
        self.count = 0

    def _open_prefix(self, data: bytes | memoryview, at: int) -> bool:
        """Could data[at:] still grow into a (longer) key with the next chunk?"""
        if len(data) - at > self.hold:
            return False  # longer than every key but the one it would have to be a proper prefix of
        tail = bytes(data[at:])
        return any(len(k) > len(tail) and k.startswith(tail) for k in self.keys)

    def _process(self, data: bytes | memoryview, final: bool) -> bytes | memoryview:
        parts: list[bytes | memoryview] = []
        pos = 0
        # the first position where a key may still run past this chunk: a match there or after it waits
        # for the next chunk, since a key starting before a match wins over it (leftmost, then longest)
        first_open = len(data) if final else next(
            (p for p in range(max(0, len(data) - self.hold), len(data)) if self._open_prefix(data, p)), len(data))
        for m in self.pattern.finditer(data):  # type: ignore[union-attr]  # only reached with keys: pattern is compiled
            if first_open <= m.start():
                break  # a longer key may complete here; decide with the next chunk
            parts += [data[pos : m.start()], self.mapping[bytes(m.group())]]
            self.count += 1
            pos = m.end()
        cut = len(data)
        if not final:
            cut = next((p for p in range(max(pos, len(data) - self.hold), len(data)) if self._open_prefix(data, p)),
                       len(data))
        self.carry = bytes(data[cut:])  # a copy: `data` may be a view of a buffer the caller reuses
        if not parts:
            return data[:cut]  # nothing replaced: no copy (a view stays a view of the caller's buffer)
        parts.append(data[pos:cut])
        return b"".join(parts)

    def feed(self, chunk: bytes | memoryview) -> bytes | memoryview:
        """The part of the stream that is decided: `chunk` itself when there is nothing to replace,
        else new bytes. A returned view is valid as long as the caller's buffer under `chunk` is."""
        if self.pattern is None:
            return chunk
        return self._process(self.carry + chunk if self.carry else chunk, final=False)

    def flush(self) -> bytes | memoryview:
        if self.pattern is None or not self.carry:
            return b""
        return self._process(self.carry, final=True)


def _open_target(root: str, target: str) -> int:
    """A descriptor of `target` (a path inside `root`, the sandbox work tree) opened for writing and
    truncated, reached from a descriptor of `root` one component at a time with O_NOFOLLOW: the agent
    owns that tree and may swap any component for a link while the tool runs, so no path string is
    ever followed. Missing directories are made (mkdirat). Refused (CopyBackRefused): a component that
    is a link or not a directory, and a final entry that is a link, not a regular file (a FIFO is
    opened O_NONBLOCK, so it fails at once instead of blocking), or a file with other hard links."""
    rel = os.path.relpath(target, root)
    parts = rel.split(os.sep)
    if os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts):
        raise CopyBackRefused(f"{target} is outside the sandbox work tree")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts[:-1]:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                try:
                    nxt = os.open(name, flags, dir_fd=fd)
                except FileNotFoundError:
                    os.mkdir(name, 0o755, dir_fd=fd)
                    nxt = os.open(name, flags, dir_fd=fd)
            except OSError as exc:
                raise CopyBackRefused(f"{name} on the way to {rel} is a link or not a directory ({exc.strerror})") from None
            os.close(fd)
            fd = nxt
        try:
            out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644,
                          dir_fd=fd)
        except OSError as exc:
            raise CopyBackRefused(f"{rel} is a link or not a regular file ({exc.strerror})") from None
        st = os.fstat(out)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(out)
            raise CopyBackRefused(f"{rel} is not a regular file of its own")
        os.ftruncate(out, 0)
        return out
    finally:
        os.close(fd)


def _copy_artifact(src: str, root: str, dst: str) -> str:
    """Digest a produced file and copy it to the requested path in one pass (`_open_target`)."""
    h = hashlib.sha256()
    with open(_open_target(root, dst), "wb") as out, open(src, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            out.write(chunk)
        os.fchmod(out.fileno(), os.stat(src).st_mode & 0o777)
    return h.hexdigest()


def entry(out: OutputRequest, snapshot: str | None = None, sha: str | None = None,
           files: dict[str, str] | None = None) -> dict[str, Any]:
    """One `outputs` entry (schema `call`); snapshot is captured/N.out.d/<i>[/<name>] when produced."""
    entry: dict[str, Any] = {"option": out.option, "format": out.format, "requested": out.requested,
                             "kind": out.kind, "snapshot": snapshot, "sha256": sha}
    if out.kind == "dir":
        entry["files"] = files or {}
    return entry


def discard_private(requests: list[OutputRequest]) -> None:
    for out in requests:
        if out.private is not None:
            where = os.path.dirname(out.private) if out.kind == "file" else out.private.rstrip("/")
            shutil.rmtree(where, ignore_errors=True)


def collect_outputs(requests: list[OutputRequest], signalled: bool, root: str) -> list[dict[str, Any]]:
    """Snapshot what each output produced and copy it back into `root` (the sandbox work tree,
    race-free: `_open_target`); a signalled call snapshots nothing."""
    if signalled:
        discard_private(requests)
        return [entry(o) for o in requests]
    entries = []
    for out in requests:
        if out.kind == "stdout" or out.private is None or out.target is None:
            entries.append(entry(out))  # a stdout report is the record's `stdout`
        elif out.kind == "file":
            if os.path.isfile(out.private) and not os.path.islink(out.private):
                entries.append(entry(out, out.effective, _copy_artifact(out.private, root, out.target)))
            else:
                discard_private([out])
                entries.append(entry(out))
        else:
            files = {}
            base = out.private.rstrip("/")
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames.sort()
                for name in sorted(filenames):
                    full = os.path.join(dirpath, name)
                    if os.path.islink(full) or not os.path.isfile(full):
                        continue  # only regular files are evidence; links are neither copied nor kept
                    rel = os.path.relpath(full, base).replace(os.sep, "/")
                    files[rel] = _copy_artifact(full, root, os.path.join(out.target, rel))
            if not files:
                discard_private([out])
            entries.append(entry(out, out.effective if files else None, None, files))
    return entries
