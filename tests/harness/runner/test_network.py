"""The agent's sandbox has no network but its proxy (issue 34 item 4).

From inside the real runner in bubblewrap (the scripted agent's shell turns), a loopback HTTP
service of the host, a host abstract Unix socket and an outside address are all unreachable, and
no host listener is visible; the bridge relays its fixed port to a Unix socket, sets the limits
and hands back the agent's exit status.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shlex
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.harness.runner import bridge, isolation, network

needs_bwrap = pytest.mark.skipif(isolation.available() != "bwrap", reason="needs a working bubblewrap")

PROBE = r"""
import json, socket
def tcp(host, port):
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, port)); return "connected"
    except OSError as e:
        return f"errno {e.errno}"
def abstract(name):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\0" + name); return "connected"
    except OSError as e:
        return f"errno {e.errno}"
listening = []
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        rows = open(table).read().splitlines()[1:]
    except OSError:
        continue
    listening += [int(r.split()[1].rsplit(":", 1)[1], 16) for r in rows if r.split()[3] == "0A"]
print("PROBE " + json.dumps({"loopback": tcp("127.0.0.1", PORT), "outside": tcp("192.0.2.1", 80),
                              "abstract": abstract(NAME), "listening": sorted(listening)}))
"""


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"host secret")

    def log_message(self, *args: object) -> None:
        pass


def _probe_result(bundle: Path) -> dict:
    for line in (bundle / "raw" / "stream.jsonl").read_text().splitlines():
        text = json.loads(line).get("output") or ""
        if "PROBE {" in text:
            return json.loads(text.split("PROBE ", 1)[1].splitlines()[0])
    raise AssertionError("the probe printed nothing")


@needs_bwrap
def test_nothing_of_the_host_network_is_reachable_from_the_real_runner(repo_copy: Path, capsys):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    name = f"skill-eval-test-{secrets.token_hex(6)}"
    host_abstract = socket.socket(socket.AF_UNIX)
    host_abstract.bind("\0" + name)
    host_abstract.listen(1)
    port = server.server_address[1]
    try:
        # reachable from the runner's own network: the probe is meaningful
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            pass
        probe = PROBE.replace("PORT", str(port)).replace("NAME", repr(name))
        rel = "agent-evals/skills/model-scripts/net-probe.yaml"
        lines = ["schema_version: 1", "description: network probe", "turns:", "  - tools:",
                 "      - shell: " + json.dumps(f"python3 -c {shlex.quote(probe)}"), "  - final: done", ""]
        (repo_copy / rel).write_text("\n".join(lines))
        main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--model-server",
              f"scripted:{rel}", "--no-trigger", "-k", "1", "-j", "1", "--run-id", "net-probe"])
        capsys.readouterr()
        bundle = repo_copy / "agent-evals/skills/evidence/abi-compat-review/skill-agent/net-probe/review-removed-export/0"
        meta = json.loads((bundle / "meta.json").read_text())
        result = _probe_result(bundle)
    finally:
        server.shutdown()
        host_abstract.close()
    assert meta["isolation"] == "bwrap" and meta["network"] == "proxy-only"
    assert set(meta["extra"]["limits"]) == {"processes", "file_bytes", "memory_bytes", "processes_by"}
    assert result["loopback"] == "errno 111"  # nothing listens on the sandbox's own loopback at that port
    assert result["outside"] == "errno 101"  # ENETUNREACH: no route out, no timeout needed
    assert result["abstract"] == "errno 111"  # abstract sockets belong to the network namespace
    assert port not in result["listening"] and result["listening"] == []


def _unix_echo(path: Path) -> socket.socket:
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(1024)
                conn.sendall(b"echo:" + data)

    threading.Thread(target=serve, daemon=True).start()
    return srv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_bridge_listens_before_the_agent_starts_and_relays_to_the_socket(tmp_path: Path):
    srv = _unix_echo(tmp_path / "proxy.sock")
    port = _free_port()
    agent = (f"import socket, sys; s = socket.create_connection(('127.0.0.1', {port})); s.sendall(b'ping');"
             "s.shutdown(socket.SHUT_WR); print(s.recv(100).decode()); sys.exit(7)")
    try:
        res = subprocess.run([sys.executable, "-I", "-S", bridge.__file__, "--listen", f"{port}={tmp_path / 'proxy.sock'}",
                              "--", sys.executable, "-c", agent], capture_output=True, timeout=30, check=False)
    finally:
        srv.close()
    assert res.stdout.decode().strip() == "echo:ping"  # the first connect of the agent already works
    assert res.returncode == 7  # the agent's exit status is the bridge's


def test_the_bridge_sets_the_agents_limits_and_ends_as_the_agent_did(tmp_path: Path):
    lim = network.Limits(processes=64, file_bytes=1 << 20, memory_bytes=1 << 31)
    argv = network.bridge_argv(sys.executable, bridge.__file__, [], lim)
    show = ("import resource as r; print(r.getrlimit(r.RLIMIT_FSIZE)[0], r.getrlimit(r.RLIMIT_DATA)[0]);"
            "open('big', 'wb').write(b'x' * (2 << 20))")
    res = subprocess.run([*argv, sys.executable, "-c", show], cwd=tmp_path, capture_output=True, timeout=30, check=False)
    assert res.stdout.decode().split() == [str(1 << 20), str(1 << 31)]
    assert b"File too large" in res.stderr and (tmp_path / "big").stat().st_size == 1 << 20
    res = subprocess.run([*argv, sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
                         capture_output=True, timeout=30, check=False)
    assert res.returncode == -15  # killed by a signal: the bridge ends the same way
    res = subprocess.run([*argv, "/nonexistent/agent"], capture_output=True, timeout=30, check=False)
    assert res.returncode == 127 and b"cannot start /nonexistent/agent" in res.stderr


def test_the_bridge_refuses_malformed_arguments():
    for bad in (["--listen", "80=relative.sock", "--", "true"], ["--limit", "cpu=1", "--", "true"], ["--listen", "1=/x"]):
        res = subprocess.run([sys.executable, "-I", "-S", bridge.__file__, *bad], capture_output=True, timeout=30, check=False)
        assert res.returncode != 0 and b"skill-eval bridge:" in res.stderr


def test_network_by_isolation_level():
    assert network.of("bwrap") == "proxy-only"
    assert network.of("uid") == network.of("none") == "host"
    assert os.path.basename(bridge.__file__) == network.BRIDGE_FILE


@needs_bwrap
def test_the_sandboxs_mountinfo_names_no_host_path_but_its_own_directory(repo_copy: Path, capsys):
    """issue 34 item 9: every mount of the host's disk in the agent's mountinfo is a system directory at its
    own path or the sandbox's own directory (the kernel's root field of a bind; the runner scrubs it to
    <sandbox>/<work>/<home> in the bundle): never the repository, the runner's home or a venv."""
    rel = "agent-evals/skills/model-scripts/mountinfo.yaml"
    (repo_copy / rel).write_text("schema_version: 1\ndescription: mountinfo\nturns:\n  - tools:\n"
                                 "      - shell: \"cat /proc/self/mountinfo\"\n  - final: done\n")
    main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--model-server",
          f"scripted:{rel}", "--no-trigger", "-k", "1", "-j", "1", "--run-id", "mountinfo"])
    capsys.readouterr()
    bundle = repo_copy / "agent-evals/skills/evidence/abi-compat-review/skill-agent/mountinfo/review-removed-export/0"
    text = next(json.loads(line)["output"] for line in (bundle / "raw" / "stream.jsonl").read_text().splitlines()
                if json.loads(line).get("type") == "tool_result")
    rows = [line.split() for line in text.splitlines() if " - " in line]
    assert len(rows) > 10
    disk = [r for r in rows if r[r.index("-") + 1] not in ("tmpfs", "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2")]
    roots = {r[3] for r in disk}
    allowed = ("<sandbox>", "<work>", "<home>", *(f"/{top}" for top in isolation.layout.SYSTEM_TOPS))
    assert roots and all(root.startswith(allowed) for root in roots), roots
    for host in (str(repo_copy), str(Path.home()), sys.prefix):
        assert host not in text


