"""The proxy forwards only what the provider API needs (issue 34 item 5), shown against a reflecting
loopback stub upstream that echoes the URL, headers and body it got (and can answer a redirect).

Per adapter an allow-list of method and path (from the requests the real CLIs make in the e2e runs);
the CLI's own probes answered by the proxy; the real key only in a header; identity encoding asked
upstream; redirects neither followed nor relayed; the real key masked in every relayed header and
body, also when it is split across chunks.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from skill_eval.harness.adapters import get_adapter
from skill_eval.harness.runner.proxy import CredentialProxy, Upstream

REAL = "AIzaSy-real-credential-0123456789abcdef"


class _Reflect(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Stub

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        echo = json.dumps({"url": self.path, "headers": dict(self.headers.items()), "body": body.decode()}).encode()
        mode = self.server.mode
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", f"https://elsewhere.example/steal?key={REAL}")
            self.send_header("Content-Length", str(len(echo)))
            self.end_headers()
            self.wfile.write(echo)
            return
        self.send_response(200)
        self.send_header("X-Echo-Key", self.headers.get("x-goog-api-key") or "")
        if mode == "split":  # the key cut across chunks, with a pause between them
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            cut = len(REAL) // 2
            for part in (b"data: " + REAL[:cut].encode(), REAL[cut:].encode() + b"\n\n", b"data: " + REAL.encode()[:5]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(echo)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(echo)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any


class _Stub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Reflect)
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.mode = "echo"


@pytest.fixture
def stub() -> Iterator[_Stub]:
    server = _Stub()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _proxy(stub: _Stub, adapter: str) -> CredentialProxy:
    a = get_adapter(adapter)
    return CredentialProxy(Upstream(f"http://127.0.0.1:{stub.server_address[1]}", REAL, routes=a.api_routes,
                                    probes=a.api_probes), timeout=5).start()


def _send(proxy: CredentialProxy, method: str, path: str, headers: dict[str, str] | None = None,
          body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]), timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


GEMINI_TURN = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"


def test_the_gemini_key_form_never_puts_the_real_key_in_a_url_or_back_to_the_agent(stub):
    """The agent sends its token as ?key= (the Gemini form) to a stub that echoes everything it got."""
    proxy = _proxy(stub, "gemini-cli")
    status, headers, body = _send(proxy, "POST", f"{GEMINI_TURN}?alt=sse&key={proxy.token}", body=b"{}")
    proxy.stop()
    [(method, url, seen)] = stub.seen
    assert status == 200 and method == "POST"
    assert url == f"{GEMINI_TURN}?alt=sse" and "key=" not in url  # never in the URL
    assert seen["x-goog-api-key"] == REAL  # in the header only
    assert seen["accept-encoding"] == "identity"  # plaintext comes back, so scrubbing sees the key
    assert REAL.encode() not in body and REAL not in json.dumps(headers)  # the echo is masked
    assert json.loads(body)["headers"]["x-goog-api-key"] == "*" * len(REAL) and headers["x-echo-key"] == "*" * len(REAL)


def test_a_request_outside_the_allow_list_is_a_violation_and_nothing_is_forwarded(stub):
    proxy = _proxy(stub, "gemini-cli")
    token = {"x-goog-api-key": proxy.token}
    assert _send(proxy, "DELETE", "/v1beta/admin/keys/1", token)[0] == 403
    assert _send(proxy, "GET", "/v1beta/models", token)[0] == 403
    assert _send(proxy, "POST", GEMINI_TURN + "/../../admin", token, b"{}")[0] == 403
    assert _send(proxy, "POST", GEMINI_TURN, token, b"{}")[0] == 200
    proxy.stop()
    assert [s[1] for s in stub.seen] == [GEMINI_TURN]
    assert proxy.stats["violations"] == 3 and proxy.stats["refused"] == 0
    assert proxy.violations[0] == "DELETE /v1beta/admin/keys/1 [x-goog-api-key]" and proxy.token not in repr(proxy.violations)


def test_a_known_request_without_the_token_is_a_refusal_not_a_violation(stub):
    """A request the CLI is known to make, refused (no token): the runner's infra error, not the agent's doing."""
    proxy = _proxy(stub, "claude-code")
    assert _send(proxy, "POST", "/v1/messages?beta=true", {"x-api-key": "sk-ant-other"}, b"{}")[0] == 401
    proxy.stop()
    assert stub.seen == [] and proxy.stats["refused"] == 1 and proxy.stats["violations"] == 0
    assert proxy.refusals == ["POST /v1/messages [x-api-key]"]


def test_the_clis_own_probe_is_answered_by_the_proxy(stub):
    proxy = _proxy(stub, "claude-code")
    status, _, body = _send(proxy, "HEAD", "/")
    assert (status, body) == (200, b"")
    assert _send(proxy, "POST", "/v1/messages?beta=true", {"x-api-key": proxy.token}, b"{}")[0] == 200
    proxy.stop()
    assert [s[0] for s in stub.seen] == ["POST"] and proxy.stats["probes"] == 1


def test_a_redirect_is_neither_followed_nor_relayed(stub):
    stub.mode = "redirect"
    proxy = _proxy(stub, "codex")
    status, headers, body = _send(proxy, "POST", "/v1/responses", {"Authorization": f"Bearer {proxy.token}"}, b"{}")
    proxy.stop()
    assert status == 502 and "location" not in headers and REAL.encode() not in body
    assert len(stub.seen) == 1  # not followed


def test_the_key_split_across_chunks_is_masked(stub):
    stub.mode = "split"
    proxy = _proxy(stub, "gemini-cli")
    status, _, body = _send(proxy, "POST", GEMINI_TURN, {"x-goog-api-key": proxy.token}, b"{}")
    proxy.stop()
    assert status == 200
    assert body == b"data: " + b"*" * len(REAL) + b"\n\ndata: " + REAL.encode()[:5]  # a mere prefix at the end is kept


@pytest.mark.parametrize("adapter", ["claude-code", "codex", "gemini-cli", "openai-compatible"])
def test_every_endpoint_adapter_has_an_allow_list(adapter):
    a = get_adapter(adapter)
    assert a.api_routes and all(m in ("GET", "POST") for m, _ in a.api_routes)


def test_the_proxy_serves_on_a_unix_socket(stub, tmp_path: Path):
    a = get_adapter("codex")
    path = tmp_path / "proxy.sock"
    proxy = CredentialProxy(Upstream(f"http://127.0.0.1:{stub.server_address[1]}", REAL, routes=a.api_routes)).start(
        unix=str(path))
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(path))
        s.sendall(f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {proxy.token}\r\n"
                  "Content-Length: 2\r\nConnection: close\r\n\r\n{}".encode())
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    proxy.stop()
    assert reply.startswith(b"HTTP/1.1 200") and REAL.encode() not in reply
    assert not path.exists()  # removed with the proxy
