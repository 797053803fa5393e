"""The sandbox's one way out: a loopback TCP port inside, a Unix socket of the runner outside.

At the bwrap level the agent runs in its own network namespace (`--unshare-net`): the only
interface is its own loopback, so no host loopback service, no host abstract Unix socket and no
outside host is reachable. The agent CLIs still need a TCP base URL, so this program, run by the
sandbox's own interpreter (`python -I -S bridge.py ...`, standard library only: no import of
skill_eval, no site packages), listens on fixed 127.0.0.1 ports inside the namespace *before* the
agent starts, then starts the agent as its child and relays every connection it accepts, byte for
byte, to the path-named Unix socket of the runner's credential proxy (or of an allowed-hosts
CONNECT proxy) bound read-only into the sandbox. It also sets the agent's resource limits
(processes, file size, memory) before the agent starts, and exits with the agent's exit status.

This file is copied into the sandbox's read-only agent directory; the runner never imports it to
run it (runner/network.py builds the command line). It starts with every agent, so it imports only
C modules (`_socket`, `_thread`, `resource`): the `socket`/`threading` wrappers would double its
start-up cost.

    python -I -S bridge.py [--limit NAME=N]... [--listen PORT=SOCKET]... -- AGENT ARGV...
"""

from __future__ import annotations

import _socket
import _thread
import os
import resource
import sys

LIMITS = {"nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE, "data": resource.RLIMIT_DATA}
_CHUNK = 1 << 16


def _pump(src: _socket.socket, dst: _socket.socket, done: _thread.LockType | None = None) -> None:
    """Copy src to dst until src ends; then half-close dst (the other direction may still run)."""
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(_socket.SHUT_WR)
    except OSError:
        pass
    if done is not None:
        done.release()


def _relay(client: _socket.socket, path: str) -> None:
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(_pump, (upstream, client, done))
    _pump(client, upstream)
    done.acquire()  # the answer has been relayed too
    client.close()
    upstream.close()


def _serve(listener: _socket.socket, path: str) -> None:
    while True:
        try:
            fd, _ = listener._accept()  # type: ignore[attr-defined]  # the C accept that socket.socket.accept wraps
        except OSError:
            return
        _thread.start_new_thread(_relay, (_socket.socket(fileno=fd), path))


def _parse(argv: list[str]) -> tuple[dict[str, int], list[tuple[int, str]], list[str]]:
    limits: dict[str, int] = {}
    listens: list[tuple[int, str]] = []
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag, value = argv[i], argv[i + 1] if i + 1 < len(argv) else ""
        key, _, rest = value.partition("=")
        if flag == "--limit" and key in LIMITS and rest.isdigit():
            limits[key] = int(rest)
        elif flag == "--listen" and key.isdigit() and rest.startswith("/"):
            listens.append((int(key), rest))
        else:
            raise SystemExit(f"skill-eval bridge: bad argument {flag} {value!r}")
        i += 2
    agent = argv[i + 1:]
    if not agent:
        raise SystemExit("skill-eval bridge: no agent command after --")
    return limits, listens, agent


def main(argv: list[str]) -> int:
    limits, listens, agent = _parse(argv)
    listeners = []
    for port, path in listens:  # bound and listening before the agent exists: its first connect is queued
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
        listeners.append((sock, path))
    for name, value in limits.items():
        resource.setrlimit(LIMITS[name], (value, value))
    pid = os.fork() if listeners else 0  # nothing to relay: the limits set, the bridge becomes the agent
    if pid == 0:  # the agent: the listeners are close-on-exec, so it holds none of them
        try:
            os.execvp(agent[0], agent)  # noqa: S606 - the agent's own argv, as the runner built it
        except OSError as exc:
            os.write(2, f"skill-eval bridge: cannot start {agent[0]}: {exc.strerror}\n".encode())
            os._exit(127)
    for sock, path in listeners:
        _thread.start_new_thread(_serve, (sock, path))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal: end the same way, so the runner sees what the agent saw
        import signal

        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
