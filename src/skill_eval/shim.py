"""The recording shim (DESIGN §7): an executable named like the subject, first on the sandbox PATH.

Why it exists: grading replays what the agent *did*, so every subject invocation must leave an
exact record (argv, cwd, exit status, verbatim streams, the files it produced) without changing
what the agent sees or what the tool decides. Hence:

* the real tool is an absolute path from the environment, never a PATH lookup (a name lookup
  would find this shim again and recurse), and the shim refuses to start without it;
* the real tool runs as a *child* (never exec), so its exit status and streams stay observable;
* a provisional record is written under a lock before the spawn, so a call that happened is
  never lost, even if the shim is killed afterwards;
* stdout/stderr are teed byte for byte (streamed, never buffered whole) while being persisted
  and digested; the only edit is mapping the private output paths back to the requested ones,
  and the number of such edits is recorded so the difference is auditable;
* every output path the call names is redirected to a per-call private location that becomes
  the call's immutable snapshot, then copied back to the requested path, so a later call reusing
  the path (or a failed call that writes nothing) cannot be confused with this one.

This module runs on every tool call: it imports the standard library only and nothing from
skill_eval that would pull in third-party packages. All file access goes through the helpers
named in FILE_IO_HELPERS (a test scans for any other way of opening files).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:  # only for annotations: importing config would pull in yaml/jsonschema
    from skill_eval.config import SubjectProfile

SCHEMA_VERSION = 1
CONFIG_ENV = "SKILL_EVAL_SHIM_CONFIG"
RECORD_DIR_ENV = "SKILL_EVAL_RECORD_DIR"
DEPTH_ENV = "SKILL_EVAL_SHIM_DEPTH"
MAX_DEPTH = 4
WRAPPER_MARKER = b"skill-eval-shim-wrapper"
EXIT_REFUSED = 2  # required by the brief; see report: it collides with some subjects' verdict codes
EXIT_NOT_FOUND = 127  # as the shell reports an unrunnable command
EXIT_NOT_EXECUTABLE = 126
CHUNK = 1 << 16
FORMAT_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*")
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)

FILE_IO_HELPERS = (
    "_read_config",
    "_read_head",
    "_read_record",
    "_write_atomic",
    "_reserve_call",
    "_open_capture",
    "_copy_artifact",
)


class Refusal(Exception):
    """The shim cannot run safely; it exits EXIT_REFUSED with this one-line message."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class ShimConfig:
    """What the runner tells the shim (written as JSON by install_shim, read on every call)."""

    subject: str
    real_env: str
    sandbox_root: str
    format_dest_options: tuple[str, ...] = ()
    path_options: tuple[str, ...] = ()
    directory_options: tuple[str, ...] = ()
    stdout_token: str = "-"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShimConfig:
        return cls(
            subject=str(data["subject"]),
            real_env=str(data["real_env"]),
            sandbox_root=str(data["sandbox_root"]),
            format_dest_options=tuple(data.get("format_dest_options", ())),
            path_options=tuple(data.get("path_options", ())),
            directory_options=tuple(data.get("directory_options", ())),
            stdout_token=str(data.get("stdout_token", "-")),
        )


@dataclass
class OutputRequest:
    """One output the call names: where the agent asked for it and where the child really writes."""

    arg_index: int  # index in argv of the token holding the value
    prefix: str  # text kept before the destination in that token ("--output=", "json=", "-o")
    option: str
    format: str | None
    requested: str  # as given in argv
    kind: str  # "file" | "dir" | "stdout"
    effective: str | None = None  # record-dir-relative private location (None for stdout)
    private: str | None = None  # absolute private path handed to the child
    target: str | None = None  # absolute requested path (copy-back destination)


@dataclass
class StreamResult:
    sha256: str = ""
    bytes: int = 0
    substitutions: int = 0


