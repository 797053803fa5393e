"""The agent sandbox's network: what it can reach, and the limits it runs under (issue 34 item 4).

At the bwrap level the agent has its own network namespace (`--unshare-net`, runner/isolation.py):
no host loopback service, no host abstract Unix socket, no outside host. Its only way out is the
credential proxy (runner/proxy.py), which listens on a path-named Unix socket in the sandbox's
`run/` directory (bound read-only at /run/skill-eval/sock); inside, runner/bridge.py (run by the
sandbox's own interpreter, before the agent starts) listens on the fixed port PROXY_PORT of the
namespace's own 127.0.0.1 and relays each connection to that socket, so the agent CLI gets an
ordinary TCP base URL. A scenario that declares hosts its task needs (`network_hosts`) gets a
second port, CONNECT_PORT, relayed to an allowed-hosts CONNECT proxy (runner/connect.py) that
tunnels to exactly those hosts; the agent is pointed at it with HTTPS_PROXY/HTTP_PROXY.

`network` (meta.json, sealed with the bundle): `proxy-only` at the bwrap level, `host` below it
(a separate uid or nothing: the agent shares the runner's network). A release counts only
`proxy-only` evidence.

The bridge also sets the agent's resource limits (rlimits, inherited by everything it starts):
processes (RLIMIT_NPROC counts every process of the uid on the host, so the limit is the uid's
count at launch plus PROCESS_BUDGET), the size of any one file it writes, and its private writable
memory (RLIMIT_DATA: unlike RLIMIT_AS it leaves the large address-space reservations of the
JavaScript engines alone). The kernel never applies RLIMIT_NPROC to uid 0, so where the runner can
make a pids cgroup (cgroup v1 `pids`, or v2 with the pids controller) the sandbox runs in its own,
capped at PROCESS_BUDGET (`pids_cgroup`; meta.extra.limits.processes_by says which held).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from skill_eval.harness.runner import bridge

Network = Literal["proxy-only", "host"]
NETWORKS: tuple[Network, ...] = ("proxy-only", "host")
PROXY_PORT = 47080  # the credential proxy, inside the sandbox's own loopback
CONNECT_PORT = 47081  # the allowed-hosts CONNECT proxy (only when a scenario declares hosts)
PROXY_SOCKET = "proxy.sock"  # in the sandbox's run/ directory (layout.SOCK inside)
CONNECT_SOCKET = "connect.sock"
BRIDGE_FILE = "bridge.py"  # in the sandbox's agent/ directory (layout.AGENT inside)
PROCESS_BUDGET = 512
FILE_IO_HELPERS = ("install_bridge", "pids_cgroup", "_own_cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def of(level: str) -> Network:
    """The network an agent at this isolation level has."""
    return "proxy-only" if level == "bwrap" else "host"


@dataclass(frozen=True)
class Limits:
    """The agent's resource limits (recorded in meta.extra.limits)."""

    processes: int = PROCESS_BUDGET  # processes the agent may add to its uid's count at launch
    file_bytes: int = 1 << 30  # the largest file it may write
    memory_bytes: int = 4 << 30  # private writable memory of each of its processes

    def as_dict(self) -> dict[str, int]:
        return {"processes": self.processes, "file_bytes": self.file_bytes, "memory_bytes": self.memory_bytes}


def _processes_of_uid(uid: int) -> int:
    count = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for name in entries:
        if name.isdigit():
            try:
                count += os.stat(f"/proc/{name}").st_uid == uid
            except OSError:
                continue
    return count


def _own_cgroup(controller: str) -> tuple[Path, str] | None:
    """(the mount of `controller`'s hierarchy, this process's cgroup in it), or None."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return CGROUP_ROOT / controller, path
    v2 = [line.split(":", 2)[2] for line in lines if line.startswith("0::")]
    try:
        if v2 and controller in (CGROUP_ROOT / "cgroup.controllers").read_text().split():
            return CGROUP_ROOT, v2[0]
    except OSError:
        pass
    return None


def pids_cgroup(name: str, budget: int) -> Path | None:
    """A pids cgroup for one sandbox, capped at `budget` processes, or None where none can be made."""
    own = _own_cgroup("pids")
    if own is None:
        return None
    mount, path = own
    group = mount / path.strip("/") / f"skill-eval-{name}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(budget))
    except OSError:
        remove_cgroup(group)
        return None
    return group


def remove_cgroup(group: Path | None) -> None:
    """Remove a sandbox's cgroup (its processes are gone: the runner killed the whole group)."""
    for _ in range(40 if group is not None else 0):  # the killed namespace's last processes may take a moment
        try:
            group.rmdir()  # type: ignore[union-attr]  # the loop runs only for a group
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def cgroup_prefix(group: Path | None) -> list[str]:
    """A command prefix that moves itself into `group` and then execs the rest (nothing escapes the
    cgroup by being forked before the runner could move it)."""
    if group is None:
        return []
    return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(group)]


def install_bridge(agent_dir: Path) -> Path:
    """Copy the bridge program into the sandbox's agent directory (read-only inside); returns its host path."""
    dest = agent_dir / BRIDGE_FILE
    agent_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bridge.__file__, dest)
    dest.chmod(0o644)
    return dest


def bridge_argv(python: str, program: str, listens: list[tuple[int, str]], limits: Limits) -> list[str]:
    """The command prefix that starts the bridge (listening on `listens`: (port, socket as the agent
    sees it)) and then the agent after the final `--`."""
    nproc = _processes_of_uid(os.getuid()) + limits.processes
    argv = [python, "-I", "-S", program, "--limit", f"nproc={nproc}", "--limit", f"fsize={limits.file_bytes}",
            "--limit", f"data={limits.memory_bytes}"]
    for port, sock in listens:
        argv += ["--listen", f"{port}={sock}"]
    return [*argv, "--"]


def connect_env() -> dict[str, str]:
    """The agent's proxy variables when its scenario declares hosts (the model proxy stays direct)."""
    url = inside_url(CONNECT_PORT)
    return {"HTTPS_PROXY": url, "https_proxy": url, "HTTP_PROXY": url, "http_proxy": url,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def inside_url(port: int, path: str = "") -> str:
    """The base URL the agent uses for a bridged port (its own loopback)."""
    return f"http://127.0.0.1:{port}{path}"
