"""A loopback credential proxy: the provider API key never enters the agent's sandbox.

Why: anything the agent can read it can print, encode or send somewhere, and redaction keyed on a
list of forms (runner/secrets.py) can never be complete: one more encoding, one more file the
agent wrote outside the bundle, and the key is out. So the real key stays in the runner. For one
run the runner starts a CredentialProxy on 127.0.0.1, points the agent CLI's base-URL setting at
`proxy.url` and gives it `proxy.token` (a per-run random value, useless anywhere else and dead
once the proxy stops) as its "API key".

What it does with each request: it accepts it only if every credential it carries (`x-api-key`,
`Authorization: Bearer`, `x-goog-api-key`, a `key=` query parameter) equals the token, and at
least one does; anything else is a 401 and nothing is forwarded. It removes every auth carrier
(those, `cookie`, `proxy-authorization`), puts the real credential back in the form the client
used, and forwards method, path and body to the upstream (its path prefix + the request path).
The response status, headers and body come back as they arrive, chunk by chunk, so server-sent
events are not held up. An unreachable upstream is a 502. Standard library only; no files.
"""

from __future__ import annotations

import hmac
import http.client
import json
import secrets
import socket
import socketserver
import ssl
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote_plus, urlsplit

TOKEN_PREFIX = "skill-eval-proxy-"  # noqa: S105 - a marker for redaction and scans, not a secret
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "host"})
_KEY_HEADERS = ("x-api-key", "x-goog-api-key")  # the header's whole value is the key
_STRIPPED = frozenset({*_KEY_HEADERS, "authorization", "cookie", "expect", "content-length"})
_CHUNK = 1 << 16
MAX_CONCURRENT = 16  # requests in flight (an agent CLI makes a few)
_BODY_MAX = 64 << 20  # a longer request body is refused unread (the connection is closed after the answer)


@dataclass(frozen=True)
class Upstream:
    url: str  # scheme://host[:port][/path prefix], e.g. "https://generativelanguage.googleapis.com/v1beta"
    credential: str | None = field(repr=False)  # the real key; None = forward without any credential


