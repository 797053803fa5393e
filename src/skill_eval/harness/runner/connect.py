"""The allowed-hosts CONNECT proxy: the sandbox's only way out besides the credential proxy.

A scenario may declare hosts its task itself needs (`network_hosts` in scenarios.yaml: `host` or
`host:port`, port 443 by default; none by default). For such a run the runner starts this proxy on
a Unix socket in the sandbox's run/ directory; the bridge inside relays `127.0.0.1:CONNECT_PORT` to
it and the agent gets HTTPS_PROXY/HTTP_PROXY pointing there (runner/network.py). It answers exactly
one kind of request, `CONNECT host:port`, for exactly the declared pairs, and then tunnels bytes both
ways (TLS stays end to end: it sees no plaintext and holds no credential). Anything else (another
host or port, another method, a malformed request) is a 403 and listed in `refusals` (the runner
writes a `policy_violation` event). A declared host that cannot be reached is a 502 (counted as
`failed`, not the agent's doing), and so is one that resolves to a loopback, link-local or
unspecified address: the runner's own services are never a task's host.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import socketserver
import threading
from contextlib import suppress
from typing import Any

_HEAD_MAX = 8192
_CHUNK = 1 << 16
MAX_LISTED = 20


def parse_host(entry: str) -> tuple[str, int]:
    """`host` or `host:port` -> (host, port); port 443 by default."""
    host, _, port = entry.strip().lower().partition(":")
    return host, int(port) if port else 443


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    with suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        proxy = self.server.proxy
        head = b""
        while b"\r\n\r\n" not in head and len(head) < _HEAD_MAX:
            chunk = self.request.recv(_HEAD_MAX - len(head))
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split()
        target = parts[1] if len(parts) == 3 and parts[0] == "CONNECT" else None
        if target is None or not proxy._declared(target):
            proxy._refuse(line[:200] or "(empty request)")
            self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        upstream = proxy._open(target)
        if upstream is None:  # declared, but unreachable (or resolving to the runner's own host): not the agent's doing
            proxy._count("failed")
            self.request.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        with upstream:
            self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            rest = head.split(b"\r\n\r\n", 1)[1]
            if rest:
                upstream.sendall(rest)
            back = threading.Thread(target=_pump, args=(upstream, self.request), daemon=True)
            back.start()
            _pump(self.request, upstream)
            back.join()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, proxy: ConnectProxy, path: str) -> None:
        self.proxy = proxy
        super().__init__(path, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that went away is not the runner's error, and stderr belongs to the run."""


class ConnectProxy:
    """One run's CONNECT proxy to `hosts` (see the module docstring): `start(unix)`, `stop()`."""

    def __init__(self, hosts: tuple[str, ...], *, timeout: float = 30.0, allow_loopback: bool = False) -> None:
        self.hosts = tuple(hosts)
        self.allowed = {parse_host(h) for h in hosts}
        self.timeout = timeout
        self.allow_loopback = allow_loopback  # tests only: a loopback stub stands in for a task's host
        self.refusals: list[str] = []
        self._stats = {"tunnels": 0, "refused": 0, "failed": 0}
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._path: str | None = None

    @property
    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._stats)

    def start(self, unix: str) -> ConnectProxy:
        self._server, self._path = _Server(self, unix), unix
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         name="skill-eval-connect", daemon=True).start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._path is not None:
            with suppress(OSError):
                os.unlink(self._path)
            self._path = None

    def _refuse(self, what: str) -> None:
        with self._lock:
            self._stats["refused"] += 1
            if len(self.refusals) < MAX_LISTED:
                self.refusals.append(what)

    def _count(self, what: str) -> None:
        with self._lock:
            self._stats[what] += 1

    def _declared(self, target: str) -> bool:
        host, _, port = target.lower().rpartition(":")
        return port.isdigit() and (host, int(port)) in self.allowed

    def _open(self, target: str) -> socket.socket | None:
        """A connection to the declared `target` (host:port), unless it resolves to the runner's own host."""
        host, _, port = target.lower().rpartition(":")
        try:
            infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except OSError:
            return None
        for family, kind, proto, _, addr in infos:
            ip = ipaddress.ip_address(addr[0])
            if not self.allow_loopback and (ip.is_loopback or ip.is_link_local or ip.is_unspecified):
                continue
            sock = socket.socket(family, kind, proto)
            sock.settimeout(self.timeout)
            try:
                sock.connect(addr)
            except OSError:
                sock.close()
                continue
            sock.settimeout(None)
            self._count("tunnels")
            return sock
        return None
