"""The recorder (DESIGN §7): the runner executes every subject call; the agent only asks.

The agent under test is an adversary, so the evidence of a call must be produced where it cannot
reach. The shim client inside the sandbox (skill_eval.harness.shim) sends argv, cwd, environment and its
stdin/stdout/stderr descriptors over a per-run Unix socket; this module, running in the runner
process, checks the request, runs the real tool by absolute path (never a PATH lookup) with cwd in
the sandbox work tree, tees its streams to the agent's descriptors while persisting and digesting them
(runner/tee.py: big streams go capture first, the agent and the digest served from the capture), redirects declared outputs to private per-call locations in
its store and copies them back, digests every input operand before and after
the call, and keeps the call record (call format v2) in memory and in its store: both out of the
sandbox's view. Nothing inside the sandbox can create, edit or delete a record.

Fail closed: a request that cannot be read is no call; a recording that cannot be finished is a
`record_failed` call, the client exits with its infrastructure code, and `failures` makes the run
incomplete (runner/execute.py).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from skill_eval.core.formats import FORMATS
from skill_eval.core.vocab import CallStatus
from skill_eval.harness import shim
from skill_eval.harness.runner import fdtree
from skill_eval.harness.runner import outputs as out_mod
from skill_eval.harness.runner.client import CLIENT_MARKER
from skill_eval.harness.runner.operands import OUTSIDE, Refused, collect, discard_snapshot, inside, map_token, open_root
from skill_eval.harness.runner.outputs import OutputOptions, OutputRequest
from skill_eval.harness.runner.tee import Stream

# Functions that touch files directly: the recorder's own store and the sandbox tree it digests.
FILE_IO_HELPERS = ("_write_atomic", "_read_head", "_dir_fd")
EXIT_REFUSED = 2  # a refused call (cwd or output outside the sandbox); collides with abicheck's API_BREAK
EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE = 127, 126
PIPE_SIZE = 1 << 20
MAX_REQUEST = 1 << 22
REQUEST_TIMEOUT = 10.0
# the agent's variables the subject may always see (locale and terminal); a subject profile adds
# its own by name (`[subject] env`), never by prefix: everything else comes from the runner
FORWARDED_ENV = ("LANG", "LANGUAGE", "TZ", "COLUMNS", "LINES", "NO_COLOR", "TERM", "FORCE_COLOR")
STATE_DIRS = {"HOME": "home", "XDG_CACHE_HOME": "home/.cache", "XDG_CONFIG_HOME": "home/.config",
              "XDG_DATA_HOME": "home/.local/share", "XDG_STATE_HOME": "home/.local/state", "TMPDIR": "tmp"}



def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp.{threading.get_ident()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _read_head(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(4096)


def _dir_fd(path: str) -> int:
    """An O_PATH descriptor of a directory (binds a socket whose full path is over 108 bytes)."""
    return os.open(path, os.O_PATH | os.O_DIRECTORY)


def _special(path: str) -> bool:
    """Is there something at `path` (not followed) that is neither a regular file, a directory nor a
    link (a FIFO, socket or device): an output the recorder would block on or write into."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    with contextlib.suppress(OSError):
        import fcntl

        fcntl.fcntl(r, 1031, PIPE_SIZE)  # F_SETPIPE_SZ: fewer, larger reads for big outputs
    return r, w