def _end_to_end(headers: list[tuple[str, str]], drop: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """`headers` without the hop-by-hop ones (those named in a Connection header too) and without `drop`."""
    listed = {t.strip().lower() for k, v in headers if k.lower() == "connection" for t in v.split(",")}
    return [(k, v) for k, v in headers if (n := k.lower()) not in _HOP_BY_HOP and n not in listed
            and n not in drop and not n.startswith("proxy-")]


def _swap_query_key(query: str, credential: str | None) -> tuple[list[str], str]:
    """The values of the `key` parameters, and the query with the credential in place of the first (or none)."""
    keys: list[str] = []
    out: list[str] = []
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        if unquote_plus(name) != "key":
            out.append(part)
            continue
        if credential is not None and not keys:
            out.append("key=" + quote(credential, safe=""))
        keys.append(unquote_plus(value))
    return keys, "&".join(out)


def _cut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, proxy: CredentialProxy) -> None:
        self.proxy = proxy
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:  # HTTPServer's would look up the host's FQDN; nothing here needs it
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that went away (an OSError out of a handler: its connection is closed) is not
        the runner's error, and stderr belongs to the run."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.proxy.timeout)
        self.server.proxy._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.proxy._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet (see _Server.handle_error)."""

    def do_GET(self) -> None:
        slots = self.server.proxy._slots
        if not slots.acquire(blocking=False):  # bounded: each request may buffer a body of up to _BODY_MAX
            self._error(503, f"more than {MAX_CONCURRENT} requests at once")
            return
        try:
            self._relay()
        finally:
            slots.release()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _head(self, status: int, reason: str | None, headers: list[tuple[str, str]]) -> None:
        self.send_response_only(status, reason)
        for name, value in headers:
            self.send_header(name, value)  # "Connection: close" also sets close_connection
        self.end_headers()  # writes the head at once; wfile is unbuffered, so every write below is sent as made

    def _error(self, status: int, message: str) -> None:
        body = json.dumps({"error": {"type": "skill_eval_proxy", "message": message}}).encode()
        self._head(status, None, [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                  ("Connection", "close")])
        self.close_connection = True
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forms(self, keys: list[str]) -> set[str] | None:
        """The carriers the token came in, or None if the request is refused (no token, or any other value)."""
        presented = [(h, v) for h in _KEY_HEADERS for v in self.headers.get_all(h) or []] + [("key", k) for k in keys]
        for value in self.headers.get_all("authorization") or []:
            scheme, _, rest = value.strip().partition(" ")
            presented.append(("bearer", rest.strip()) if scheme.lower() == "bearer" else ("other", value))
        if not presented or not all(self.server.proxy._is_token(v) for _, v in presented):
            return None
        return {form for form, _ in presented}

    def _read_body(self) -> bytes | None:
        """The request body (chunked decoded), b"" for none; None if it is malformed or too long."""
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            body = bytearray()
            while size := int(self.rfile.readline(1 << 12).split(b";")[0], 16):  # ValueError if malformed
                chunk = self.rfile.read(size) if len(body) + size <= _BODY_MAX else b""
                if len(chunk) != size or self.rfile.readline(1 << 12).strip():
                    return None
                body += chunk
            while self.rfile.readline(1 << 12) not in (b"\r\n", b"\n", b""):
                pass  # trailers: dropped
            return bytes(body)
        length = int(self.headers.get("content-length") or 0)
        body_bytes = self.rfile.read(length) if 0 < length <= _BODY_MAX else b""
        return body_bytes if length >= 0 and len(body_bytes) == length else None

    def _relay(self) -> None:
        """One request. An OSError toward the client ends the connection (quietly, _Server.handle_error)."""
        proxy, cred = self.server.proxy, self.server.proxy.upstream.credential
        path, _, query = self.path.partition("?")
        keys, query = _swap_query_key(query, cred)
        forms = self._forms(keys)
        if forms is None:
            proxy._count("refused")
            with proxy._lock:
                if len(proxy.refusals) < 20:  # what was refused, never a value: method, path, carriers present
                    carriers = sorted({h for h in (*_KEY_HEADERS, "authorization") if h in self.headers} | ({"key"} if keys else set()))
                    proxy.refusals.append(f"{self.command} {path} [{' '.join(carriers) or 'no credential'}]")
            # not read: a refused client may not make the runner buffer its body (the connection closes after the 401)
            return self._error(401, "this proxy accepts only the run's token; no other credential is forwarded")
        target = proxy._prefix + path + (f"?{query}" if query else "")
        try:
            body = self._read_body() if path.startswith("/") and target.isascii() else None
        except ValueError:
            body = None
        if body is None:
            return self._error(400, "malformed request (or a body over the size limit)")
        headers = _end_to_end(self.headers.items(), _STRIPPED)
        if cred is not None:
            headers += [(h, cred) for h in _KEY_HEADERS if h in forms]
            headers += [("Authorization", f"Bearer {cred}")] if "bearer" in forms else []
        conn = proxy._connect()
        try:
            try:
                conn.putrequest(self.command, target,
                                skip_accept_encoding=any(k.lower() == "accept-encoding" for k, _ in headers))
                for name, value in headers:
                    conn.putheader(name, value)
                if body or self.command in ("POST", "PUT", "PATCH"):
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body or None)
                response = conn.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                proxy._count("upstream_errors")
                return self._error(502, f"upstream request failed: {type(exc).__name__}")
            proxy._count("forwarded")
            self._stream(response)
        finally:
            conn.close()

    def _stream(self, response: http.client.HTTPResponse) -> None:
        """Relay status, headers and body as they arrive; a body without a length goes out chunked."""
        status, length = response.status, response.length  # length None: upstream chunked, or until close
        no_body = self.command == "HEAD" or status in (204, 304) or status < 200
        chunked = not no_body and length is None and self.request_version != "HTTP/1.0"
        headers = _end_to_end(response.getheaders(), frozenset({"content-length"} if length is None else ()))
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        elif not no_body and length is None:  # an HTTP/1.0 client: the end of the body is the end of the connection
            headers.append(("Connection", "close"))
        self._head(status, response.reason, headers)
        sent = 0
        while not no_body:
            try:
                chunk = response.read1(_CHUNK)
            except (OSError, http.client.HTTPException):
                chunk = None
            if chunk is None or (not chunk and length is not None and sent != length):
                self.server.proxy._count("upstream_errors")  # cut short: no final chunk, so the client sees it
                self.close_connection = True
                return
            if not chunk:
                break
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            self.wfile.flush()
            sent += len(chunk)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


class CredentialProxy:
    """One run's proxy: `start()` (or `with`), hand `url` and `token` to the agent, `stop()`."""

    def __init__(self, upstream: Upstream, *, token: str | None = None, timeout: float = 600.0) -> None:
        parts = urlsplit(upstream.url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment \
                or parts.username is not None:
            raise ValueError(f"upstream must be http(s)://host[:port][/prefix], got {upstream.url!r}")
        for what, value in (("credential", upstream.credential), ("token", token)):
            if value is not None and not (value.isascii() and value.isprintable() and value.strip()):
                raise ValueError(f"the {what} must be non-empty printable ASCII")  # it goes into a header
        self.upstream = upstream
        self.token = token if token is not None else TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.timeout = timeout
        self._token_bytes = self.token.encode()
        self._tls = ssl.create_default_context() if parts.scheme == "https" else None  # verifies certificates
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)
        self._stats = {"forwarded": 0, "refused": 0, "upstream_errors": 0}
        self.refusals: list[str] = []  # the first refused requests: method, path and which carriers they had
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._stopped = False

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the proxy has not been started")
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def stats(self) -> dict[str, int]:
        """Requests forwarded (an upstream answer began), refused (401), upstream_errors (502, or a relayed
        body cut short: such a request counts as forwarded too)."""
        with self._lock:
            return dict(self._stats)

    def start(self) -> CredentialProxy:
        with self._lock:
            if self._stopped:
                raise RuntimeError("a stopped proxy cannot be restarted; make a new one (a new token)")
            if self._server is None:
                self._server = _Server(self)
                threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                 name="skill-eval-proxy", daemon=True).start()
        return self

    def stop(self) -> None:
        """Close the listener and every open connection (a stream still running is cut). Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            server, connections = self._server, list(self._connections)
        if server is not None:
            server.shutdown()  # returns once the accept loop has ended
            server.server_close()
        for sock in connections:
            _cut(sock)

    def __enter__(self) -> CredentialProxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _is_token(self, value: str) -> bool:
        return hmac.compare_digest(value.encode("utf-8", "surrogateescape"), self._token_bytes)

    def _count(self, what: str) -> None:
        with self._lock:
            self._stats[what] += 1

    def _track(self, sock: socket.socket, *, add: bool) -> None:
        with self._lock:
            if not add:
                self._connections.discard(sock)
                return
            if not self._stopped:
                self._connections.add(sock)
                return
        _cut(sock)  # accepted just as stop() swept the connections

    def _connect(self) -> http.client.HTTPConnection:
        if self._tls is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout, context=self._tls)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
