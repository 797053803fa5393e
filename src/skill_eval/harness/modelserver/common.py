"""HTTP plumbing shared by the scripted model servers (stdlib only: http.server + threads).

A server binds 127.0.0.1 on an ephemeral port, logs every request (method, path, JSON
body, the turn it was answered with; auth headers are dropped so no credential is ever
logged), and asks its provider for a reply. SSE replies are built whole and sent with a
Content-Length: the script is fixed, so there is nothing to gain from trickling, and a
sized body is the framing every client handles.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from skill_eval.harness.modelserver.script import ModelScript, _strings, dumps

_DROP_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "cookie", "proxy-authorization"}
MAX_BODY = 64 * 1024 * 1024


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None
    turn: int | None = None  # 0-based script turn answered, None for auxiliary/other requests
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": self.headers, "body": self.body, "turn": self.turn, "note": self.note}


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    turn: int | None = None
    note: str = ""


def json_reply(value: Any, status: int = 200, *, turn: int | None = None, note: str = "") -> Reply:
    return Reply(status, dumps(value).encode(), "application/json", turn, note)


def sse_reply(events: list[tuple[str | None, Any]], *, turn: int | None = None, note: str = "", done: bool = False) -> Reply:
    """SSE body: `event: <name>` (when named) + `data: <json>` + blank line per event."""
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {dumps(data)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return Reply(200, "".join(out).encode(), "text/event-stream", turn, note)


def error_reply(status: int, message: str) -> Reply:
    return json_reply({"error": {"type": "scripted_server_error", "message": message}}, status, note=message)


def request_text(body: Any) -> str:
    return "\n".join(_strings(body))


class Provider:
    """One API dialect. Subclasses implement respond(); they hold no per-conversation state."""

    kind = ""

    def __init__(self, script: ModelScript):
        self.script = script

    def respond(self, method: str, path: str, body: Any) -> Reply:
        raise NotImplementedError

    def usage(self) -> tuple[int, int]:
        return self.script.usage["input_tokens"], self.script.usage["output_tokens"]


@dataclass
class _State:
    provider: Provider
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    log: Any = None  # optional text file: one JSON line per request


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "skill-eval-scripted/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # the request log replaces the stderr access log

    def _handle(self, method: str) -> None:
        state: _State = self.server.state  # type: ignore[attr-defined]  # set on the server by ServerHandle
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(error_reply(413, "request body too large"), method)
            return
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        reply: Reply | None = None
        if raw:
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                reply = error_reply(400, "request body is not JSON")
        if reply is None:
            try:
                reply = state.provider.respond(method, self.path, body)
            except Exception as exc:  # noqa: BLE001 - a server thread must answer, not die
                reply = error_reply(500, f"scripted server failed: {type(exc).__name__}: {exc}")
        if reply.turn is not None:  # a scripted turn takes the model's think time; auxiliary requests do not
            wait = state.provider.script.delay(reply.turn)
            if wait > 0:
                time.sleep(wait)
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in _DROP_HEADERS}
        record = RecordedRequest(method, self.path, headers, body, reply.turn, reply.note)
        with state.lock:
            state.requests.append(record)
            if state.log is not None:
                state.log.write(json.dumps(record.to_json(), sort_keys=True) + "\n")
                state.log.flush()
        self._send(reply, method)

    def _send(self, reply: Reply, method: str) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        if reply.content_type == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(reply.body)
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_HEAD(self) -> None:  # noqa: N802
        self._handle("HEAD")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # the default backlog of 5 resets connections under parallel runs

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up on a keep-alive connection is normal; anything else is printed."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ServerHandle:
    """A running scripted server: `.url`, `.port`, `.requests` (a copy), `.stop()`; a context manager."""

    def __init__(self, provider: Provider, host: str = "127.0.0.1", port: int = 0, log: Any = None):
        self._state = _State(provider=provider, log=log)
        self._server = _Server((host, port), _Handler)
        self._server.state = self._state  # type: ignore[attr-defined]  # the handlers' shared state
        bound, self.port = self._server.server_address[:2]
        self.host = bound if isinstance(bound, str) else bytes(bound).decode()  # an AF_INET getsockname(): a str
        self.url = f"http://{self.host}:{self.port}"
        self.kind = provider.kind
        self.script = provider.script
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"scripted-{provider.kind}", daemon=True)
        self._thread.start()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    def wait(self) -> None:
        self._thread.join()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