class Recorder:
    """Serves one run's shim clients; `calls()` are the records, `failures` any recording failure.

    store: a runner-private directory (captured streams and snapshots, calls/N.json, the subject's
    own state); it must not be visible inside the sandbox. sandbox_root: the work tree on the host
    (cwd and outputs must stay inside). seen_root: the path under which the agent sees it (/work
    at the bwrap level, runner/layout.py; the host path below it). env: the base environment of
    the subject (its HOME/XDG/TMP are replaced by fresh directories in the store). prefix: argv
    put before the tool (e.g. setpriv --pdeathsig, so a runner killed with SIGKILL takes its
    subjects along). deny: trees the agent must not read (repository, store, runner home): an
    operand naming a path there is refused, since the tool runs outside the agent's view and
    would read it for the agent. jail: (snapshot, cwd, writable dirs, live) -> argv prefix of the
    subject's jail (isolation.subject_jail: the call's read-only snapshot of its operands, its own
    state and output directories, nothing else of any sandbox); None: no jail (levels uid/none).
    jail_root: the path at which the jail shows the snapshot (the agent's /work, so the subject reads
    and reports the very paths the agent named); None: the snapshot's host path.
    """

    def __init__(self, store: Path, profile: Any, real: Path, sandbox_root: Path, *, env: Mapping[str, str],
                 prefix: Sequence[str] = (), deny: Sequence[Path] = (), seen_root: str | None = None,
                 jail: Callable[[Path, str, list[str], bool], list[str]] | None = None, jail_root: str | None = None):
        real_s = os.fspath(real)
        if not os.path.isabs(real_s):
            raise ValueError(f"real tool path {real_s} must be absolute")
        if not (os.path.isfile(real_s) and os.access(real_s, os.X_OK)):
            raise ValueError(f"real tool {real_s} is not an executable file")
        if CLIENT_MARKER.encode() in _read_head(real_s):
            raise ValueError(f"real tool {real_s} is itself a skill-eval shim client")
        self.store, self.real = os.path.realpath(store), real_s
        self.subject = getattr(profile, "name", os.path.basename(real_s))
        self.options = OutputOptions.of(profile)
        self.root = os.path.realpath(sandbox_root)
        self.seen_root = (seen_root or self.root).rstrip("/") or "/"
        self.prefix = list(prefix)
        self.deny = [os.path.realpath(d) for d in deny]
        self.jail = jail
        self.jail_root = jail_root if jail is not None else None  # where the jail shows the snapshot (None: its host path)
        self.allowed_env = frozenset(FORWARDED_ENV) | frozenset(getattr(profile, "env", ()) or ())
        # "operands": the subject reads a read-only snapshot of its operands; "tree": a subject that reads its
        # project configuration and edits the tree (towncrier) runs on the live work tree (digests only)
        self.tree_mode = getattr(profile, "workspace", "operands") == "tree"
        for d in ("calls", "captured", "snap", *(f"subject/{v}" for v in STATE_DIRS.values())):
            os.makedirs(os.path.join(self.store, d), exist_ok=True)
        # the subject's own state: fresh, in the runner's store, never writable (or readable) by the agent
        self.state = os.path.join(self.store, "subject")
        self.env = {**env, **{k: os.path.join(self.state, v) for k, v in STATE_DIRS.items()}}
        self.records: dict[int, dict[str, Any]] = {}
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None
        self.socket_path: str | None = None

    # -- serving ---------------------------------------------------------------------------
    def listen(self, socket_path: Path) -> None:
        """Bind the per-run socket (world-connectable: a separate-uid agent must reach it)."""
        self.socket_path = os.fspath(socket_path)
        os.makedirs(os.path.dirname(self.socket_path), exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dir_fd = _dir_fd(os.path.dirname(self.socket_path))
        try:
            sock.bind(self.socket_path if len(self.socket_path) < 100
                      else f"/proc/self/fd/{dir_fd}/{os.path.basename(self.socket_path)}")
        finally:
            os.close(dir_fd)
        os.chmod(self.socket_path, 0o666)  # noqa: S103 - a separate-uid agent must connect
        sock.listen(128)
        self._listener = sock
        t = threading.Thread(target=self._accept, name="skill-eval-recorder", daemon=True)
        t.start()

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            with self._lock:
                self._threads.append(t)
            t.start()

    def close(self, timeout: float = 10.0) -> None:
        """Stop accepting, kill tools still running (their agent is gone) and wait for the records."""
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            children = list(self._children.values())
            threads = list(self._threads)
        for child in children:
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in threads):
            self.failures.append("a call was still being recorded when the run ended")

    def calls(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self.records[n] for n in sorted(self.records)]

    def _serve(self, conn: socket.socket) -> None:
        fds: list[int] = []
        try:
            try:
                conn.settimeout(REQUEST_TIMEOUT)  # a client that never finishes its request is no call
                argv, cwd, environ, fds = _read_request(conn)
                conn.settimeout(None)
            except (OSError, ValueError):
                return  # not a request: no call happened
            status = self.run_call(argv, cwd, environ, fds[0], fds[1], fds[2], control=conn)
            with contextlib.suppress(OSError):
                conn.sendall(status)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            conn.close()

    # -- one call --------------------------------------------------------------------------
    def run_call(self, argv: list[str], cwd: str, environ: Mapping[str, str], stdin: int, stdout: int, stderr: int,
                 control: socket.socket | None = None) -> bytes:
        """Run and record one call; returns the reply for the client (b"X<code>\\n" or b"E<why>\\n")."""
        t0, started = time.monotonic(), _now()
        argv = [os.path.basename(argv[0]) if argv else self.subject, *argv[1:]] if argv else [self.subject]
        with self._lock:
            number = len(self.records) + 1
            rec: dict[str, Any] = {
                "schema_version": FORMATS["call"], "call": number, "status": "provisional", "argv": argv,
                "cwd": self._rel(cwd), "started_at": started, "finished_at": None, "duration_ms": None,
                "exit_code": None, "signal": None, "stdout": None, "stderr": None, "outputs": [],
                "substitutions": {"stdout": 0, "stderr": 0}, "inputs": []}
            self.records[number] = rec
        requests: list[OutputRequest] = []
        snap = os.path.join(self.store, "snap", str(number))
        root_fd = -1
        try:
            try:
                root_fd = open_root(self.root)
                rel_cwd = self._cwd(cwd, root_fd)
                host_argv = [argv[0], *(map_token(a, self.seen_root, self.root) for a in argv[1:])]
                host_cwd = os.path.normpath(os.path.join(self.root, rel_cwd))
                requests = self._check(host_argv, host_cwd, number)
                rec["inputs"] = collect(host_argv, argv, host_cwd, {o.arg_index for o in requests}, root_fd, snap,
                                        root=self.root, deny=self.deny, copy=not self.tree_mode)
                rec["outputs"] = [out_mod.entry(o) for o in requests]
            except Refused as exc:
                _say(stderr, str(exc))
                self._finish(rec, t0, requests, "spawn_failed", root_fd)
                return b"X%d\n" % EXIT_REFUSED
            return self._run(rec, argv, rel_cwd, environ, requests, (stdin, stdout, stderr), t0, control, snap, root_fd)
        except Exception as exc:  # noqa: BLE001 - any recording failure is an infra error, never the tool's status
            why = f"recording of call {number} failed: {type(exc).__name__}: {exc}"
            rec["status"] = "record_failed"
            for entry in rec["inputs"]:
                entry.pop("_rel", None)
            rec["finished_at"], rec["duration_ms"] = _now(), int((time.monotonic() - t0) * 1000)
            with self._lock:
                self.failures.append(why)
            return b"E" + why.encode("utf-8", "replace").replace(b"\n", b" ") + b"\n"
        finally:
            if root_fd >= 0:
                os.close(root_fd)
            discard_snapshot(snap)

    def _rel(self, cwd: str) -> str:
        norm = os.path.normpath(cwd) if os.path.isabs(cwd) else None
        if norm is None or not (norm == self.seen_root or norm.startswith(self.seen_root.rstrip("/") + "/")):
            return OUTSIDE
        rel = os.path.relpath(norm, self.seen_root).replace(os.sep, "/")
        return "." if rel == os.curdir else rel

    def _cwd(self, cwd: str, root_fd: int) -> str:
        """The working directory relative to the work root, reached beneath it with no link on the way."""
        rel = self._rel(cwd)
        if rel == OUTSIDE:
            raise Refused(f"the working directory {cwd} is outside the sandbox work tree; refusing to run")
        try:
            os.close(fdtree.open_beneath(root_fd, rel, directory=True))
        except (fdtree.Unsafe, OSError):
            raise Refused(f"the working directory {cwd} is not a directory of the work tree reachable without a "
                          "symbolic link; refusing to run") from None
        return rel

    def _check(self, argv: list[str], cwd: str, number: int) -> list[OutputRequest]:
        requests = out_mod.parse_outputs(argv, self.options, cwd)
        out_mod.plan_outputs(requests, self.store, number, cwd)
        for o in requests:
            if o.target is not None and not inside(os.path.dirname(o.target) or o.target, self.root):
                raise Refused(f"output {o.requested} is outside the sandbox work tree; refusing to run")
            if o.target is not None and os.path.islink(o.target) and not inside(o.target, self.root):
                raise Refused(f"output {o.requested} is a link leaving the sandbox work tree; refusing to run")
            if o.target is not None and _special(o.target):
                raise Refused(f"output {o.requested} is not a regular file or directory (a FIFO, socket or device); "
                              "refusing to run")
        return requests

    def _run(self, rec: dict[str, Any], argv: list[str], rel_cwd: str, environ: Mapping[str, str],
             requests: list[OutputRequest], fds: tuple[int, int, int], t0: float,
             control: socket.socket | None, snap: str, root_fd: int) -> bytes:
        number = rec["call"]
        for o in requests:
            if o.private is not None:
                os.makedirs(o.private if o.kind == "dir" else os.path.dirname(o.private), exist_ok=True)
        env = {**self.env, **{k: v for k, v in environ.items() if k in self.allowed_env}}
        with contextlib.suppress(OSError):  # inside a read-only copied operand it exists already, or never will
            os.makedirs(os.path.join(snap, rel_cwd), exist_ok=True)
        writable = [o.private if o.kind == "dir" else os.path.dirname(o.private) for o in requests if o.private is not None]
        # The subject runs on the snapshot's host path: the operands the agent named under its work
        # root point into the snapshot, and the snapshot's path reads as the agent's in the streams.
        # A tree-mode subject runs the same way on the live work tree itself.
        base = self.root if self.tree_mode else snap
        shown = self.jail_root or base  # where the subject finds it: the agent's own /work in a jail, if it can
        child_argv = [argv[0], *(map_token(a, self.seen_root, shown) for a in argv[1:])]
        run_cwd = os.path.join(shown, rel_cwd) if rel_cwd != "." else shown
        mapping = {os.fsencode(shown): os.fsencode(self.seen_root)} if shown != self.seen_root else {}
        # a tree-mode subject edits the live tree: the jail shows it writable where the subject finds it
        prefix = self.jail(Path(base), run_cwd, [*writable, self.state], self.tree_mode) if self.jail is not None else []
        if self.jail is not None:
            run_cwd = base  # the jail's --chdir sets the subject's own; bwrap itself starts from a host directory
        (out_r, out_w), (err_r, err_w) = _pipe(), _pipe()
        try:
            child = subprocess.Popen([*prefix, *self.prefix, self.real, *out_mod.rewrite_argv(child_argv, requests)[1:]],
                                     cwd=run_cwd, env=env, stdin=fds[0], stdout=out_w, stderr=err_w,
                                     start_new_session=True)
        except OSError as exc:
            os.close(out_r)
            os.close(err_r)
            _say(fds[2], f"cannot run {argv[0]}: {exc.strerror}")
            self._finish(rec, t0, requests, "spawn_failed", root_fd)
            return b"X%d\n" % (EXIT_NOT_FOUND if isinstance(exc, FileNotFoundError) else EXIT_NOT_EXECUTABLE)
        finally:
            os.close(out_w)
            os.close(err_w)
        with self._lock:
            self._children[number] = child
        cap = os.path.join(self.store, "captured", str(number))
        mapping = {**mapping, **out_mod.substitution_map(requests)}
        streams: list[Stream] = []
        try:
            streams.append(Stream(out_r, fds[1], cap + ".out", mapping))  # each Stream owns its pipe from here
            streams.append(Stream(err_r, fds[2], cap + ".err", mapping))
            _pump_all(streams, child, control)
            code = child.wait()
        except BaseException:  # a tool must never outlive a call the recorder gave up on
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
            for stream in streams:
                with contextlib.suppress(Exception):  # the child must still be reaped below
                    stream.close()
            for fd in (out_r, err_r)[len(streams):]:  # the pipes no Stream took over
                with contextlib.suppress(OSError):
                    os.close(fd)
            child.wait()
            raise
        finally:
            with self._lock:
                self._children.pop(number, None)
        signum = -code if code < 0 else None
        rec["exit_code"], rec["signal"] = (128 + signum if signum else code), signum
        rec["stdout"], rec["stderr"] = _results(streams, f"captured/{number}")
        rec["substitutions"] = {"stdout": streams[0].subst.count, "stderr": streams[1].subst.count}
        rec["outputs"] = out_mod.collect_outputs(requests, signum is not None, self.root)
        self._finish(rec, t0, None, "complete", root_fd)
        return b"X%d\n" % rec["exit_code"]

    def _finish(self, rec: dict[str, Any], t0: float, requests: list[OutputRequest] | None, status: CallStatus,
                root_fd: int = -1) -> None:
        """Final input digests, timing, and the record written to the store (atomically).

        `stable`: the live operand still holds the bytes the subject read (its snapshot), read again
        beneath the work root. The subject never read the live tree; the graders still treat an unstable
        input as no evidence (the agent changed what it asked about while asking)."""
        if requests is not None:  # the tool never ran
            out_mod.discard_private(requests)
            rec["outputs"] = [out_mod.entry(o) for o in requests]
        for entry in rec["inputs"]:
            rel = entry.pop("_rel", None)
            if rel is not None:
                try:
                    entry["stable"] = root_fd >= 0 and fdtree.digest(root_fd, rel) == (entry["kind"], entry["sha256"])
                except (OSError, fdtree.Unsafe):
                    entry["stable"] = False
        snapdir = os.path.join(self.store, "captured", f"{rec['call']}.out.d")
        if os.path.isdir(snapdir) and not os.listdir(snapdir):
            os.rmdir(snapdir)  # its absence means exactly "nothing snapshotted"
        rec["finished_at"], rec["duration_ms"] = _now(), int((time.monotonic() - t0) * 1000)
        import json

        rec["status"] = status
        data = (json.dumps(rec, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        _write_atomic(os.path.join(self.store, "calls", f"{rec['call']}.json"), data)


def _results(streams: list[Stream], stem: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both streams' record entries; every stream is released even when one fails (the first error is raised)."""
    got: list[dict[str, Any]] = []
    error: OSError | None = None
    for stream, suffix in zip(streams, (".out", ".err"), strict=True):
        try:
            got.append(stream.result(stem + suffix))
        except OSError as exc:
            error = error or exc
    if error is not None:
        raise error
    return got[0], got[1]


def _say(fd: int, message: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, f"skill-eval shim: {message}\n".encode("utf-8", "replace"))


def _pump_all(streams: list[Stream], child: subprocess.Popen[bytes], control: socket.socket | None) -> None:
    """Copy both streams until EOF; a signal from the client goes to the tool, a vanished client kills it."""
    poller = select.poll()
    live: dict[int, Stream] = {s.src: s for s in streams}
    for fd in live:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    ctl = control.fileno() if control is not None else -1
    if ctl >= 0:
        poller.register(ctl, select.POLLIN | select.POLLHUP | select.POLLERR)
    buf = b""
    while live:
        for fd, _event in poller.poll():
            if fd == ctl:
                try:
                    data = control.recv(64)  # type: ignore[union-attr]  # fd == ctl >= 0: control is not None
                except OSError:
                    data = b""
                if not data:  # the client is gone (killed): its tool must not outlive it
                    poller.unregister(ctl)
                    ctl = -1
                    with contextlib.suppress(OSError):
                        os.killpg(child.pid, signal.SIGKILL)
                    continue
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line[:1] == b"S" and line[1:].isdigit():
                        with contextlib.suppress(OSError, ValueError):
                            os.kill(child.pid, int(line[1:]))
                continue
            stream = live.get(fd)
            if stream is None:
                continue
            stream.pump()
            if not stream.open:
                poller.unregister(fd)
                del live[fd]


def _read_request(conn: socket.socket) -> tuple[list[str], str, dict[str, str], list[int]]:
    """One framed request (shim.encode_request) and the three descriptors passed with it."""
    msg, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
    for fd in fds:
        os.set_inheritable(fd, False)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request carries exactly three descriptors")
    try:
        while len(msg) < 8:
            more = conn.recv(65536)
            if not more:
                raise ValueError("truncated request")
            msg += more
        size = int(msg[:8])
        if size > MAX_REQUEST:
            raise ValueError("request too large")
        while len(msg) < 8 + size:
            more = conn.recv(min(1 << 20, 8 + size - len(msg)))
            if not more:
                raise ValueError("truncated request")
            msg += more
        parts = msg[8:8 + size].split(b"\0")
        if parts[0] != shim.PROTOCOL or len(parts) < 3 or not parts[2].isdigit():
            raise ValueError("not a shim request")
        argc = int(parts[2])
        argv = [os.fsdecode(a) for a in parts[3:3 + argc]]
        env = {}
        for item in parts[3 + argc:]:
            key, sep, value = item.partition(b"=")
            if sep:
                env[os.fsdecode(key)] = os.fsdecode(value)
        return argv, os.fsdecode(parts[1]), env, list(fds)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def record_call(recorder: Recorder, argv: list[str], cwd: Path, *,
                stdin: bytes = b"") -> tuple[dict[str, Any], bytes, bytes]:
    """Record one call from the runner side, without an agent or a client (scripts/make_golden.py):
    -> (record, stdout, stderr). Calls on one Recorder are numbered 1, 2, ... in order."""
    import tempfile

    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        fin.write(stdin)
        fin.seek(0)
        reply = recorder.run_call(list(argv), os.fspath(cwd), {}, fin.fileno(), fout.fileno(), ferr.fileno())
        if reply.startswith(b"E"):
            raise OSError(reply[1:].decode("utf-8", "replace").strip())
        fout.seek(0)
        ferr.seek(0)
        return recorder.calls()[-1], fout.read(), ferr.read()