def _connect_via(path: Path, target: str) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(path))
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        reply = s.recv(200)
        if reply.startswith(b"HTTP/1.1 200"):
            s.sendall(b"ping")
            s.shutdown(socket.SHUT_WR)
            reply += s.recv(200)
        return reply


def test_the_connect_proxy_tunnels_to_exactly_the_declared_hosts(tmp_path: Path):
    from skill_eval.harness.runner.connect import ConnectProxy

    target = socket.socket()
    target.bind(("127.0.0.1", 0))
    target.listen(2)
    port = target.getsockname()[1]

    def echo() -> None:
        conn, _ = target.accept()
        with conn:
            conn.sendall(b"echo:" + conn.recv(100))

    threading.Thread(target=echo, daemon=True).start()
    proxy = ConnectProxy((f"127.0.0.1:{port}",), allow_loopback=True).start(str(tmp_path / "c.sock"))
    try:
        assert _connect_via(tmp_path / "c.sock", f"127.0.0.1:{port}").endswith(b"\r\n\r\necho:ping")
        assert _connect_via(tmp_path / "c.sock", "127.0.0.1:1").startswith(b"HTTP/1.1 403")  # another port
        assert _connect_via(tmp_path / "c.sock", "registry.npmjs.org:443").startswith(b"HTTP/1.1 403")
    finally:
        proxy.stop()
        target.close()
    assert proxy.stats == {"tunnels": 1, "refused": 2, "failed": 0}
    assert proxy.refusals == ["CONNECT 127.0.0.1:1 HTTP/1.1", "CONNECT registry.npmjs.org:443 HTTP/1.1"]
    strict = ConnectProxy((f"127.0.0.1:{port}",)).start(str(tmp_path / "s.sock"))  # the real default
    try:  # declared, but the runner's own loopback: never a task's host (502, not the agent's violation)
        assert _connect_via(tmp_path / "s.sock", f"127.0.0.1:{port}").startswith(b"HTTP/1.1 502")
    finally:
        strict.stop()
    assert strict.stats == {"tunnels": 0, "refused": 0, "failed": 1} and not (tmp_path / "s.sock").exists()