@dataclass
class CallRecord:
    """One line of calls.jsonl (docs/ARCHITECTURE.md, schema `call`)."""

    call: int
    argv: list[str]
    cwd: str
    started_at: str
    status: str = "provisional"
    finished_at: str | None = None
    duration_ms: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    stdout: dict[str, Any] | None = None
    stderr: dict[str, Any] | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    substitutions: dict[str, int] = field(default_factory=lambda: {"stdout": 0, "stderr": 0})
    schema_version: int = SCHEMA_VERSION

    def to_bytes(self) -> bytes:
        return (json.dumps(asdict(self), sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- file I/O helpers


def _read_config(path: str) -> ShimConfig:
    with open(path, "rb") as fh:
        return ShimConfig.from_json(json.loads(fh.read().decode("utf-8")))


def _read_head(path: str, size: int = 512) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return b""


def _read_record(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        return json.loads(fh.read().decode("utf-8"))


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write a whole file so readers see the old or the new bytes, never a torn mix."""
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _reserve_call(record_dir: Path, make_record) -> int:
    """Take the next call number and write its provisional record, both under one lock.

    The number is max(existing records) + 1, computed while holding an exclusive flock, and the
    record file is created before the lock is released: two concurrent calls can never get the
    same number, and a number is never handed out without its record.
    """
    calls = record_dir / "calls"
    fd = os.open(record_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        taken = [int(n[:-5]) for n in os.listdir(calls) if n.endswith(".json") and n[:-5].isdigit()]
        number = max(taken, default=0) + 1
        _write_atomic(calls / f"{number}.json", make_record(number))
        return number
    finally:
        os.close(fd)  # releases the flock


def _open_capture(path: Path) -> BinaryIO:
    return open(path, "wb")  # noqa: SIM115 - closed by the tee thread


def _copy_artifact(src: Path, dst: Path | None) -> str:
    """Digest a produced file and (when dst is given) copy it to the requested path in one pass."""
    h = hashlib.sha256()
    out = None
    if dst is not None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        out = open(dst, "wb")  # noqa: SIM115 - closed below; writes through symlinks like the tool would
    try:
        with open(src, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                if out is not None:
                    out.write(chunk)
    finally:
        if out is not None:
            out.close()
    if dst is not None:
        os.chmod(dst, os.stat(src).st_mode & 0o777)
    return h.hexdigest()


# --------------------------------------------------------------------------- argv analysis


def _classify(value: str, option: str, style: str, cfg: ShimConfig, cwd: str) -> tuple[str | None, str, str] | None:
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
        token = argv[i]
        if token == "--":
            break
        option = value = None
        index, prefix = i, ""
        if token in styles:
            if i + 1 < len(argv):
                option, value, index = token, argv[i + 1], i + 1
                i += 1
        elif token.startswith("--") and "=" in token and token.split("=", 1)[0] in styles:
            option, value = token.split("=", 1)
            prefix = option + "="
        elif len(token) > 2 and token[:2] in styles and not token.startswith("--"):
            option, value, prefix = token[:2], token[2:], token[:2]
        i += 1
        if option is None or value is None:
            continue
        parsed = _classify(value, option, styles[option], cfg, cwd)
        if parsed is None:
            continue
        fmt, dest, kind = parsed
        if fmt is not None:
            prefix += fmt + "="
        found.append(OutputRequest(arg_index=index, prefix=prefix, option=option, format=fmt, requested=dest, kind=kind))
    return found


def plan_outputs(outputs: list[OutputRequest], record_dir: str, number: int, cwd: str) -> None:
    """Assign each file/dir output its private location `captured/N.out.d/<i>/...`."""
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
    new = list(argv)
    for out in outputs:
        if out.private is not None:
            new[out.arg_index] = out.prefix + out.private
    return new


# --------------------------------------------------------------------------- streaming substitution


class Substituter:
    """Replace private path strings by the requested ones in a byte stream, chunk by chunk.

    A match may straddle two chunks, so up to (longest key - 1) trailing bytes are held back
    until the next chunk (or the end) shows whether they start a match.
    """

    def __init__(self, mapping: dict[bytes, bytes]):
        self.mapping = {k: v for k, v in mapping.items() if k}
        keys = sorted(self.mapping, key=len, reverse=True)  # longest first: `/x/1` never shadows `/x/10`
        self.pattern = re.compile(b"|".join(re.escape(k) for k in keys)) if keys else None
        self.hold = max((len(k) for k in keys), default=1) - 1
        self.carry = b""
        self.count = 0

    def _replace(self, data: bytes, limit: int) -> tuple[bytes, int]:
        assert self.pattern is not None
        parts, pos = [], 0
        for m in self.pattern.finditer(data):
            if m.start() >= limit:
                break
            parts.append(data[pos : m.start()])
            parts.append(self.mapping[m.group()])
            self.count += 1
            pos = m.end()
        return b"".join(parts), pos

    def feed(self, chunk: bytes) -> bytes:
        if self.pattern is None:
            return chunk
        data = self.carry + chunk
        safe = len(data) - self.hold
        if safe <= 0:
            self.carry = data
            return b""
        head, pos = self._replace(data, safe)
        cut = max(pos, safe)
        self.carry = data[cut:]
        return head + data[pos:cut]

    def flush(self) -> bytes:
        if self.pattern is None or not self.carry:
            return b""
        data, self.carry = self.carry, b""
        head, pos = self._replace(data, len(data))
        return head + data[pos:]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _pump(src, dst_fd: int, capture: BinaryIO, subst: Substituter, result: StreamResult) -> None:
    """Tee one child stream: substitute, write to our own fd, persist and digest, chunk by chunk.

    If our own stream is gone (EPIPE, EBADF) we close the child's pipe as well, so the child sees
    the same broken pipe it would have seen without the shim, and stop.
    """
    h = hashlib.sha256()
    fd = src.fileno()
    alive = True
    try:
        while True:
            chunk = os.read(fd, CHUNK)
            out = subst.feed(chunk) if chunk else subst.flush()
            if out:
                h.update(out)
                capture.write(out)
                result.bytes += len(out)
                if alive:
                    try:
                        _write_all(dst_fd, out)
                    except OSError:
                        alive = False
                        break
            if not chunk:
                break
    finally:
        src.close()
        capture.close()
        result.sha256 = h.hexdigest()
        result.substitutions = subst.count


# --------------------------------------------------------------------------- main


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _say(message: str) -> None:
    try:
        os.write(2, f"{message}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def _rel_cwd(cwd: str, sandbox_root: str) -> str:
    rel = os.path.relpath(cwd, sandbox_root)
    return "." if rel == os.curdir else rel.replace(os.sep, "/")


def _load(argv: list[str], wrapper: str | None) -> tuple[ShimConfig, str, Path]:
    """Everything the shim needs before it may spawn anything; raises Refusal otherwise."""
    cfg_path = os.environ.get(CONFIG_ENV)
    if not cfg_path:
        raise Refusal(f"{CONFIG_ENV} is not set; refusing to run (the runner sets it when it installs the shim)")
    try:
        cfg = _read_config(cfg_path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Refusal(f"cannot read shim config {cfg_path}: {exc}") from None
    record = os.environ.get(RECORD_DIR_ENV)
    if not record or not os.path.isdir(os.path.join(record, "calls")):
        raise Refusal(f"{RECORD_DIR_ENV} is not set or has no calls/ directory; refusing to run unrecorded")
    return cfg, os.environ.get(cfg.real_env, ""), Path(os.path.realpath(record))


def _check_real(real: str, cfg: ShimConfig, wrapper: str | None) -> None:
    name = cfg.real_env
    if not real:
        raise Refusal(f"{name} is not set; refusing to look up {cfg.subject!r} on PATH (it would find this shim again)")
    if not os.path.isabs(real):
        raise Refusal(f"{name}={real!r} is not an absolute path; refusing a PATH lookup")
    own = [p for p in (wrapper, __file__) if p]
    for mine in own:
        try:
            if os.path.samefile(real, mine):
                raise Refusal(f"{name}={real} points at the shim itself; refusing to recurse")
        except OSError:
            continue
    if WRAPPER_MARKER in _read_head(real):
        raise Refusal(f"{name}={real} is a skill-eval shim wrapper; refusing to recurse")
    try:
        depth = int(os.environ.get(DEPTH_ENV, "0"))
    except ValueError:
        depth = 0
    if depth >= MAX_DEPTH:
        raise Refusal(f"{DEPTH_ENV}={depth}: shim nested {depth} deep; refusing to recurse further")


def main(argv: list[str] | None = None, wrapper: str | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    argv[0] = os.path.basename(argv[0]) if argv else "shim"
    started, t0 = _now(), time.monotonic()
    cwd = os.getcwd()
    try:
        cfg, real, record_dir = _load(argv, wrapper)
    except Refusal as exc:
        _say(f"skill-eval shim: {exc}")
        return EXIT_REFUSED
    argv[0] = cfg.subject if argv[0] in ("", "shim") else argv[0]
    outputs = parse_outputs(argv, cfg, cwd)
    rec = CallRecord(call=0, argv=argv, cwd=_rel_cwd(cwd, cfg.sandbox_root), started_at=started)

    def provisional(number: int) -> bytes:
        rec.call = number
        plan_outputs(outputs, str(record_dir), number, cwd)
        rec.outputs = [_output_entry(o, None, None) for o in outputs]
        return rec.to_bytes()

    try:
        _check_real(real, cfg, wrapper)
    except Refusal as exc:
        _say(f"skill-eval shim: {exc}")
        _finish_failed(record_dir, rec, provisional, t0)
        return EXIT_REFUSED
    number = _reserve_call(record_dir, provisional)
    return _run(real, argv, outputs, rec, record_dir, number, t0)


def _finish_failed(record_dir: Path, rec: CallRecord, provisional, t0: float) -> None:
    number = _reserve_call(record_dir, provisional)
    rec.status, rec.finished_at = "spawn_failed", _now()
    rec.duration_ms = int((time.monotonic() - t0) * 1000)
    rec.outputs = [{**o, "effective": None} for o in rec.outputs]
    _write_atomic(record_dir / "calls" / f"{number}.json", rec.to_bytes())


def _output_entry(out: OutputRequest, snapshot: str | None, sha: str | None, files: dict | None = None) -> dict:
    return {
        "option": out.option,
        "format": out.format,
        "requested": out.requested,
        "kind": out.kind,
        "effective": out.effective,
        "snapshot": snapshot,
        "sha256": sha,
        "files": files,
    }


def _run(real: str, argv: list[str], outputs: list[OutputRequest], rec: CallRecord, record_dir: Path,
         number: int, t0: float) -> int:
    captured = record_dir / "captured"
    for out in outputs:
        if out.private is not None:
            os.makedirs(out.private if out.kind == "dir" else os.path.dirname(out.private), exist_ok=True)
    mapping = {os.fsencode(o.private.rstrip("/") if o.kind == "dir" else o.private):
               os.fsencode(o.requested.rstrip("/") if o.kind == "dir" else o.requested)
               for o in outputs if o.private is not None}
    env = dict(os.environ)
    env[DEPTH_ENV] = str(int(env.get(DEPTH_ENV, "0") or 0) + 1)
    child_argv = [real, *rewrite_argv(argv, outputs)[1:]]
    try:
        child = subprocess.Popen(child_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    except OSError as exc:
        code = EXIT_NOT_FOUND if isinstance(exc, FileNotFoundError) else EXIT_NOT_EXECUTABLE
        _say(f"skill-eval shim: cannot run {real}: {exc.strerror}")
        _discard_private(outputs)
        rec.status, rec.finished_at = "spawn_failed", _now()
        rec.duration_ms = int((time.monotonic() - t0) * 1000)
        rec.outputs = [_output_entry(o, None, None) for o in outputs]
        _write_atomic(record_dir / "calls" / f"{number}.json", rec.to_bytes())
        return code

    def forward(signum, _frame):
        try:
            child.send_signal(signum)
        except OSError:
            pass

    for sig in FORWARDED_SIGNALS:
        signal.signal(sig, forward)
    results = {"stdout": StreamResult(), "stderr": StreamResult()}
    threads = [
        threading.Thread(target=_pump, args=(child.stdout, 1, _open_capture(captured / f"{number}.out"),
                                             Substituter(mapping), results["stdout"]), daemon=True),
        threading.Thread(target=_pump, args=(child.stderr, 2, _open_capture(captured / f"{number}.err"),
                                             Substituter(mapping), results["stderr"]), daemon=True),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    status = child.wait()
    signum = -status if status < 0 else None
    exit_code = 128 + signum if signum else status

    rec.status, rec.exit_code, rec.signal = "complete", exit_code, signum
    for name in ("stdout", "stderr"):
        r = results[name]
        ext = "out" if name == "stdout" else "err"
        setattr(rec, name, {"path": f"captured/{number}.{ext}", "sha256": r.sha256, "bytes": r.bytes})
        rec.substitutions[name] = r.substitutions
    rec.outputs = _collect_outputs(outputs, signum is not None, results["stdout"], number)
    rec.finished_at = _now()
    rec.duration_ms = int((time.monotonic() - t0) * 1000)
    _write_atomic(record_dir / "calls" / f"{number}.json", rec.to_bytes())
    return exit_code


def _discard_private(outputs: list[OutputRequest]) -> None:
    import shutil

    for out in outputs:
        if out.private is not None:
            shutil.rmtree(os.path.dirname(out.private.rstrip("/")) if out.kind == "file" else out.private,
                          ignore_errors=True)


def _collect_outputs(outputs: list[OutputRequest], signalled: bool, stdout: StreamResult, number: int) -> list[dict]:
    """Snapshot what each output produced and copy it back; a signalled call snapshots nothing."""
    entries = []
    if signalled:
        _discard_private(outputs)
    for out in outputs:
        if out.kind == "stdout":
            ok = not signalled and stdout.bytes > 0
            entries.append(_output_entry(out, f"captured/{number}.out" if ok else None, stdout.sha256 if ok else None))
            continue
        assert out.private is not None and out.target is not None
        if signalled:
            entries.append(_output_entry(out, None, None))
        elif out.kind == "file":
            if os.path.isfile(out.private) and not os.path.islink(out.private):
                sha = _copy_artifact(Path(out.private), Path(out.target))
                entries.append(_output_entry(out, out.effective, sha))
            else:
                _discard_private([out])
                entries.append(_output_entry(out, None, None))
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
                    files[rel] = _copy_artifact(Path(full), Path(out.target) / rel)
            if files:
                entries.append(_output_entry(out, out.effective, None, files))
            else:
                _discard_private([out])
                entries.append(_output_entry(out, None, None))
    return entries


# --------------------------------------------------------------------------- runner side


def collect_calls(record_dir: Path) -> list[dict[str, Any]]:
    """All call records under record_dir/calls, sorted by call number (the calls.jsonl order).

    Fails closed: an unreadable record, or one whose number disagrees with its file name, raises
    ValueError rather than being skipped (a lost call would read as a call that never happened).
    """
    calls_dir = Path(record_dir) / "calls"
    records = []
    for name in os.listdir(calls_dir):
        if name.startswith(".") or not name.endswith(".json"):
            continue
        stem = name[:-5]
        if not stem.isdigit():
            raise ValueError(f"{calls_dir / name}: unexpected file in the call record directory")
        try:
            data = _read_record(calls_dir / name)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{calls_dir / name}: unreadable call record ({exc})") from None
        if not isinstance(data, dict) or data.get("call") != int(stem):
            raise ValueError(f"{calls_dir / name}: record number does not match its file name")
        records.append(data)
    return sorted(records, key=lambda r: r["call"])


def wrapper_script(python: str, src_dir: str, style: str = "python") -> str:
    """The executable placed on PATH. `python` style: one interpreter start, no shell.

    `-I -S` keep the agent's PYTHON* variables and site-packages out of the shim (it needs
    neither, and starts faster without site).
    """
    if style == "python":
        return (
            f"#!{python} -IS\n"
            f"# {WRAPPER_MARKER.decode()} — generated by skill_eval.shim.install_shim; do not edit\n"
            "import sys\n"
            f"sys.path.insert(0, {src_dir!r})\n"
            "from skill_eval.shim import main\n"
            "sys.exit(main(sys.argv, wrapper=__file__))\n"
        )
    if style == "sh":
        code = (f"import sys; sys.path.insert(0, {src_dir!r}); from skill_eval.shim import main; "
                "sys.exit(main(sys.argv[1:], wrapper=sys.argv[1]))")
        return (
            "#!/bin/sh\n"
            f"# {WRAPPER_MARKER.decode()} — generated by skill_eval.shim.install_shim; do not edit\n"
            f"exec {_sh_quote(python)} -IS -c {_sh_quote(code)} \"$0\" \"$@\"\n"
        )
    raise ValueError(f"unknown wrapper style {style!r}")


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def install_shim(bin_dir: Path, profile: SubjectProfile, real: Path, record_dir: Path, sandbox_root: Path,
                 *, style: str = "python", base_path: str | None = None) -> dict[str, str]:
    """Write bin_dir/<subject> and its config; return the environment the runner must set.

    The python-shebang wrapper is the default because it saves the /bin/sh start (see
    scripts/bench_shim.py); the sh wrapper exists for interpreters whose path is too long or
    contains spaces (a shebang line cannot quote).
    """
    bin_dir, record_dir, sandbox_root = Path(bin_dir), Path(record_dir), Path(sandbox_root)
    real = Path(real)
    if not real.is_absolute():
        raise ValueError(f"real tool path {real} must be absolute")
    if not (real.is_file() and os.access(real, os.X_OK)):
        raise ValueError(f"real tool {real} is not an executable file")
    bin_dir.mkdir(parents=True, exist_ok=True)
    (record_dir / "calls").mkdir(parents=True, exist_ok=True)
    (record_dir / "captured").mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / profile.name
    if wrapper.exists() and os.path.samefile(real, wrapper):
        raise ValueError(f"real tool {real} is the shim location itself")
    python = sys.executable
    if style == "python" and (len(python) > 120 or " " in python):
        style = "sh"
    config = {
        "schema_version": SCHEMA_VERSION,
        "subject": profile.name,
        "real_env": profile.real_env,
        "sandbox_root": os.path.realpath(sandbox_root),
        "format_dest_options": list(profile.format_dest_options),
        "path_options": list(profile.path_options),
        "directory_options": list(profile.directory_options),
        "stdout_token": profile.stdout_token,
    }
    config_path = bin_dir / f".{profile.name}.skill-eval-shim.json"
    _write_atomic(config_path, (json.dumps(config, indent=2, sort_keys=True) + "\n").encode())
    src_dir = str(Path(__file__).resolve().parent.parent)
    _write_atomic(wrapper, wrapper_script(python, src_dir, style).encode(), mode=0o755)
    path = base_path if base_path is not None else os.environ.get("PATH", os.defpath)
    return {
        profile.real_env: str(real),
        CONFIG_ENV: str(config_path),
        RECORD_DIR_ENV: str(record_dir),
        "PATH": os.pathsep.join([str(bin_dir), *[p for p in path.split(os.pathsep) if p and p != str(bin_dir)]]),
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv))
