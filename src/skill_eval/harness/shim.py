"""The in-sandbox shim client (DESIGN §7): an executable named like the subject, first on the sandbox PATH.

Why it is only a client: the agent under test is an adversary, and anything that runs inside its
sandbox can be imitated or edited by it. So this script records nothing and runs nothing. It hands
the call (argv, cwd, environment) and its own stdin/stdout/stderr file descriptors to the runner's
recorder (skill_eval.harness.runner.recorder) over a per-run Unix socket, then waits for the exit status.
The recorder, outside the sandbox, runs the real tool with those descriptors, so the streams reach
the agent byte for byte without passing through this process; the evidence of the call exists only
in the recorder's store. A call that did not come through the socket does not exist.

Signals the shim receives (SIGTERM, SIGINT, SIGHUP, SIGQUIT) are sent to the recorder, which
delivers them to the tool; the shim exits with the tool's exact status (128+N for signal N). When
the socket is unreachable or the recorder reports a failure, the shim exits EXIT_INFRA with one line:
an infrastructure error, never mistaken for the tool's own exit status.

Speed: this runs on every tool call, started with `-I -S`, and imports only `posix`, `_signal` and
`_socket` (not `os`, which costs ~2 ms without site; no `socket`/`signal` wrappers that pull in enum;
no json/re/hashlib/subprocess); the request is NUL-separated bytes behind a length prefix
(docs/ARCHITECTURE.md). The installer (runner/recorder.py) copies this file with SOCKET_PATH filled
in and precompiles it.
"""

import _signal
import _socket
import posix
import sys

SOCKET_PATH = ""  # filled in by skill_eval.harness.runner.client.install_client
PROTOCOL = b"SE1"
EXIT_INFRA = 125  # the recorder could not run or record the call (not the tool's status)
# The runner finds this in the transcript: the run's recording failed. Built by concatenation so that
# an agent reading this file (`cat $(which abicheck)`) does not print the marker itself.
INFRA_MARKER = "skill-eval shim: [" + "infra] "
FORWARDED_SIGNALS = (15, 2, 1, 3)  # SIGTERM, SIGINT, SIGHUP, SIGQUIT
FILE_IO_HELPERS = ("_std_fds", "short_path")  # the only file access: /dev/null, the socket's directory


def _fail(message: str) -> int:
    try:
        posix.write(2, (INFRA_MARKER + message + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
    return EXIT_INFRA


def _std_fds() -> list[int]:
    """fds 0-2, with /dev/null standing in for a closed one (a closed fd cannot be passed)."""
    fds = []
    for fd in (0, 1, 2):
        try:
            posix.fstat(fd)
        except OSError:
            fd = posix.open("/dev/null", posix.O_RDWR)
        fds.append(fd)
    return fds


def short_path(path: str) -> str:
    """A socket path within the 108-byte limit: a long one goes through /proc/self/fd/<dir fd>/."""
    if len(path) < 100:
        return path
    head, _, name = path.rpartition("/")
    fd = posix.open(head or "/", posix.O_PATH | posix.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{name}"


def encode_request(argv: list[str], cwd: bytes, environ: dict[bytes, bytes]) -> bytes:
    """PROTOCOL, cwd, argc, argv..., env entries, NUL-separated, behind an 8-digit length.
    cwd and environ are bytes (posix.getcwdb, posix.environ); argv is str (sys.argv)."""
    parts = [PROTOCOL, cwd, str(len(argv)).encode()]
    parts += [a.encode("utf-8", "surrogateescape") for a in argv]
    parts += [k + b"=" + v for k, v in environ.items()]
    body = b"\0".join(parts)
    return b"%08d" % len(body) + body


def main(argv: list[str], socket_path: str) -> int:
    try:
        cwd = posix.getcwdb()
    except OSError as exc:
        return _fail("cannot read the working directory: " + str(exc))
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(short_path(socket_path))
        fds = _std_fds()
        request = encode_request(argv, cwd, posix.environ)
        ancillary = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
        sent = sock.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, ancillary)])
        if sent < len(request):
            sock.sendall(request[sent:])
    except OSError as exc:
        return _fail("the recorder is unreachable (" + str(exc) + "); the call was not run")

    def forward(signum: int, _frame: object) -> None:
        try:
            sock.sendall(b"S%d\n" % signum)
        except OSError:
            pass

    for sig in FORWARDED_SIGNALS:
        _signal.signal(sig, forward)
    reply = b""
    while not reply.endswith(b"\n"):
        try:
            chunk = sock.recv(4096)
        except OSError as exc:
            return _fail("lost the recorder (" + str(exc) + ")")
        if not chunk:
            return _fail("the recorder closed the connection without a status; the call is not recorded")
        reply += chunk
    kind, text = reply[:1], reply[1:-1]
    if kind == b"X" and text.isdigit():
        return int(text)
    return _fail(text.decode("utf-8", "replace") or "malformed reply from the recorder")


if __name__ == "__main__":
    sys.exit(main(sys.argv, SOCKET_PATH))