CONNECT_PROBE = r"""
import json, os, socket
def ask(target):
    s = socket.create_connection(("127.0.0.1", 47081), timeout=20)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return s.recv(100).split(b"\r\n")[0].decode()
print("PROBE " + json.dumps({"proxy": os.environ.get("HTTPS_PROXY"), "declared": ask("task-host.invalid:443"),
                              "other": ask("registry.npmjs.org:443")}))
"""


@needs_bwrap
def test_a_scenario_s_declared_host_is_the_only_connect_the_sandbox_gets(repo_copy: Path, capsys):
    scenarios = repo_copy / "agent-evals/skills/scenarios.yaml"
    text = scenarios.read_text()
    marker = "  - id: review-removed-export\n"
    assert marker in text
    scenarios.write_text(text.replace(marker, marker + "    network_hosts: [task-host.invalid]\n", 1))
    rel = "agent-evals/skills/model-scripts/connect-probe.yaml"
    (repo_copy / rel).write_text("\n".join(["schema_version: 1", "description: connect probe", "turns:", "  - tools:",
                                            "      - shell: " + json.dumps(f"python3 -c {shlex.quote(CONNECT_PROBE)}"),
                                            "  - final: done", ""]))
    main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--model-server",
          f"scripted:{rel}", "--no-trigger", "-k", "1", "-j", "1", "--run-id", "connect-probe"])
    capsys.readouterr()
    bundle = repo_copy / "agent-evals/skills/evidence/abi-compat-review/skill-agent/connect-probe/review-removed-export/0"
    meta = json.loads((bundle / "meta.json").read_text())
    result = _probe_result(bundle)
    assert result == {"proxy": "http://127.0.0.1:47081", "declared": "HTTP/1.1 502 Bad Gateway",  # no internet here
                      "other": "HTTP/1.1 403 Forbidden"}
    assert meta["extra"]["network_hosts"] == ["task-host.invalid"]
    assert meta["extra"]["connect"] == {"tunnels": 0, "refused": 1, "failed": 1,
                                        "refusals": ["CONNECT registry.npmjs.org:443 HTTP/1.1"]}
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]
    assert {"type": "policy_violation", "source": "connect", "request": "CONNECT registry.npmjs.org:443 HTTP/1.1"} in events


FORK_PROBE = r"""
import os, time
n = 0
try:
    while n < 3000:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError as e:
    print(f"PROBE {{\"forked\": {n}, \"errno\": {e.errno}}}")
else:
    print(f"PROBE {{\"forked\": {n}, \"errno\": null}}")
"""


@needs_bwrap
def test_the_agents_processes_are_capped(repo_copy: Path, capsys):
    """As root the kernel ignores RLIMIT_NPROC: the sandbox's own pids cgroup holds the cap (where the runner
    can make one; meta says which limit held)."""
    group = network.pids_cgroup("probe-check", 8)
    network.remove_cgroup(group)
    if group is None:
        pytest.skip("no writable pids cgroup here: only RLIMIT_NPROC (not applied to uid 0)")
    rel = "agent-evals/skills/model-scripts/fork-probe.yaml"
    (repo_copy / rel).write_text("\n".join(["schema_version: 1", "description: fork probe", "turns:", "  - tools:",
                                            "      - shell: " + json.dumps(f"python3 -c {shlex.quote(FORK_PROBE)}"),
                                            "  - final: done", ""]))
    main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--model-server",
          f"scripted:{rel}", "--no-trigger", "-k", "1", "-j", "1", "--run-id", "fork-probe"])
    capsys.readouterr()
    bundle = repo_copy / "agent-evals/skills/evidence/abi-compat-review/skill-agent/fork-probe/review-removed-export/0"
    meta = json.loads((bundle / "meta.json").read_text())
    result = _probe_result(bundle)
    assert meta["extra"]["limits"]["processes_by"] == "cgroup"
    assert result["errno"] == 11 and result["forked"] < network.PROCESS_BUDGET  # EAGAIN at the cap
    leftovers = list(group.parent.glob("skill-eval-*"))
    assert leftovers == []  # each sandbox's cgroup is removed with it
