"""One proposing agent run, sandboxed exactly as `skill-eval run` sandboxes a recording.

The same pieces, imported from the harness, in the same order as `runner.execute.run_item`:
`preflight` (adapter, binary, credential), `Sandbox.create` (a private run directory with its own
HOME and TMPDIR, nothing of the repository in it), the scripted model server or the in-process
script, the credential proxy (a real key never enters the sandbox), the adapter's launch spec,
`isolation.wrap` (bubblewrap where it works: the repository, the runner's home and every other
sandbox are not mounted at all) and `_spawn` (its own process group, killed at the timeout).

What differs from a recording: the work directory holds a copy of the skill source folders only
(at their repository-relative paths, so the copy's diff is the repository's), no skill is installed
for discovery, no shim is needed, and nothing is sealed: the runner reads the copy back through
descriptors (`improve.patch.read_copy`) once the agent's process group is gone. The failing cases
are in the prompt and, read-only, in `<agent dir>/propose/cases.json`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.content.inputs import InputRecorder
from skill_eval.core import strict
from skill_eval.core.vocab import IsolationLevel
from skill_eval.harness.adapters import LaunchContext
from skill_eval.harness.modelserver import start_server
from skill_eval.harness.modelserver.script import ModelScript, parse_script
from skill_eval.harness.runner import isolation, layout
from skill_eval.harness.runner.execute import (
    RunOptions,
    _agent_runtime,
    _credential_proxy,
    _spawn,
    model_source,
    preflight,
)
from skill_eval.harness.runner.sandbox import Sandbox
from skill_eval.harness.runner.secrets import check_injectable, injected_secrets, redact
from skill_eval.improve.patch import FileState, ProposalRejected, read_copy

CONTEXT_FILE = "propose/cases.json"


@dataclass
class AgentRun:
    """What the proposing run left: the copy's files after it, and the adapter's account of the run."""

    files: dict[str, FileState]
    adapter: str
    model: str
    model_source: str
    isolation: IsolationLevel
    exit_code: int
    timed_out: bool
    stop_reason: str
    errors: list[str]
    final_text: str
    seconds: float
    usage: dict[str, Any] = field(default_factory=dict)


def load_script(cfg: Config, opts: RunOptions) -> tuple[str, bytes, ModelScript] | None:
    """The model script of `--model-server scripted:PATH` (one file; relative to the repository root):
    (its path as given, its bytes, the parsed script)."""
    if not opts.scripted:
        return None
    rel = opts.model_server.split(":", 1)[1]  # type: ignore[union-attr]  # scripted: model_server is set
    path = cfg.root / rel
    if not path.is_file():
        from skill_eval.core.errors import ConfigError

        raise ConfigError(f"--model-server scripted:{rel}: no such model script file", source=rel,
                          fix="name one model script file (propose runs one agent, not a directory of items)")
    data = strict.read_bytes(path, max_bytes=4 * 1024 * 1024)
    return rel, data, parse_script(data, rel, yaml=not rel.endswith(".json"))


def _write(path: Path, data: bytes, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    path.chmod(0o755 if executable else 0o644)


def run_agent(cfg: Config, opts: RunOptions, staged: dict[str, FileState], prompt: str, context: bytes) -> AgentRun:
    """Run the agent once on a sandboxed copy of `staged` (repository-relative path -> file)."""
    adapter, info = preflight(cfg, opts)
    loaded = load_script(cfg, opts)
    script = loaded[2] if loaded else None
    parent = opts.sandbox_parent or isolation.default_parent()
    level = isolation.level()
    box = Sandbox.create(parent, InputRecorder(cfg.root), None, timeout=opts.timeout,
                         client_python=isolation.client_python(level), deny=isolation.hidden_roots(cfg.root, parent),
                         level=level)
    server = proxy = None
    started = time.monotonic()
    try:
        for rel, state in staged.items():
            _write(box.work / rel, state.data, state.executable)
        box.initial = box.tree()
        lay = box.layout
        assert lay is not None
        base_url = opts.base_url
        if script is not None and adapter.model_server_kind:
            server = start_server(adapter.model_server_kind, script)
            base_url = server.url
        script_path = None
        if loaded is not None and not adapter.model_server_kind:  # the in-process loop reads a private copy
            script_path = Path(lay.visible(box.private_copy("model-script" + Path(loaded[0]).suffix, loaded[1])))
        context_path = lay.visible(box.private_copy(CONTEXT_FILE, context))
        proxy, base_url, credentials = _credential_proxy(adapter, base_url, opts.no_auth or script is not None)
        binary, python, pythonpath = _agent_runtime(box.agent_dir, lay, adapter, info.get("binary") or opts.binary)
        spec = adapter.launch(LaunchContext(
            prompt.replace("{context_file}", context_path), home=Path(lay.visible(box.home)),
            workdir=Path(lay.visible(box.work)), model=None if script else opts.model, max_turns=opts.max_turns,
            binary=binary, base_url=base_url, credentials=credentials, script=script_path, max_tokens=opts.max_tokens,
            max_total_tokens=opts.max_total_tokens, temperature=None if script else opts.temperature,
            seed=None if script else opts.seed, python=python, pythonpath=pythonpath))
        for rel, data in spec.home_files.items():
            _write(box.home / rel, data)
        env = {**box.env, **{k: v for k, v in spec.env.items() if k != "PATH"}}
        injected = injected_secrets(env, spec.credential_vars)
        check_injectable(injected)
        raw_out, raw_err = box.root / "raw" / "stream.jsonl", box.root / "raw" / "stderr.log"
        view = isolation.agent_view(cfg.root, parent, lay, python_prefix=layout.sandbox_python()[1]) if lay.fixed else None
        isolation.prepare_tree(level, [box.work, box.home, box.tmp])
        errors: list[str] = []
        try:
            code, timed_out, _stopped = _spawn(isolation.wrap(level, spec.argv, view), box.work, env, spec.stdin,
                                               raw_out, raw_err, opts.timeout)
        except OSError as exc:
            code, timed_out = 127, False
            errors.append(f"the agent could not be started: {exc.strerror or exc}")
        if proxy is not None:
            proxy.stop()
        raw = raw_out.read_bytes() if raw_out.is_file() else b""
        nr = adapter.parse(raw, [str(d) for d in spec.skill_dirs], cwd=lay.visible(box.work), installed_skills=[],
                           exit_code=code)
        files = read_copy(box.work)
        secrets = {**box.secrets(spec.credential_vars), **injected}
        leaked = [rel for rel, f in files.items() if secrets and staged.get(rel) != f and redact(f.data, secrets) != f.data]
        if leaked:
            raise ProposalRejected(f"the agent wrote a credential into {leaked[0]}", source="propose",
                                   fix="re-run the proposal; never paste keys into skill sources")
        return AgentRun(
            files=files, adapter=adapter.name,
            model=script.model_id if script else (opts.model or nr.model or "unknown"),
            model_source=model_source(script is not None, opts.base_url, adapter), isolation=level,
            exit_code=code, timed_out=timed_out, stop_reason="timeout" if timed_out else nr.stop_reason,
            errors=[str(e) for e in redact([*errors, *nr.errors], secrets)],
            final_text=str(redact(nr.final_text, secrets))[:20_000], seconds=round(time.monotonic() - started, 2),
            usage={k: v for k, v in nr.usage.items() if isinstance(v, int | float)},
        )
    finally:
        if proxy is not None:
            proxy.stop()
        if server is not None:
            server.stop()
        box.cleanup()

