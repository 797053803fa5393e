"""The recording shim (DESIGN §7): an executable named like the subject, first on the sandbox PATH.

Grading replays what the agent *did*, so every subject call must leave an exact record without
changing what the agent sees or what the tool decides. Hence: the real tool is an absolute path
from the environment, never a PATH lookup (that would find this shim again); it runs as a child,
never exec'd, so its status and streams stay observable; a provisional record is written under a
lock before the spawn, so a call that happened is never lost; streams are teed byte for byte
(streamed, persisted, digested), the only edit being private output paths mapped back to the
requested ones, counted so the difference is auditable; and every output path the call names is
redirected to a per-call private location that becomes the call's immutable snapshot, then copied
back, so a later call reusing the path (or a failed call writing nothing) is never confused with it.

Speed: this runs on every tool call, so it imports only cheap standard-library modules, avoiding
subprocess, dataclasses, pathlib, typing, datetime and threading (together they doubled the per-call
cost, scripts/bench_shim.py); records are small slotted classes instead of @dataclass. All file
access goes through the helpers named in FILE_IO_HELPERS (a test scans for any other file access).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import select
import signal
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing config would pull in yaml/jsonschema
    from pathlib import Path
    from typing import Any, BinaryIO

    from skill_eval.config import SubjectProfile

SCHEMA_VERSION = 1
CONFIG_ENV = "SKILL_EVAL_SHIM_CONFIG"
RECORD_DIR_ENV = "SKILL_EVAL_RECORD_DIR"
DEPTH_ENV = "SKILL_EVAL_SHIM_DEPTH"
MAX_DEPTH = 4
OUTSIDE = "<outside-sandbox>"  # the record's cwd when the call ran outside the sandbox root
WRAPPER_MARKER = b"skill-eval-shim-wrapper"
EXIT_REFUSED = 2  # required by the brief; note it collides with abicheck's API_BREAK code
EXIT_NOT_FOUND = 127  # as the shell reports an unrunnable command
EXIT_NOT_EXECUTABLE = 126
CHUNK = 1 << 18
PIPE_SIZE = 1 << 20
FORMAT_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*")
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
RESET_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)  # Python ignores these; the child must not inherit that

FILE_IO_HELPERS = ("_read_json", "_read_head", "_write_atomic", "_reserve_call", "_open_capture",
                   "_copy_artifact", "_precompile")


class Refusal(Exception):
    """The shim cannot run safely; it exits EXIT_REFUSED with this one-line message."""


class _Record:
    """Slotted record with dict conversion (a @dataclass would cost ~20 ms of import per call)."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, **values: Any):
        for name in self.__slots__:
            setattr(self, name, values.pop(name, getattr(type(self), "_defaults", {}).get(name)))
        if values:
            raise TypeError(f"unknown fields {sorted(values)}")

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


class ShimConfig(_Record):
    """What the runner tells the shim (JSON written by install_shim, read on every call)."""

    __slots__ = ("subject", "real_env", "sandbox_root", "format_dest_options", "path_options", "directory_options",
                 "stdout_token")
    _defaults = {"format_dest_options": (), "path_options": (), "directory_options": (), "stdout_token": "-"}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShimConfig:
        values = {k: data[k] if k in ("subject", "real_env", "sandbox_root") else data.get(k, cls._defaults[k])
                  for k in cls.__slots__}
        return cls(**{k: tuple(v) if isinstance(v, list) else str(v) for k, v in values.items()})


class OutputRequest(_Record):
    """One output the call names: where the agent asked for it and where the child really writes.

    arg_index/prefix say how to rewrite argv (the token at arg_index becomes prefix + private);
    effective is the record-dir-relative private location (it is the snapshot when the call
    produced something); target is the absolute copy-back destination.
    """

    __slots__ = ("arg_index", "prefix", "option", "format", "requested", "kind", "effective", "private", "target")


