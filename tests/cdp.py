"""A minimal headless-Chromium driver over the DevTools protocol on a pipe (no port, no network).

Chromium's `--remote-debugging-pipe` reads NUL-terminated JSON commands on fd 3 and writes
replies and events on fd 4. This is enough to load a local page, wait for its load event,
evaluate JavaScript against the rendered DOM, collect every console/log error and uncaught
exception, and capture a full-page screenshot — what the scorecard's browser test asserts on.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _high(fd: int) -> int:
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


@dataclass
class Page:
    result: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    screenshot: bytes = b""


class CDP:
    def __init__(self, binary: str, width: int = 1280, height: int = 900):
        self.profile = tempfile.mkdtemp(prefix="skill-eval-chromium-")
        log = open(os.path.join(self.profile, "stderr.log"), "wb")  # noqa: SIM115 - closed after the spawn
        # keep the child's ends above 4 so dup2 onto 3/4 never maps an fd onto itself (which would
        # leave it close-on-exec)
        cmd_r, self.cmd_w = (_high(fd) for fd in os.pipe())
        self.evt_r, evt_w = (_high(fd) for fd in os.pipe())

        # runs in the child: the protocol expects fds 3 and 4 (dup2 makes them inheritable; every
        # other descriptor Python opened is close-on-exec, so close_fds=False leaks nothing)
        def child_fds() -> None:
            os.dup2(cmd_r, 3)
            os.dup2(evt_w, 4)

        self.proc = subprocess.Popen(  # noqa: S603 - a fixed local binary, no shell
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "--no-first-run",
             "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--no-pings", "--host-resolver-rules=MAP * ~NOTFOUND",
             "about:blank"],
            preexec_fn=child_fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=log,
        )
        log.close()
        os.close(cmd_r)
        os.close(evt_w)
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - the browser may already be gone
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.cmd_w, self.evt_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.stderr = Path(self.profile, "stderr.log").read_text(errors="replace")
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no reply from chromium")
            ready, _, _ = select.select([self.evt_r], [], [], left)
            if ready:
                chunk = os.read(self.evt_r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 30) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        while True:
            ev = self._read(deadline)
            if ev.get("method") == method:
                return ev
            self.events.append(ev)

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read(deadline))
        except TimeoutError:
            pass


def errors_in(events: list[dict[str, Any]]) -> list[str]:
    """Every console error, failed assertion, uncaught exception and error-level log entry."""
    out = []
    for ev in events:
        method, p = ev.get("method"), ev.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            out.append("exception: " + str(p.get("exceptionDetails", {}).get("text")))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(f"log ({p['entry'].get('source')}): {p['entry'].get('text')}")
    return out


def render(html_path: Path, expression: str, *, width: int = 1280, height: int = 900, settle: float = 0.5) -> Page:
    """Load `html_path`, evaluate `expression` (must return a JSON value), screenshot the full page."""
    binary = chromium_binary()
    if binary is None:
        raise RuntimeError("chromium is not installed")
    cdp = CDP(binary, width, height)
    try:
        target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            cdp.send(f"{domain}.enable", session=session)
        cdp.send("Page.navigate", {"url": html_path.resolve().as_uri()}, session=session)
        cdp.wait_event("Page.loadEventFired")
        cdp.drain(settle)
        value = cdp.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
        if "exceptionDetails" in value:
            raise RuntimeError(f"evaluation failed: {value['exceptionDetails']}")
        shot = cdp.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)
        cdp.drain(0.2)
        return Page(value["result"].get("value"), errors_in(cdp.events), base64.b64decode(shot["data"]))
    finally:
        cdp.close()
