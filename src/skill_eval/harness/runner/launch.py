"""One agent launch: serve the model server and the credential proxy, build the sandbox's network
bridge, launch the agent at its isolation level, capture its streams, tear everything down.

Used by every path that starts an agent: `run` (runner.execute.run_item), the release's recording
(which runs run_item) and `propose` (improve.sandbox.run_agent). The caller owns the Sandbox and
what is done with the result (sealing a bundle, reading a proposal back); this module owns the
order in which the pieces are started and stopped, so each path gets the same network, the same
credential handling and the same limits.

    with AgentLaunch(box, adapter, opts, level=..., hidden=(repo, parent), ...) as launch:
        spec = launch.prepare(prompt, seed=...)        # server, proxy, runtime, adapter.launch
        ... install skills / take the before state ...
        ran = launch.run(timeout, stop_when)           # home files, env, wrap, spawn; the proxy stops
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from skill_eval.content.config import AgentDefaults
from skill_eval.harness.adapters import LaunchContext, is_loopback
from skill_eval.harness.adapters.base import Adapter, LaunchSpec
from skill_eval.harness.modelserver import start_server
from skill_eval.harness.modelserver.common import ServerHandle
from skill_eval.harness.modelserver.script import ModelScript
from skill_eval.harness.runner import isolation, layout, network
from skill_eval.harness.runner.connect import ConnectProxy
from skill_eval.harness.runner.proxy import CredentialProxy, Upstream
from skill_eval.harness.runner.sandbox import Sandbox
from skill_eval.harness.runner.secrets import check_injectable, injected_secrets

# Functions allowed to touch files directly (sandbox-private paths only; tests/harness/test_input_accessor.py)
FILE_IO_HELPERS = ("spawn", "_write_private", "_read_private")


@dataclass(frozen=True)
class RunOptions:
    adapter: str
    model: str | None = None
    model_server: str | None = None  # "scripted:<file or directory of <item-id>.yaml>"
    base_url: str | None = None  # a real OpenAI-style endpoint for openai-compatible
    binary: str | None = None
    max_turns: int = AgentDefaults.max_turns  # one source: [agent]'s defaults
    timeout: float = AgentDefaults.timeout_seconds
    max_cost_usd: float | None = None
    max_tokens: int | None = None  # per model reply (agents that take a cap: the built-in loop)
    max_total_tokens: int | None = None  # per run; reached -> stop reason `budget`
    no_auth: bool = False  # a real endpoint that needs no credential (a loopback one never does)
    aa: bool = False  # an A/A calibration run (skill-eval run --aa): meta extra.aa, run id suffixed -aa
    real_subject: Path | None = None
    sandbox_parent: Path | None = None
    adapter_options: dict[str, str] = field(default_factory=dict)
    temperature: float | None = None  # sampling of a real model; None: the endpoint's default
    seed: int | None = None  # base seed; each run gets its own (item_seed), recorded in meta.seed
    signing_key: Path | None = None  # seals every bundle (core/seal.py); None: unsigned (SKILL_EVAL_SIGNING_KEY unset)
    network_hosts: tuple[str, ...] = ()  # hosts the task needs (a scenario's network_hosts): CONNECT allowed to these

    @property
    def scripted(self) -> bool:
        return bool(self.model_server and self.model_server.startswith("scripted:"))


@dataclass
class Ran:
    """What one launch left: exit code, timed out, stopped early (stop_when held), wall-clock seconds,
    infrastructure failures, and the captured streams."""

    code: int
    timed_out: bool
    stopped: bool
    wall: float
    infra: list[str]
    stream: bytes
    stderr: bytes


def _write_private(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


def _read_private(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


def spawn(cmd: isolation.Command, cwd: Path, env: dict[str, str], stdin: bytes, out: Path, err: Path, timeout: float,
          stop_when: Callable[[bytes], bool] | None = None) -> tuple[int, bool, bool]:
    """Run the (wrapped) agent in its own process group -> (exit code, timed out, stopped early).

    A timeout, an interrupt of the runner (isolation.kill_all) or an exception kills the whole
    group. `stop_when` is polled on the stream captured so far; when it holds (a trigger run has
    shown its activation) the group is stopped, as DESIGN's trigger runs stop once activation is
    observed instead of paying for the rest of the task. An agent that cannot be started raises
    OSError (the caller records an infra_error).
    """
    out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the agent's raw streams: the runner's alone
    deadline = time.monotonic() + timeout
    with open(out, "wb") as fo, open(err, "wb") as fe:  # noqa: SIM115 - sandbox-private capture files
        try:
            proc = subprocess.Popen(cmd.argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=fo, stderr=fe,
                                    start_new_session=True, pass_fds=cmd.fds)
        finally:
            cmd.close()
        isolation.register(proc.pid)
        try:
            return _wait(proc, out, deadline, stdin, stop_when)
        except BaseException:
            if proc.poll() is None:
                isolation.kill_group(proc.pid)
                proc.wait()
            raise
        finally:
            isolation.unregister(proc.pid)


def _wait(proc: subprocess.Popen[bytes], out: Path, deadline: float, stdin: bytes,
          stop_when: Callable[[bytes], bool] | None) -> tuple[int, bool, bool]:
    try:
        proc.stdin.write(stdin)  # type: ignore[union-attr]  # stdin=PIPE: never None
        proc.stdin.close()  # type: ignore[union-attr]  # stdin=PIPE: never None
    except BrokenPipeError:
        pass
    while True:
        try:
            proc.wait(timeout=min(0.25, max(0.01, deadline - time.monotonic())))
            isolation.kill_group(proc.pid)  # nothing the agent started may outlive it
            if isolation.INTERRUPTED.is_set():
                raise isolation.Interrupted("interrupted: the run was abandoned, nothing sealed")
            return proc.returncode, False, False
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            isolation.kill_group(proc.pid)
            proc.wait()
            return proc.returncode, True, False
        if stop_when is not None and stop_when(out.read_bytes()):
            isolation.kill_group(proc.pid)
            proc.wait()
            return proc.returncode, False, True


def model_source(scripted: bool, base_url: str | None, adapter: Adapter) -> str:
    """Where the model turns came from, as the runner saw it (meta.extra.model_source): `scripted` (our
    scripted server or the in-process script), `local-endpoint` (a loopback endpoint we do not run: it may
    be a real local model or a fake; labelled like scripted everywhere), or `remote:<host>` (a provider)."""
    if scripted:
        return "scripted"
    if is_loopback(base_url):
        return "local-endpoint"
    target = base_url or adapter.default_endpoint or ""
    return f"remote:{urllib.parse.urlsplit(target).hostname or 'unknown'}"


def agent_runtime(agent_dir: Path, lay: layout.Layout, adapter: Adapter,
                  binary: str | None) -> tuple[str | None, str | None, str | None]:
    """(the agent binary, the loop's interpreter, its import path) as the agent names them.

    At the bwrap level nothing is bound from the repository or a venv: an agent CLI outside the
    system directories (the e2e cache under .cache/) is mirrored into the sandbox's agent/cli, and
    the in-process loop gets a private copy of skill_eval and its few dependencies in agent/lib."""
    if not lay.fixed:
        return binary, None, None
    if not adapter.needs_binary:
        layout.loop_library(agent_dir / "lib")
        return binary, layout.sandbox_python()[0], lay.visible(agent_dir / "lib")
    if binary is None or (root := layout.cli_root(binary)) is None:
        return binary, None, None
    layout.mirror(root, agent_dir / "cli")
    named = Path(os.path.abspath(binary))
    rel = named.relative_to(root) if named.is_relative_to(root) else named.resolve().relative_to(root)
    return lay.visible(agent_dir / "cli" / rel), None, None


class AgentLaunch:
    """One agent launch in `box` (see the module docstring). Use as a context manager: leaving it
    stops the proxy and the model server (the caller cleans up the box)."""

    def __init__(self, box: Sandbox, adapter: Adapter, opts: RunOptions, *, level: str, hidden_from: tuple[Path, Path],
                 script: ModelScript | None = None, script_file: tuple[str, bytes] | None = None,
                 binary: str | None = None, limits: network.Limits | None = None, hosts: tuple[str, ...] = ()) -> None:
        assert box.layout is not None
        self.box, self.adapter, self.opts, self.level = box, adapter, opts, level
        self.lay = box.layout
        self.hidden_from = hidden_from  # (repository root, sandbox parent): what the agent's view hides
        self.script, self.script_file, self.binary = script, script_file, binary
        self.network: network.Network = network.of(level)
        self.limits = limits or network.Limits()
        self.server: ServerHandle | None = None
        self.proxy: CredentialProxy | None = None
        self.hosts = tuple(hosts)  # hosts the task needs (a scenario's network_hosts)
        self.connect: ConnectProxy | None = None
        self.spec: LaunchSpec | None = None
        self.injected: dict[str, str] = {}
        self.processes_by = "rlimit"  # or "cgroup": what caps the agent's processes (uid 0 ignores RLIMIT_NPROC)

    def __enter__(self) -> AgentLaunch:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        if self.connect is not None:
            self.connect.stop()
        if self.server is not None:
            self.server.stop()

    # -- before the agent -------------------------------------------------------------------
    def prepare(self, prompt: str, *, seed: int | None) -> LaunchSpec:
        """Start the scripted model server and the credential proxy, stage the agent's runtime and ask
        the adapter for its launch spec (no file is written outside the sandbox)."""
        opts, adapter, lay, script = self.opts, self.adapter, self.lay, self.script
        base_url = opts.base_url
        if script is not None and adapter.model_server_kind:
            self.server = start_server(adapter.model_server_kind, script)
            base_url = self.server.url
        script_path = None
        if self.script_file is not None and not adapter.model_server_kind:  # the in-process loop reads a private copy
            name, data = self.script_file
            script_path = Path(lay.visible(self.box.private_copy("model-script" + Path(name).suffix, data)))
        # scripted turns need no key: none is forwarded (meta then does not depend on the recording machine)
        base_url, credentials = self._credential_proxy(base_url, opts.no_auth or script is not None)
        binary, python, pythonpath = agent_runtime(self.box.agent_dir, lay, adapter, self.binary or opts.binary)
        self.spec = adapter.launch(LaunchContext(
            prompt, home=Path(lay.visible(self.box.home)), workdir=Path(lay.visible(self.box.work)),
            model=None if script else opts.model, max_turns=opts.max_turns, binary=binary, base_url=base_url,
            credentials=credentials, script=script_path, max_tokens=opts.max_tokens,
            max_total_tokens=opts.max_total_tokens, temperature=None if script else opts.temperature,
            seed=None if script else seed, python=python, pythonpath=pythonpath))
        return self.spec

    def _credential_proxy(self, base_url: str | None, no_auth: bool) -> tuple[str | None, dict[str, str]]:
        """(the base URL the agent gets, the agent's credential variables); starts self.proxy.

        The provider key never enters the sandbox (runner/proxy.py): an agent that talks to a model
        endpoint is pointed at the proxy through its base-URL setting and gets the proxy's per-run
        token under its key variable; the proxy checks the token, puts the runner's real key in its
        place and forwards to the endpoint (a scripted server, --base-url, or the provider's default).
        At the bwrap level the proxy listens only on a Unix socket in the sandbox's run/ directory
        and the agent's URL is the bridge's port on its own loopback (runner/network.py). The
        in-process scripted loop talks to no endpoint: no proxy."""
        adapter = self.adapter
        if adapter.model_server_kind is None or not adapter.credential_vars:
            return base_url, {}
        target = base_url or adapter.default_endpoint
        if target is None:
            return base_url, {}
        parts = urllib.parse.urlsplit(target)
        real = None if no_auth else next((os.environ[v] for v in adapter.credential_vars if os.environ.get(v)), None)
        base = re.escape(parts.path.rstrip("/"))  # the agent's paths start with the endpoint's own path
        self.proxy = CredentialProxy(Upstream(f"{parts.scheme}://{parts.netloc}", real,
                                              routes=tuple((m, base + rx) for m, rx in adapter.api_routes),
                                              probes=tuple((m, base + rx) for m, rx in adapter.api_probes)))
        if self.network == "proxy-only":
            self.proxy.start(unix=str(self.box.run_dir / network.PROXY_SOCKET))
            url = network.inside_url(network.PROXY_PORT)
        else:
            url = self.proxy.start().url
        # The token goes under the variable the caller's key is in (the CLI then sends it in that key's form:
        # an OAuth token as Bearer, an API key as x-api-key); with none set, under the adapter's first one. A
        # skill-eval variable (codex's provider env_key) always gets it: the adapter's config names that one.
        present = [] if no_auth else [v for v in adapter.credential_vars if os.environ.get(v)]
        first = adapter.credential_vars[0]
        credentials = {v: self.proxy.token for v in (present or [first])}
        if first.startswith("SKILL_EVAL_"):
            credentials[first] = self.proxy.token
        return url + parts.path.rstrip("/"), credentials

    def _argv(self, argv: list[str]) -> list[str]:
        """The agent's argv behind the bridge at the bwrap level (unchanged below it)."""
        if self.network != "proxy-only":
            return argv
        program = self.lay.visible(network.install_bridge(self.box.agent_dir))
        listens = []
        if self.proxy is not None:
            listens.append((network.PROXY_PORT, self.lay.visible(self.box.run_dir / network.PROXY_SOCKET)))
        if self.connect is not None:
            listens.append((network.CONNECT_PORT, self.lay.visible(self.box.run_dir / network.CONNECT_SOCKET)))
        return [*network.bridge_argv(layout.sandbox_python()[0], program, listens, self.limits), *argv]

    # -- the agent ----------------------------------------------------------------------------
    def run(self, timeout: float, stop_when: Callable[[bytes], bool] | None = None) -> Ran:
        """Write the adapter's HOME files, launch the agent at the isolation level, wait for it (or the
        timeout, or stop_when), stop the proxy (the token dies with the run) and return the streams."""
        spec, box, lay = self.spec, self.box, self.lay
        assert spec is not None, "prepare() first"
        for rel, data in spec.home_files.items():
            _write_private(box.home / rel, data)
        env = {**box.env, **{k: v for k, v in spec.env.items() if k != "PATH"}}
        if self.hosts and self.network == "proxy-only":  # the task's hosts: through the CONNECT proxy only
            self.connect = ConnectProxy(self.hosts).start(str(box.run_dir / network.CONNECT_SOCKET))
            env.update(network.connect_env())
        self.injected = injected_secrets(env, spec.credential_vars)  # redacted by exact value, any length
        check_injectable(self.injected)
        raw_out, raw_err = box.root / "raw" / "stream.jsonl", box.root / "raw" / "stderr.log"
        view = isolation.agent_view(*self.hidden_from, lay, python_prefix=layout.sandbox_python()[1]) if lay.fixed else None
        isolation.prepare_tree(self.level, [box.work, box.home, box.tmp])
        cmd = isolation.wrap(self.level, self._argv(spec.argv), view, network=self.network != "proxy-only")
        group = network.pids_cgroup(box.root.name, self.limits.processes) if self.network == "proxy-only" else None
        self.processes_by = "cgroup" if group is not None else "rlimit"
        cmd.argv = [*network.cgroup_prefix(group), *cmd.argv]
        t0 = time.monotonic()
        infra: list[str] = []
        try:
            code, timed_out, stopped = spawn(cmd, box.work, env, spec.stdin, raw_out, raw_err, timeout, stop_when)
        except OSError as exc:
            code, timed_out, stopped = 127, False, False
            infra.append(f"the agent could not be started: {exc.strerror or exc}")
        finally:
            network.remove_cgroup(group)
        wall = round(time.monotonic() - t0, 3)
        if self.connect is not None:
            self.connect.stop()
        if self.proxy is not None:
            self.proxy.stop()  # the token is dead with the run
            if self.proxy.refusals:  # a request the CLI is known to make, refused: the recording is broken
                infra.append(f"the credential proxy refused {self.proxy.stats['refused']} request(s) the agent CLI "
                             f"makes: {'; '.join(self.proxy.refusals[:3])}")
        return Ran(code, timed_out, stopped, wall, infra, _read_private(raw_out), _read_private(raw_err))

    def violation_events(self) -> list[dict[str, str]]:
        """One `policy_violation` event per request the proxy refused as outside the adapter's allow-list."""
        listed = self.proxy.violations if self.proxy is not None else []
        tunnels = self.connect.refusals if self.connect is not None else []
        return ([{"type": "policy_violation", "source": "proxy", "request": v} for v in listed]
                + [{"type": "policy_violation", "source": "connect", "request": v} for v in tunnels])

    def meta_extra(self) -> dict[str, Any]:
        """What meta.extra records of the launch: credentials and the proxy's counts, the limits."""
        out: dict[str, Any] = {}
        if self.proxy is not None:
            stats: dict[str, Any] = {**self.proxy.stats, **({"refusals": self.proxy.refusals} if self.proxy.refusals else {}),
                                     **({"violations": self.proxy.violations} if self.proxy.violations else {})}
            out = {"credentials": "proxied" if self.proxy.upstream.credential else "none", "proxy": stats}
        if self.network == "proxy-only":
            out["limits"] = {**self.limits.as_dict(), "processes_by": self.processes_by}
        if self.hosts:
            out["network_hosts"] = list(self.hosts)
            if self.connect is not None:
                out["connect"] = {**self.connect.stats, **({"refusals": self.connect.refusals} if self.connect.refusals else {})}
        return out