class CallRecord(_Record):
    """One line of calls.jsonl (docs/ARCHITECTURE.md, schema `call`)."""

    __slots__ = ("schema_version", "call", "status", "argv", "cwd", "started_at", "finished_at", "duration_ms",
                 "exit_code", "signal", "stdout", "stderr", "outputs", "substitutions")
    _defaults = {"schema_version": SCHEMA_VERSION, "status": "provisional", "outputs": ()}

    def to_bytes(self) -> bytes:
        data = self.to_dict()
        data["outputs"] = list(data["outputs"])
        data["substitutions"] = data["substitutions"] or {"stdout": 0, "stderr": 0}
        return (json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _read_json(path: str) -> Any:
    with open(path, "rb") as fh:
        return json.loads(fh.read().decode("utf-8"))


def _read_head(path: str, size: int = 512) -> bytes:
    with contextlib.suppress(OSError), open(path, "rb") as fh:
        return fh.read(size)
    return b""


def _write_atomic(path: str, data: bytes, mode: int = 0o644) -> None:
    """Write a whole file so readers see the old or the new bytes, never a torn mix."""
    path = os.fspath(path)
    head, name = os.path.split(path)
    tmp = os.path.join(head, f".{name}.tmp.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _reserve_call(record_dir: str, make_record) -> int:
    """Take the next call number and write its provisional record, both under one lock.

    The number is max(existing records) + 1, computed while holding an exclusive flock, and the
    record file exists before the lock is released: two concurrent calls can never get the
    same number, and a number is never handed out without its record.
    """
    calls = os.path.join(record_dir, "calls")
    fd = os.open(os.path.join(record_dir, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        taken = [int(n[:-5]) for n in os.listdir(calls) if n.endswith(".json") and n[:-5].isdigit()]
        number = max(taken, default=0) + 1
        _write_atomic(os.path.join(calls, f"{number}.json"), make_record(number))
        return number
    finally:
        os.close(fd)  # releases the flock


def _open_capture(path: str) -> BinaryIO:
    return open(path, "wb")  # noqa: SIM115 - closed by _Tee.finish


def _copy_artifact(src: str, dst: str) -> str:
    """Digest a produced file and copy it to the requested path in one pass. The destination is
    written in place (through a symlink, as the tool would have); missing parents are created."""
    h = hashlib.sha256()
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    with open(src, "rb") as fh, open(dst, "wb") as out:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            out.write(chunk)
    os.chmod(dst, os.stat(src).st_mode & 0o777)
    return h.hexdigest()


def _precompile(module_file: str) -> None:
    """Write this module's .pyc so the first recorded call does not pay for compilation."""
    import py_compile

    with contextlib.suppress(OSError, py_compile.PyCompileError):  # read-only tree: slower, still correct
        py_compile.compile(module_file, doraise=True)


def _classify(value: str, style: str, cfg: ShimConfig, cwd: str) -> tuple[str | None, str, str] | None:
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


def parse_outputs(argv: list[str], cfg: ShimConfig, cwd: str) -> list[OutputRequest]:
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
    for out in (o for o in outputs if o.private is not None):
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

    def _open_prefix(self, data: bytes, at: int) -> bool:
        """Could data[at:] still grow into a (longer) key with the next chunk?"""
        tail = data[at:]
        return any(len(k) > len(tail) and k.startswith(tail) for k in self.keys)

    def _process(self, data: bytes, final: bool) -> bytes:
        parts, pos = [], 0
        for m in self.pattern.finditer(data):  # type: ignore[union-attr]
            if not final and self._open_prefix(data, m.start()):
                break  # a longer key may complete here; decide with the next chunk
            parts += [data[pos : m.start()], self.mapping[m.group()]]
            self.count += 1
            pos = m.end()
        cut = len(data)
        if not final:
            cut = next((p for p in range(max(pos, len(data) - self.hold), len(data)) if self._open_prefix(data, p)),
                       len(data))
        self.carry = data[cut:]
        parts.append(data[pos:cut])
        return b"".join(parts)

    def feed(self, chunk: bytes) -> bytes:
        return chunk if self.pattern is None else self._process(self.carry + chunk, final=False)

    def flush(self) -> bytes:
        if self.pattern is None or not self.carry:
            return b""
        return self._process(self.carry, final=True)


class _Tee:
    """One child stream: substitute, write to our own fd, persist and digest, chunk by chunk.

    If our own stream is gone (EPIPE, EBADF) the child's pipe is closed as well, so the child
    meets the same broken pipe it would have met without the shim.
    """

    __slots__ = ("src", "dst", "capture", "subst", "hash", "bytes", "open", "downstream")

    def __init__(self, src: int, dst: int, capture: BinaryIO, mapping: dict[bytes, bytes]):
        self.src, self.dst, self.capture, self.subst = src, dst, capture, Substituter(mapping)
        self.hash, self.bytes, self.open, self.downstream = hashlib.sha256(), 0, True, True

    def pump(self) -> None:
        chunk = os.read(self.src, CHUNK)
        out = self.subst.feed(chunk) if chunk else self.subst.flush()
        if out:
            self.hash.update(out)
            self.capture.write(out)
            self.bytes += len(out)
            view = memoryview(out)
            try:
                while view and self.downstream:
                    view = view[os.write(self.dst, view) :]
            except OSError:
                self.downstream = False
                self.finish()
        if not chunk:
            self.finish()

    def finish(self) -> None:
        if self.open:
            self.open = False
            os.close(self.src)
            self.capture.close()

    def result(self, path: str) -> dict[str, Any]:
        return {"path": path, "sha256": self.hash.hexdigest(), "bytes": self.bytes}


def _tee_all(tees: list[_Tee]) -> None:
    poller = select.poll()
    live = {t.src: t for t in tees}
    for fd in live:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while live:
        for fd, _event in poller.poll():
            if fd in live:
                live[fd].pump()
                if not live[fd].open:
                    poller.unregister(fd)
                    del live[fd]


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def _say(message: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"skill-eval shim: {message}\n".encode("utf-8", "replace"))


def _rel_cwd(cwd: str, sandbox_root: str) -> str:
    """cwd relative to the sandbox root; OUTSIDE when the agent left it (no machine-local path)."""
    rel = os.path.relpath(cwd, sandbox_root).replace(os.sep, "/")
    return "." if rel == os.curdir else OUTSIDE if rel == ".." or rel.startswith("../") else rel


def _load() -> tuple[ShimConfig, str, str]:
    """Config, real tool path and record dir, or Refusal: nothing may be spawned without them."""
    cfg_path = os.environ.get(CONFIG_ENV)
    if not cfg_path:
        raise Refusal(f"{CONFIG_ENV} is not set; refusing to run (the runner sets it when it installs the shim)")
    try:
        cfg = ShimConfig.from_json(_read_json(cfg_path))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Refusal(f"cannot read shim config {cfg_path}: {exc}") from None
    record = os.environ.get(RECORD_DIR_ENV)
    if not record or not os.path.isdir(os.path.join(record, "calls")):
        raise Refusal(f"{RECORD_DIR_ENV} is not set or has no calls/ directory; refusing to run unrecorded")
    return cfg, os.environ.get(cfg.real_env, ""), os.path.realpath(record)


def _check_real(real: str, cfg: ShimConfig, wrapper: str | None) -> None:
    name = cfg.real_env
    if not real:
        raise Refusal(f"{name} is not set; refusing to look up {cfg.subject!r} on PATH (it would find this shim again)")
    if not os.path.isabs(real):
        raise Refusal(f"{name}={real!r} is not an absolute path; refusing a PATH lookup")
    for mine in (wrapper, __file__):
        try:
            if mine and os.path.samefile(real, mine):
                raise Refusal(f"{name}={real} points at the shim itself; refusing to recurse")
        except OSError:
            continue
    if WRAPPER_MARKER in _read_head(real):
        raise Refusal(f"{name}={real} is a skill-eval shim wrapper; refusing to recurse")
    depth = os.environ.get(DEPTH_ENV, "0")
    if not depth.isdigit() or int(depth) >= MAX_DEPTH:
        raise Refusal(f"{DEPTH_ENV}={depth}: shim nested too deep; refusing to recurse further")


def main(argv: list[str] | None = None, wrapper: str | None = None) -> int:
    """Run one recorded call; returns the exit status the shim must exit with."""
    argv = list(sys.argv if argv is None else argv) or ["shim"]
    started, t0, cwd = _now(), time.monotonic(), os.getcwd()
    try:
        cfg, real, record_dir = _load()
    except Refusal as exc:
        _say(str(exc))
        return EXIT_REFUSED
    argv[0] = os.path.basename(argv[0]) or cfg.subject  # the name as invoked, never a local path
    outputs = parse_outputs(argv, cfg, cwd)
    rec = CallRecord(argv=argv, cwd=_rel_cwd(cwd, cfg.sandbox_root), started_at=started)

    def provisional(number: int) -> bytes:
        rec.call = number
        plan_outputs(outputs, record_dir, number, cwd)
        rec.outputs = [_output_entry(o) for o in outputs]
        return rec.to_bytes()

    try:
        _check_real(real, cfg, wrapper)
    except Refusal as exc:
        _say(str(exc))
        _finalize(record_dir, _reserve_call(record_dir, provisional), rec, t0, outputs)
        return EXIT_REFUSED
    number = _reserve_call(record_dir, provisional)
    return _run(real, argv, outputs, rec, record_dir, number, t0)


def _output_entry(out: OutputRequest, snapshot: str | None = None, sha: str | None = None,
                  files: dict[str, str] | None = None) -> dict[str, Any]:
    """One `outputs` entry (schema `call`). The effective (private) location is not stored: it is
    always captured/N.out.d/<i>[/<basename>], and equals `snapshot` whenever the output was produced."""
    entry = {"option": out.option, "format": out.format, "requested": out.requested, "kind": out.kind,
             "snapshot": snapshot, "sha256": sha}
    if out.kind == "dir":
        entry["files"] = files or {}
    return entry


def _finalize(record_dir: str, number: int, rec: CallRecord, t0: float, outputs: list[OutputRequest] | None = None) -> None:
    """Rewrite the record as final. With `outputs`, the tool never ran: status spawn_failed."""
    if outputs is not None:
        _discard_private(outputs)
        for out in outputs:
            out.effective = None
        rec.status, rec.outputs = "spawn_failed", [_output_entry(o) for o in outputs]
    snapdir = os.path.join(record_dir, "captured", f"{number}.out.d")
    if os.path.isdir(snapdir) and not os.listdir(snapdir):
        os.rmdir(snapdir)  # its absence means exactly "nothing snapshotted"
    rec.finished_at, rec.duration_ms = _now(), int((time.monotonic() - t0) * 1000)
    _write_atomic(os.path.join(record_dir, "calls", f"{number}.json"), rec.to_bytes())


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(r, 1031, PIPE_SIZE)  # F_SETPIPE_SZ: fewer, larger reads for big outputs
    return r, w


def _run(real: str, argv: list[str], outputs: list[OutputRequest], rec: CallRecord, record_dir: str, number: int,
         t0: float) -> int:
    """Spawn the real tool as a child, tee its streams, then snapshot, copy back and finalize."""
    for out in outputs:
        if out.private is not None:
            os.makedirs(out.private if out.kind == "dir" else os.path.dirname(out.private), exist_ok=True)
    env = dict(os.environ)
    env[DEPTH_ENV] = str(int(env.get(DEPTH_ENV, "0")) + 1)
    (out_r, out_w), (err_r, err_w) = _pipe(), _pipe()
    # Signals that arrive while spawning stay pending until `forward` knows the child's pid.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED_SIGNALS)
    try:
        pid = os.posix_spawn(real, [real, *rewrite_argv(argv, outputs)[1:]], env, setsigdef=RESET_SIGNALS,
                             setsigmask=(), file_actions=[(os.POSIX_SPAWN_DUP2, out_w, 1),
                                                          (os.POSIX_SPAWN_DUP2, err_w, 2)])
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED_SIGNALS)
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        _say(f"cannot run {real}: {exc.strerror}")
        _finalize(record_dir, number, rec, t0, outputs)
        return EXIT_NOT_FOUND if isinstance(exc, FileNotFoundError) else EXIT_NOT_EXECUTABLE
    os.close(out_w)
    os.close(err_w)

    def forward(signum: int, _frame: object) -> None:  # the child must see what the shim was sent
        with contextlib.suppress(OSError):
            os.kill(pid, signum)

    for sig in FORWARDED_SIGNALS:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED_SIGNALS)
    cap = os.path.join(record_dir, "captured", str(number))
    mapping = substitution_map(outputs)
    tees = [_Tee(out_r, 1, _open_capture(cap + ".out"), mapping), _Tee(err_r, 2, _open_capture(cap + ".err"), mapping)]
    _tee_all(tees)
    _, status = os.waitpid(pid, 0)
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    exit_code = 128 + signum if signum else os.waitstatus_to_exitcode(status)

    rec.status, rec.exit_code, rec.signal = "complete", exit_code, signum
    rec.stdout = tees[0].result(f"captured/{number}.out")
    rec.stderr = tees[1].result(f"captured/{number}.err")
    rec.substitutions = {"stdout": tees[0].subst.count, "stderr": tees[1].subst.count}
    try:
        rec.outputs = _collect_outputs(outputs, signum is not None)
        _finalize(record_dir, number, rec, t0)
    except OSError as exc:  # e.g. disk full: the record stays provisional, the agent still gets the tool's status
        _say(f"recording of call {number} failed after the tool ran: {exc}")
    return exit_code


def _discard_private(outputs: list[OutputRequest]) -> None:
    import shutil

    for out in outputs:
        if out.private is not None:
            where = os.path.dirname(out.private) if out.kind == "file" else out.private.rstrip("/")
            shutil.rmtree(where, ignore_errors=True)


def _collect_outputs(outputs: list[OutputRequest], signalled: bool) -> list[dict[str, Any]]:
    """Snapshot what each output produced and copy it back; a signalled call snapshots nothing."""
    if signalled:
        _discard_private(outputs)
        return [_output_entry(o) for o in outputs]
    entries = []
    for out in outputs:
        if out.kind == "stdout":
            entries.append(_output_entry(out))  # the report is captured/N.out (the record's `stdout`)
        elif out.kind == "file":
            if os.path.isfile(out.private) and not os.path.islink(out.private):
                entries.append(_output_entry(out, out.effective, _copy_artifact(out.private, out.target)))
            else:
                _discard_private([out])
                entries.append(_output_entry(out))
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
                    files[rel] = _copy_artifact(full, os.path.join(out.target, rel))
            if not files:
                _discard_private([out])
            entries.append(_output_entry(out, out.effective if files else None, None, files))
    return entries


def collect_calls(record_dir: Path | str) -> list[dict[str, Any]]:
    """All call records under record_dir/calls, sorted by call number (the calls.jsonl order).

    Fails closed: an unreadable record, or one whose number disagrees with its file name, raises
    ValueError rather than being skipped (a lost call would read as a call that never happened).
    """
    calls_dir = os.path.join(os.fspath(record_dir), "calls")
    records = []
    for name in os.listdir(calls_dir):
        if name.startswith(".") or not name.endswith(".json"):
            continue
        path = os.path.join(calls_dir, name)
        if not name[:-5].isdigit():
            raise ValueError(f"{path}: unexpected file in the call record directory")
        try:
            data = _read_json(path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: unreadable call record ({exc})") from None
        if not isinstance(data, dict) or data.get("call") != int(name[:-5]):
            raise ValueError(f"{path}: record number does not match its file name")
        records.append(data)
    return sorted(records, key=lambda r: r["call"])


def wrapper_script(python: str, src_dir: str, style: str = "python") -> str:
    """The executable placed on PATH.

    `python`: a `#!<python> -IS` script (one process start, no shell). `sh`: `/bin/sh` execs the
    interpreter (for interpreter paths a shebang cannot hold: long, or with spaces).
    `-I -S` keep the agent's PYTHON* variables and site-packages out of the shim; it needs neither
    and starts faster without site.
    """
    marker = f"# {WRAPPER_MARKER.decode()}: generated by skill_eval.shim.install_shim; do not edit\n"
    if style == "python":
        return (f"#!{python} -IS\n{marker}import sys\nsys.path.insert(0, {src_dir!r})\n"
                "from skill_eval.shim import main\nsys.exit(main(sys.argv, wrapper=__file__))\n")
    if style == "sh":
        code = (f"import sys; sys.path.insert(0, {src_dir!r}); from skill_eval.shim import main; "
                "sys.exit(main(sys.argv[1:], wrapper=sys.argv[1]))")
        return f'#!/bin/sh\n{marker}exec {_sh_quote(python)} -IS -c {_sh_quote(code)} "$0" "$@"\n'
    raise ValueError(f"unknown wrapper style {style!r}")


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def install_shim(bin_dir: Path, profile: SubjectProfile, real: Path, record_dir: Path, sandbox_root: Path, *,
                 style: str = "python", base_path: str | None = None) -> dict[str, str]:
    """Write bin_dir/<subject> and its config JSON; return the environment the runner must set.

    The returned PATH puts bin_dir first (before base_path, default: this process's PATH).
    The python-shebang wrapper is the default (see scripts/bench_shim.py for the measurement);
    it falls back to the sh wrapper when the interpreter path cannot sit in a shebang line.
    """
    bin_dir, record_dir, sandbox_root, real = (os.fspath(p) for p in (bin_dir, record_dir, sandbox_root, real))
    if not os.path.isabs(real):
        raise ValueError(f"real tool path {real} must be absolute")
    if not (os.path.isfile(real) and os.access(real, os.X_OK)):
        raise ValueError(f"real tool {real} is not an executable file")
    if WRAPPER_MARKER in _read_head(real):
        raise ValueError(f"real tool {real} is itself a skill-eval shim wrapper")
    for d in (bin_dir, os.path.join(record_dir, "calls"), os.path.join(record_dir, "captured")):
        os.makedirs(d, exist_ok=True)
    python = sys.executable
    if style == "python" and (len(python) > 120 or " " in python):
        style = "sh"
    config = {"schema_version": SCHEMA_VERSION, "subject": profile.name, "real_env": profile.real_env,
              "sandbox_root": os.path.realpath(sandbox_root), "stdout_token": profile.stdout_token,
              **{k: list(getattr(profile, k)) for k in ("format_dest_options", "path_options", "directory_options")}}
    config_path = os.path.join(bin_dir, f".{profile.name}.skill-eval-shim.json")
    _write_atomic(config_path, (json.dumps(config, indent=2, sort_keys=True) + "\n").encode())
    module = os.path.realpath(__file__)
    _write_atomic(os.path.join(bin_dir, profile.name),
                  wrapper_script(python, os.path.dirname(os.path.dirname(module)), style).encode(), mode=0o755)
    _precompile(module)
    path = base_path if base_path is not None else os.environ.get("PATH", os.defpath)
    return {profile.real_env: real, CONFIG_ENV: config_path, RECORD_DIR_ENV: record_dir,
            "PATH": os.pathsep.join([bin_dir, *[p for p in path.split(os.pathsep) if p and p != bin_dir]])}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
