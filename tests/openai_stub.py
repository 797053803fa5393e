"""A tiny loopback OpenAI-style endpoint for tests: each POST is answered by a callback.

Separate from modelserver/ on purpose: the scripted servers only ever answer well-formed
replies from a model script; this stub serves anything — malformed bodies, HTTP errors,
delays, replies computed from the request — which is what a real local model (llama.cpp)
can do to the built-in loop.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (turn index, request body) -> (HTTP status, body: bytes/str as-is, anything else as JSON, delay seconds)
Responder = Callable[[int, Any], tuple[int, Any, float]]


class Stub:
    def __init__(self, responder: Responder):
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                stub.requests.append({"path": self.path, "body": body, "authorization": self.headers.get("Authorization")})
                status, payload, delay = stub.responder(len(stub.requests) - 1, body)
                if delay:
                    time.sleep(delay)
                data = payload if isinstance(payload, bytes) else payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its request timeout): expected in the hang case

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Stub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def replay(replies: list[dict[str, Any]]) -> Responder:
    """Answer request n with replies[n] ({"status", "body" | "raw", "delay"}); past the end, 500."""

    def respond(n: int, body: Any) -> tuple[int, Any, float]:
        if n >= len(replies):
            return 500, {"error": {"message": "stub: no more replies"}}, 0.0
        r = replies[n]
        return r.get("status", 200), r["raw"] if "raw" in r else r["body"], r.get("delay", 0.0)

    return respond
