"""runner/proxy.py: the agent gets a per-run token, the upstream gets the real key, and nothing else passes.

A tiny upstream on loopback records what it received (method, path, headers, body) and answers
JSON or a server-sent-event stream with a pause between events; clients are plain http.client."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from skill_eval.harness.runner import proxy as proxy_module
from skill_eval.harness.runner.proxy import TOKEN_PREFIX, CredentialProxy, Upstream

REAL = "sk-real-credential-0123456789abcdef"
AUTH_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "cookie", "proxy-authorization")


@dataclass
class Seen:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name]


@dataclass
class Behaviour:
    mode: str = "json"  # json | sse | status
    status: int = 200
    events: list[bytes] = field(default_factory=list)
    delay: float = 0.0


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _UpstreamServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        if "chunked" in (self.headers.get("transfer-encoding") or ""):
            body = bytearray()
            while size := int(self.rfile.readline().split(b";")[0], 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            body = bytearray(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.server.seen.append(Seen(self.command, self.path, list(self.headers.items()), bytes(body)))
        b = self.server.behaviour
        if b.mode == "sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i, event in enumerate(b.events):
                if i:
                    time.sleep(b.delay)
                try:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                except OSError:
                    return
            self.wfile.write(b"0\r\n\r\n")
            return
        payload = json.dumps({"ok": True, "sha256": hashlib.sha256(body).hexdigest()}).encode()
        self.send_response(b.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Request-Id", "req-42")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _any


class _UpstreamServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Upstream)
        self.seen: list[Seen] = []
        self.behaviour = Behaviour()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[_UpstreamServer]:
    server = _UpstreamServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _base(server: _UpstreamServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def proxy(upstream: _UpstreamServer) -> Iterator[CredentialProxy]:
    with CredentialProxy(Upstream(_base(upstream), REAL), timeout=5) as p:
        yield p


def _request(proxy: CredentialProxy, method: str = "GET", path: str = "/v1/messages",
             headers: dict[str, str] | None = None, body: Any = None, **kw: Any) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]), timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {}, **kw)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _carrier(form: str, value: str) -> tuple[str, dict[str, str]]:
    """(path, headers) carrying `value` the way one agent CLI does."""
    return {"x-api-key": ("/v1/messages", {"x-api-key": value}),
            "bearer": ("/v1/chat/completions", {"Authorization": f"Bearer {value}"}),
            "x-goog-api-key": ("/models/m:generateContent", {"x-goog-api-key": value}),
            "query": (f"/models/m:generateContent?alt=json&key={value}", {})}[form]


FORMS = ("x-api-key", "bearer", "x-goog-api-key", "query")


@pytest.mark.parametrize("form", FORMS)
def test_the_token_is_swapped_for_the_real_credential_in_the_same_form(upstream, proxy, form):
    path, headers = _carrier(form, proxy.token)
    status, resp_headers, body = _request(proxy, path=path, headers={
        **headers, "Cookie": f"t={proxy.token}", "Proxy-Authorization": f"Basic {proxy.token}",
        "Connection": "keep-alive, X-Hop", "X-Hop": "1", "anthropic-version": "2023-06-01"})
    assert status == 200 and json.loads(body)["ok"] is True
    assert resp_headers["x-request-id"] == "req-42"
    [seen] = upstream.seen
    expected = {"x-api-key": ("x-api-key", REAL), "bearer": ("authorization", f"Bearer {REAL}"),
                "x-goog-api-key": ("x-goog-api-key", REAL)}.get(form)
    auth = [(k.lower(), v) for k, v in seen.headers if k.lower() in AUTH_HEADERS]
    assert auth == ([expected] if expected else [])
    if form == "query":
        assert seen.path == f"/models/m:generateContent?alt=json&key={REAL}"
    else:
        assert seen.path == path
    assert proxy.token not in repr(seen)
    assert seen.header("anthropic-version") == ["2023-06-01"]
    assert seen.header("x-hop") == [] and seen.header("connection") in ([], ["close"])  # hop-by-hop: not forwarded
    assert seen.header("host") == [f"127.0.0.1:{upstream.server_address[1]}"]
    assert proxy.stats == {"forwarded": 1, "refused": 0, "upstream_errors": 0}


@pytest.mark.parametrize("form", FORMS)
def test_no_credential_upstream_sees_no_auth_at_all(upstream, form):
    with CredentialProxy(Upstream(_base(upstream), None)) as proxy:
        path, headers = _carrier(form, proxy.token)
        status, _, _ = _request(proxy, path=path, headers=headers)
    assert status == 200
    [seen] = upstream.seen
    assert [k for k, _ in seen.headers if k.lower() in AUTH_HEADERS] == []
    assert "key=" not in seen.path and proxy.token not in repr(seen)


@pytest.mark.parametrize("headers,path", [
    ({}, "/v1/messages"),  # missing
    ({"x-api-key": "skill-eval-proxy-not-the-token"}, "/v1/messages"),  # wrong token
    ({"x-api-key": "sk-ant-api03-" + "A" * 80}, "/v1/messages"),  # a real-looking key from the sandbox
    ({"Authorization": "Bearer sk-proj-" + "B" * 40}, "/v1/chat/completions"),
    ({"x-goog-api-key": "AIza" + "C" * 35}, "/v1beta/models/m:generateContent"),
    ({}, "/v1beta/models/m:generateContent?key=AIzaSomethingElse"),
    ({"Authorization": "Basic {token}"}, "/v1/messages"),  # the token, but not as a Bearer
    ({"x-api-key": "{token}", "Authorization": "Bearer sk-other"}, "/v1/messages"),  # token plus another key
    ({"x-goog-api-key": "{token}"}, "/m?key={token}&key=AIzaOther"),
], ids=["missing", "wrong", "real-anthropic", "real-openai", "real-gemini", "real-query", "basic",
        "token-plus-other", "query-plus-other"])
def test_anything_but_the_token_is_refused_and_nothing_is_forwarded(upstream, proxy, headers, path):
    headers = {k: v.format(token=proxy.token) for k, v in headers.items()}
    status, _, body = _request(proxy, "POST", path.format(token=proxy.token), headers=headers, body=b"{}")
    assert status == 401
    error = json.loads(body)["error"]
    assert error["type"] == "skill_eval_proxy" and error["message"]
    assert upstream.seen == []
    assert proxy.stats == {"forwarded": 0, "refused": 1, "upstream_errors": 0}


def test_refusals_are_counted(upstream, proxy):
    for _ in range(3):
        assert _request(proxy, headers={"x-api-key": "nope"})[0] == 401
    assert _request(proxy, headers={"x-api-key": proxy.token})[0] == 200
    assert proxy.stats == {"forwarded": 1, "refused": 3, "upstream_errors": 0}
    assert len(upstream.seen) == 1


@pytest.mark.parametrize("prefix", ["/v1beta", "/v1beta/"])
def test_upstream_path_prefix_is_joined_without_double_slashes(upstream, prefix):
    with CredentialProxy(Upstream(_base(upstream) + prefix, REAL)) as proxy:
        status, _, _ = _request(proxy, path=f"/models/x:streamGenerateContent?alt=sse&key={proxy.token}")
    assert status == 200
    assert upstream.seen[0].path == f"/v1beta/models/x:streamGenerateContent?alt=sse&key={REAL}"


def test_sse_is_relayed_as_it_arrives(upstream, proxy):
    events = [b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\n', b"data: [DONE]\n\n"]
    upstream.behaviour = Behaviour(mode="sse", events=events, delay=0.5)
    conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]), timeout=5)
    start = time.monotonic()
    conn.request("POST", "/v1/messages", body=b'{"stream": true}', headers={"x-api-key": proxy.token})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type") == "text/event-stream"
    assert resp.getheader("transfer-encoding") == "chunked" and resp.getheader("content-length") is None
    received = b""
    while b"\n\n" not in received:
        received += resp.read1(1 << 16)
    first = time.monotonic() - start
    received += resp.read()
    total = time.monotonic() - start
    conn.close()
    assert first < 0.3, f"first event after {first:.2f}s: buffered"
    assert total >= 1.0  # two pauses of 0.5 s upstream: the stream really was spread out
    assert received == b"".join(events)


def test_post_bodies_are_forwarded_byte_exact(upstream, proxy):
    small = json.dumps({"model": "m", "messages": [{"role": "user", "content": "héllo\u2603"}]}).encode()
    big = os.urandom(3 << 20)
    for body in (small, big):
        status, _, resp = _request(proxy, "POST", headers={"x-api-key": proxy.token,
                                                           "Content-Type": "application/json"}, body=body)
        assert status == 200 and json.loads(resp)["sha256"] == hashlib.sha256(body).hexdigest()
    assert [s.body for s in upstream.seen] == [small, big]
    assert upstream.seen[1].header("content-length") == [str(len(big))]


def test_chunked_request_body_is_forwarded_with_a_length(upstream, proxy):
    parts = [b"a" * 10, b"", b"b" * 70000, b"tail"]
    status, _, _ = _request(proxy, "PUT", headers={"x-api-key": proxy.token}, body=iter(parts), encode_chunked=True)
    assert status == 200
    [seen] = upstream.seen
    assert seen.method == "PUT" and seen.body == b"".join(parts)
    assert seen.header("content-length") == [str(len(seen.body))] and seen.header("transfer-encoding") == []


def test_status_and_head_pass_through(upstream, proxy):
    upstream.behaviour = Behaviour(status=429)
    status, headers, body = _request(proxy, "POST", headers={"x-api-key": proxy.token}, body=b"{}")
    assert status == 429 and json.loads(body)["ok"] is True and headers["x-request-id"] == "req-42"
    upstream.behaviour = Behaviour()
    status, headers, body = _request(proxy, "HEAD", headers={"x-api-key": proxy.token})
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0
    assert [s.method for s in upstream.seen] == ["POST", "HEAD"]


def test_after_stop_requests_fail(upstream):
    proxy = CredentialProxy(Upstream(_base(upstream), REAL)).start()
    port = int(proxy.url.rsplit(":", 1)[1])
    kept = http.client.HTTPConnection("127.0.0.1", port, timeout=5)  # a keep-alive connection opened before
    kept.request("GET", "/v1/models", headers={"x-api-key": proxy.token})
    assert kept.getresponse().read() and len(upstream.seen) == 1
    proxy.stop()
    proxy.stop()  # idempotent
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
    with pytest.raises((OSError, http.client.HTTPException)):
        kept.request("GET", "/v1/models", headers={"x-api-key": proxy.token})
        kept.getresponse().read()
    kept.close()
    assert len(upstream.seen) == 1
    with pytest.raises(RuntimeError):
        proxy.start()


def test_stop_cuts_a_stream_in_flight(upstream):
    upstream.behaviour = Behaviour(mode="sse", events=[b"data: 1\n\n", b"data: 2\n\n"], delay=3.0)
    proxy = CredentialProxy(Upstream(_base(upstream), REAL)).start()
    conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]), timeout=5)
    conn.request("POST", "/v1/messages", body=b"{}", headers={"x-api-key": proxy.token})
    resp = conn.getresponse()
    assert resp.read1(1 << 16) == b"data: 1\n\n"
    start = time.monotonic()
    proxy.stop()
    with pytest.raises((OSError, http.client.HTTPException)):
        resp.read()  # the connection ends without the final chunk: incomplete, not a clean end
    assert time.monotonic() - start < 1.0
    conn.close()


def test_upstream_down_is_a_502(capfd):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed at once: nothing listens there
    with CredentialProxy(Upstream(f"http://127.0.0.1:{port}", REAL), timeout=2) as proxy:
        status, _, body = _request(proxy, headers={"x-api-key": proxy.token})
        assert status == 502
        assert json.loads(body)["error"]["type"] == "skill_eval_proxy"
        assert proxy.stats == {"forwarded": 0, "refused": 0, "upstream_errors": 1}
    assert capfd.readouterr().err == ""


def test_a_client_leaving_mid_stream_does_not_kill_the_proxy(upstream, proxy, capfd):
    upstream.behaviour = Behaviour(mode="sse", events=[b"data: %d\n\n" % i for i in range(6)], delay=0.05)
    sock = socket.create_connection(("127.0.0.1", int(proxy.url.rsplit(":", 1)[1])), timeout=5)
    sock.sendall(f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {proxy.token}\r\n"
                 f"Content-Length: 2\r\n\r\n{{}}".encode())
    assert b"data: 0" in sock.recv(4096) or b"data: 0" in sock.recv(4096)
    sock.close()
    time.sleep(0.4)  # the upstream keeps sending into the closed client
    rude = socket.create_connection(("127.0.0.1", int(proxy.url.rsplit(":", 1)[1])), timeout=5)
    rude.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    rude.sendall(b"POST /v1/messages HTTP/1.1\r\nx-api-k")
    time.sleep(0.05)
    rude.close()  # a reset in the middle of the request head
    time.sleep(0.05)
    upstream.behaviour = Behaviour()
    assert _request(proxy, headers={"x-api-key": proxy.token})[0] == 200
    assert capfd.readouterr().err == ""


def test_tokens_are_prefixed_and_per_proxy(upstream):
    a, b = (CredentialProxy(Upstream(_base(upstream), REAL)) for _ in range(2))
    assert a.token.startswith(TOKEN_PREFIX) and b.token.startswith(TOKEN_PREFIX)
    assert a.token != b.token and len(a.token) >= len(TOKEN_PREFIX) + 40
    assert CredentialProxy(Upstream(_base(upstream), REAL), token="fixed-token").token == "fixed-token"
    assert REAL not in repr(Upstream(_base(upstream), REAL))
    with a:
        assert a.url.startswith("http://127.0.0.1:") and not a.url.endswith("/")


@pytest.mark.parametrize("url", ["ftp://example.com", "http://", "http://user:pw@example.com", "http://h/?x=1"])
def test_a_bad_upstream_url_is_refused_at_construction(url):
    with pytest.raises(ValueError):
        CredentialProxy(Upstream(url, REAL))


def test_a_refused_request_is_answered_without_reading_its_body(upstream, proxy):
    """A client without the token may not make the runner buffer what it sends: the 401 comes back
    before the (announced, 24 MB) body is sent at all, and the connection closes."""
    import socket as socket_mod

    host, port = proxy.url.removeprefix("http://").split(":")
    for _ in range(3):
        with socket_mod.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: sk-other\r\n"
                         b"Content-Length: 25165824\r\n\r\n" + b"x" * 1024)
            head = sock.recv(4096)
            assert head.startswith(b"HTTP/1.1 401") or head.startswith(b"HTTP/1.0 401"), head[:60]
            assert b"skill_eval_proxy" in head + sock.recv(4096)
    assert upstream.seen == [] and proxy.stats["refused"] == 3


def test_a_body_over_the_limit_is_not_forwarded(upstream, proxy, monkeypatch):
    monkeypatch.setattr(proxy_module, "_BODY_MAX", 1000)
    for kw in ({"body": b"x" * 1001}, {"body": iter([b"x" * 600, b"x" * 600]), "encode_chunked": True}):
        try:
            status = _request(proxy, "POST", headers={"x-api-key": proxy.token}, **kw)[0]
        except OSError:  # the proxy may close before the client finished sending
            status = 400
        assert status == 400
    assert upstream.seen == []
    assert _request(proxy, "POST", headers={"x-api-key": proxy.token}, body=b"x" * 1000)[0] == 200
    assert len(upstream.seen[0].body) == 1000
