"""One run: sandbox -> install the arm's skills -> launch the agent -> record -> seal a bundle.

Everything the run reads from the repository goes through one InputRecorder, so the
bundle's `observed_inputs` is a fact the freshness check can route, not a self-report.
The agent's own output is kept untouched in raw/; events, usage and the final text come
from the adapter's parser; the claim is parsed here exactly as the graders will re-parse
it. A run cut short (timeout, max turns, budget, agent error) is sealed as an explicit
`incomplete`/`error` bundle, never dropped and never passed off as complete.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from skill_eval import __version__
from skill_eval.content import claim, freshness
from skill_eval.content.config import AgentDefaults, Config
from skill_eval.content.generate import SKILL_DOMAIN
from skill_eval.content.inputs import InputRecorder
from skill_eval.content.released import released_tree
from skill_eval.core import outcomes, strict
from skill_eval.core.errors import ConfigError, message_of
from skill_eval.core.formats import FORMATS
from skill_eval.core.hashing import TreeEntry, digest_entries, sha256_bytes, tree_digest
from skill_eval.core.vocab import BundleStatus
from skill_eval.harness import shim
from skill_eval.harness.adapters import LaunchContext, get_adapter, is_loopback
from skill_eval.harness.adapters.base import Adapter, NormalizedRun
from skill_eval.harness.modelserver import start_server
from skill_eval.harness.modelserver.script import ModelScript, parse_script
from skill_eval.harness.runner import isolation, layout
from skill_eval.harness.runner.bundle_writer import BundleWriter, held_path
from skill_eval.harness.runner.normalize import PathScrubber, scrub_captured, scrub_run
from skill_eval.harness.runner.plan import RunItem, bundle_path, evidence_root
from skill_eval.harness.runner.proxy import CredentialProxy, Upstream
from skill_eval.harness.runner.sandbox import Sandbox, SandboxError, watch_paths
from skill_eval.harness.runner.secrets import check_injectable, injected_secrets

# Functions allowed to touch files directly (sandbox-private paths only, never repository
# inputs); tests/harness/test_input_accessor.py enforces that nothing else in runner/ opens files.
FILE_IO_HELPERS = ("_write_private", "_read_private", "_spawn", "_read_model_script", "scripted_model_id")
PROMPTS = "prompts"


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

    @property
    def scripted(self) -> bool:
        return bool(self.model_server and self.model_server.startswith("scripted:"))


@dataclass(frozen=True)
class Outcome:
    item: RunItem
    status: BundleStatus | Literal["skipped"]
    reason: str
    seconds: float
    path: Path | None


def _write_private(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


def _read_private(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def script_path(cfg: Config, opts: RunOptions, item: RunItem) -> str:
    """The model script for this item: the file itself, or <dir>/<id>.yaml (trigger/<id>.yaml)."""
    assert opts.model_server is not None
    rel = opts.model_server.split(":", 1)[1].rstrip("/")
    if (cfg.root / rel).is_file():
        return rel
    sub = "trigger/" if item.kind == "trigger" else ""
    return f"{rel}/{sub}{item.item_id}.yaml"


def _read_model_script(path: Path) -> bytes:
    """A model script is the *model*, not a repository input of the skills: like a real model's
    version it is identified by the bundle's `model` id, so it is read here and not through the
    InputRecorder (editing a script must not make every other run's evidence stale)."""
    return strict.read_bytes(path)


def scripted_model_id(cfg: Config, opts: RunOptions) -> str:
    """`scripted:<digest>` of the script file, or of the whole script directory, so one recording
    of a suite shares one model id (and one baseline per skill and agent)."""
    rel = opts.model_server.split(":", 1)[1].rstrip("/")  # type: ignore[union-attr]  # called only for a scripted run: model_server is set
    path = cfg.root / rel
    if path.is_dir():
        return "scripted:" + tree_digest(path, "skill-eval-model-scripts-v1")
    return "scripted:" + sha256_bytes(_read_model_script(path))


def load_item_script(cfg: Config, opts: RunOptions, item: RunItem) -> tuple[str, ModelScript]:
    rel = script_path(cfg, opts, item)
    if not (cfg.root / rel).is_file():
        raise ConfigError(f"no model script {rel} for {item.item_id}", fix="write one, or pass --model-server scripted:FILE")
    return rel, parse_script(_read_model_script(cfg.root / rel), rel, yaml=not rel.endswith(".json"))


def render_prompt(cfg: Config, item: RunItem, recorder: InputRecorder, skill_body: str | None) -> str:
    template = recorder.read_text(f"{cfg.evals_root}/{PROMPTS}/{'trigger' if item.kind == 'trigger' else 'behavioral'}.md")
    text = item.scenario.prompt if item.scenario else item.prompt.prompt  # type: ignore[union-attr]  # a RunItem has a scenario or a prompt
    rendered = template.replace("{prompt}", text.strip())
    if skill_body:  # the `skill` arm: the body is given, not discovered
        rendered = f"{skill_body.strip()}\n\n---\n\n{rendered}"
    return rendered


def installed_skills(item: RunItem, cur: freshness.Current) -> list[str]:
    """Which skills the arm offers: the scenario's skill, every skill for trigger runs and for the
    `siblings` arm (interference: the skill under test among all its repository siblings), none
    for baseline/docs (controls) or skill (its body is in the prompt instead)."""
    if item.arm in ("baseline", "docs", "skill"):
        return []
    if item.kind == "trigger" or item.arm == "siblings":
        return sorted(cur.skills)
    return [item.skill]


def arm_isolation(skill_dirs: list[Path], events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The runner's attestation of what skill files the agent could discover and what it reached.

    `discoverable`: every file found (by the runner, after the run) under each of the adapter's
    skill directories, as `<skill>/<path>`: what was installed where the agent looks, plus
    anything it wrote there. `read`: the skills/files the parsed events show it activating
    (`<skill>/SKILL.md`) or reading (`<skill>/<path>`). Facts from the sandbox and the runner's
    parse of the stream, never the agent's own account.
    """
    found: set[str] = set()
    for d in skill_dirs:
        if d.is_dir() and not d.is_symlink():
            found.update(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file() or p.is_symlink())
    read: set[str] = set()
    for ev in events:
        name = ev.get("skill")
        if not isinstance(name, str) or not name:
            continue
        if ev.get("type") == "skill_activated":
            read.add(f"{name}/SKILL.md")
        elif ev.get("type") == "skill_file_read":
            rel = str(ev.get("path") or "SKILL.md").rsplit(f"/{name}/", 1)[-1].lstrip("/")
            read.add(f"{name}/{rel}")
    return {"discoverable": sorted(found)[:10000], "read": sorted(read)[:10000]}


def _published(cfg: Config) -> str:
    if not cfg.published:
        raise ConfigError("skills.published is empty; the runner installs skills from a published copy")
    return cfg.published[0]


def _install(cfg: Config, recorder: InputRecorder, names: list[str], dest: Path, arm: str = "skill-agent") -> str | None:
    """Write the arm's skills where the agent discovers them; returns the released tree digest, if any."""
    released = None
    for name in names:
        if arm.startswith("released:"):
            files = released_tree(cfg, arm.split(":", 1)[1], name)
            released = digest_entries(SKILL_DOMAIN, [TreeEntry(k, "100644", v) for k, v in files.items()])
        else:
            files = recorder.read_tree(f"{_published(cfg)}/{name}")
        for rel, data in files.items():
            _write_private(dest / name / rel, data)
    return released


def _skill_body(cfg: Config, recorder: InputRecorder, item: RunItem) -> str | None:
    if item.arm == "skill":
        return recorder.read_text(f"{_published(cfg)}/{item.skill}/SKILL.md")
    if item.arm == "docs" and cfg.subject.cli_reference:
        return "Reference for the tool you may use:\n\n" + recorder.read_text(cfg.subject.cli_reference)
    return None


def _spawn(cmd: isolation.Command, cwd: Path, env: dict[str, str], stdin: bytes, out: Path, err: Path, timeout: float,
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
        except BaseException:
            if proc.poll() is None:
                isolation.kill_group(proc.pid)
                proc.wait()
            raise
        finally:
            isolation.unregister(proc.pid)


def _status(nr: NormalizedRun, timed_out: bool, cost: float | None, max_cost: float | None) -> tuple[BundleStatus, str]:
    if timed_out:
        return "incomplete", "timeout: wall-clock budget exhausted"
    if max_cost is not None and cost is not None and cost > max_cost:
        return "incomplete", f"budget: cost {cost:.4f} USD > max {max_cost}"
    if nr.stop_reason in ("max_turns", "budget", "incomplete"):
        return "incomplete", f"{nr.stop_reason}: " + "; ".join(nr.errors or [nr.stop_reason])
    if nr.errors:
        return "error", "; ".join(nr.errors)[:2000]
    return "complete", ""


def item_seed(base: int | None, item: RunItem) -> int | None:
    """One seed per run, derived from the base seed and the run's identity (run id included).

    Why not the base seed itself: the k repeats (and an A/A replicate, which has its own run id)
    would then sample the same tokens from the same prompt, and a noise measurement would
    measure nothing. Derived, not random, so a recording can be reproduced from its meta.json.
    """
    if base is None:
        return None
    key = f"{base}/{item.run_id}/{item.kind}/{item.item_id}/{item.k}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


def run_item(cfg: Config, item: RunItem, opts: RunOptions, cur: freshness.Current, adapter: Adapter,
             agent_info: dict[str, Any]) -> Outcome:
    started = time.monotonic()
    started_at = _now()
    recorder = InputRecorder(cfg.root)
    dest = bundle_path(cfg, item)
    script_rel, script = (None, None)
    if opts.scripted:
        script_rel, script = load_item_script(cfg, opts, item)
    prompt = render_prompt(cfg, item, recorder, _skill_body(cfg, recorder, item))
    fixture = f"{cfg.evals_root}/fixtures/{item.scenario.fixture}" if item.scenario else None
    parent = opts.sandbox_parent or isolation.default_parent()
    level = isolation.level()
    box = Sandbox.create(parent, recorder, fixture, profile=cfg.subject if cfg.has_subject else None,
                         real=opts.real_subject, setup=item.scenario.setup if item.scenario else (), timeout=opts.timeout,
                         client_python=isolation.client_python(level), deny=isolation.hidden_roots(cfg.root, parent),
                         seed=item.scenario.seed if item.scenario else None,
                         case=item.scenario.id if item.scenario else None, level=level)
    server = proxy = None
    try:
        base_url = opts.base_url
        if script is not None and adapter.model_server_kind:
            server = start_server(adapter.model_server_kind, script)
            base_url = server.url
        lay = box.layout
        assert lay is not None
        script_path = None
        if script_rel and not adapter.model_server_kind:  # an in-process loop reads the script: the repository is
            # hidden from the agent, so it gets a private copy
            script_path = Path(lay.visible(box.private_copy("model-script" + Path(script_rel).suffix,
                                                            _read_model_script(cfg.root / script_rel))))
        # scripted turns need no key: none is forwarded (meta then does not depend on the recording machine)
        proxy, base_url, credentials = _credential_proxy(adapter, base_url, opts.no_auth or script is not None)
        model = scripted_model_id(cfg, opts) if script else opts.model
        binary, python, pythonpath = _agent_runtime(box.agent_dir, lay, adapter, agent_info.get("binary") or opts.binary)
        spec = adapter.launch(LaunchContext(
            prompt, home=Path(lay.visible(box.home)), workdir=Path(lay.visible(box.work)), model=None if script else opts.model,
            max_turns=opts.max_turns, binary=binary, base_url=base_url, credentials=credentials, script=script_path,
            max_tokens=opts.max_tokens, max_total_tokens=opts.max_total_tokens,
            temperature=None if script else opts.temperature, seed=None if script else item_seed(opts.seed, item),
            python=python, pythonpath=pythonpath))
        names = installed_skills(item, cur)
        skill_dirs = [lay.host(d) for d in spec.skill_dirs]  # the runner installs and attests on the host side
        released = _install(cfg, recorder, names, skill_dirs[0], item.arm)
        box.initial = box.tree()  # the installed skills are part of what the agent was given
        for rel, data in spec.home_files.items():
            _write_private(box.home / rel, data)
        env = {**box.env, **{k: v for k, v in spec.env.items() if k != "PATH"}}
        injected = injected_secrets(env, spec.credential_vars)  # redacted by exact value, any length
        check_injectable(injected)
        raw_out, raw_err = box.root / "raw" / "stream.jsonl", box.root / "raw" / "stderr.log"
        roots = [str(d) for d in spec.skill_dirs]
        seen_work = lay.visible(box.work)
        stop_when = None
        if item.kind == "trigger" and names:
            def stop_when(partial: bytes) -> bool:
                events = adapter.parse(partial, roots, cwd=seen_work, installed_skills=names).events
                return any(e.get("type") == "skill_activated" for e in events)
        view = isolation.agent_view(cfg.root, parent, lay, python_prefix=layout.sandbox_python()[1]) if lay.fixed else None
        isolation.prepare_tree(level, [box.work, box.home, box.tmp])
        t0 = time.monotonic()
        infra: list[str] = []
        try:
            code, timed_out, stopped = _spawn(isolation.wrap(level, spec.argv, view), box.work, env, spec.stdin,
                                              raw_out, raw_err, opts.timeout, stop_when)
        except OSError as exc:
            code, timed_out, stopped = 127, False, False
            infra.append(f"the agent could not be started: {exc.strerror or exc}")
        wall = round(time.monotonic() - t0, 3)
        if proxy is not None:
            proxy.stop()  # the token is dead with the run
        infra += [f"recording failed: {f}" for f in box.stop_recording()]
        raw = _read_private(raw_out)
        if shim.INFRA_MARKER.encode() in raw or shim.INFRA_MARKER.encode() in _read_private(raw_err):
            # a call the recorder never saw (socket gone): fail closed, even if the agent only printed it
            infra.append("recording failed: a shim client could not reach the recorder")
        nr = adapter.parse(raw, roots, cwd=seen_work, installed_skills=names, exit_code=None if stopped else code)
        if stopped:  # the cut-off stream is expected: no terminal event, killed process
            nr.errors = [e for e in nr.errors if not e.startswith(("incomplete_stream", "agent_error"))]
            nr.stop_reason = "activation_observed"
        attested = arm_isolation(skill_dirs, nr.events)
        scrubber = PathScrubber.for_sandbox(box.root, box.work, box.home, fixed=lay.fixed)
        nr, streams = scrub_run(scrubber, nr, {"stream": raw, "stderr": _read_private(raw_err)})
        usage = {**nr.usage, "wall_clock_s": wall, "retries": nr.usage.get("retries") or 0,
                 **({"stop_reason": "activation_observed"} if stopped else {})}
        status, reason = _status(nr, timed_out, usage.get("cost_usd"), opts.max_cost_usd)
        if infra:  # an infrastructure failure is never sealed complete
            status, reason = ("incomplete" if status == "complete" else status), "; ".join([*infra, reason]).strip("; ")[:2000]
        turns = usage.get("turns") if isinstance(usage.get("turns"), int) else int(any(e.get("type") != "run_error" for e in nr.events))
        outcome = outcomes.derive(status, reason, turns=turns, infra=bool(infra))  # the one rule (skill_eval.core.outcomes)
        calls = box.calls()
        scrub_captured(scrubber, calls, box.record)  # abicheck prints the absolute paths it compared
        sc = item.scenario  # facts.json receipts the actions and/or the fixture's seed recipe
        try:
            sandbox_block = box.finish()
            facts = box.run_actions(sc.actions, watch=watch_paths(sc)) if sc is not None and (sc.actions or sc.seed) else None
        except SandboxError as exc:
            # The agent left a tree no digest can represent (e.g. a symlink): sealing nothing would let
            # it erase a failing run and get a fresh try on resume, so the run is sealed as its error.
            sandbox_block = {"before": box.initial.digest} if box.initial is not None else {}
            facts = None
            if not infra:
                detail = message_of(exc).rsplit(f"{box.work}: ", 1)[-1]  # no machine-local path in the bundle
                status, reason = "error", f"agent_error: work tree cannot be digested ({detail}); {reason}".strip("; ")[:2000]
                outcome = outcomes.derive(status, reason, turns=turns)
        parsed = claim.extract(nr.final_text, cfg.subject)
        meta: dict[str, Any] = {
            "schema_version": FORMATS["meta"], "kind": item.kind, "arm": item.arm, "run_id": item.run_id, "k": item.k,
            "skill": item.skill if item.kind == "behavioral" else None,
            "agent": {"name": adapter.name, "version": agent_info.get("version") or nr.agent_version or "unknown",
                      "binary_sha256": agent_info.get("sha256")},
            "model": model or nr.model or "unknown", "adapter_tier": adapter.tier, "runner_version": __version__,
            "observed_inputs": recorder.observed(), "sandbox": sandbox_block,
            "started_at": started_at, "finished_at": _now(), "seed": None if script else item_seed(opts.seed, item),
            "temperature": None if script else opts.temperature,
            "status": status, "isolation": level, "outcome": outcome, "scripted": bool(script), "arm_isolation": attested,
            "extra": {"exit_code": code, "timed_out": timed_out, "stopped_on_activation": stopped, "run_errors": nr.errors, "stop_reason": nr.stop_reason,
                      "installed_skills": names, "model_script": script_rel, "path_placeholders": scrubber.counts,
                      **({"model_script_id": script.model_id} if script else {}), **({"aa": True} if opts.aa else {}),
                      **({"released_skill_digest": released} if released else {}),
                      "model_source": model_source(script is not None, opts.base_url, adapter),
                      **({"reported_model": nr.model} if nr.model else {}),
                      **({"credentials": "proxied" if proxy.upstream.credential else "none",
                          "proxy": {**proxy.stats, **({"refusals": proxy.refusals} if proxy.refusals else {})}}
                         if proxy is not None else {}), **({"package": agent_info["package"]} if agent_info.get("package") else {})},
        }
        if item.kind == "behavioral":
            meta["scenario"] = item.item_id
        else:
            meta["prompt_id"] = item.item_id
        if reason:
            meta["status_reason"] = reason
        keys = set(freshness.required_keys(meta, cur))
        for obs in meta["observed_inputs"]:
            keys.update(cur.route(obs["path"]))
        meta["digests"] = {k: cur.digest(k) for k in sorted(keys) if cur.digest(k)}
        writer = BundleWriter(dest, {**box.secrets(spec.credential_vars), **injected}, root=cfg.root,
                              held=held_path(evidence_root(cfg), dest),
                              sign=(opts.signing_key, dest.relative_to(evidence_root(cfg)).as_posix())
                              if opts.signing_key is not None else None)
        try:
            writer.add_text("prompt.txt", prompt)
            writer.add_bytes("raw/stream.jsonl", streams["stream"])
            writer.add_bytes("raw/stderr.log", streams["stderr"])
            writer.add_jsonl("events.jsonl", nr.events)
            writer.add_text("final.md", nr.final_text)
            writer.add_json("claim.json", parsed.as_file())
            writer.add_json("usage.json", usage)
            if item.kind == "behavioral":
                writer.add_jsonl("calls.jsonl", calls)
                if (box.record / "captured").is_dir():
                    writer.add_tree("captured", box.record / "captured")
            if facts is not None:
                writer.add_json("facts.json", facts.facts)
                for digest, data in facts.blobs.items():
                    writer.add_bytes(f"facts/blobs/{digest}", data)
            writer.add_json("meta.json", meta)
            writer.seal()
        except BaseException:
            writer.abort()
            raise
        return Outcome(item, status, reason, round(time.monotonic() - started, 2), dest)
    finally:
        if proxy is not None:
            proxy.stop()
        if server is not None:
            server.stop()
        box.cleanup()


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


def _credential_proxy(adapter: Adapter, base_url: str | None,
                      no_auth: bool) -> tuple[CredentialProxy | None, str | None, dict[str, str]]:
    """(the run's credential proxy, the base URL the agent gets, the agent's credential variables).

    The provider key never enters the sandbox (runner/proxy.py): an agent that talks to a model
    endpoint is pointed at a loopback proxy through its base-URL setting and gets the proxy's
    per-run token under its key variable; the proxy checks the token, puts the runner's real key
    in its place and forwards to the endpoint (a scripted server, --base-url, or the provider's
    default). The in-process scripted loop talks to no endpoint: no proxy."""
    if adapter.model_server_kind is None or not adapter.credential_vars:
        return None, base_url, {}
    target = base_url or adapter.default_endpoint
    if target is None:
        return None, base_url, {}
    parts = urllib.parse.urlsplit(target)
    real = None if no_auth else next((os.environ[v] for v in adapter.credential_vars if os.environ.get(v)), None)
    proxy = CredentialProxy(Upstream(f"{parts.scheme}://{parts.netloc}", real)).start()
    # The token goes under the variable the caller's key is in (the CLI then sends it in that key's form:
    # an OAuth token as Bearer, an API key as x-api-key); with none set, under the adapter's first one. A
    # skill-eval variable (codex's provider env_key) always gets it: the adapter's config names that one.
    present = [] if no_auth else [v for v in adapter.credential_vars if os.environ.get(v)]
    first = adapter.credential_vars[0]
    credentials = {v: proxy.token for v in (present or [first])}
    if first.startswith("SKILL_EVAL_"):
        credentials[first] = proxy.token
    return proxy, proxy.url + parts.path.rstrip("/"), credentials


def _agent_runtime(agent_dir: Path, lay: layout.Layout, adapter: Adapter,
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


def resolve_binary(adapter: Adapter, explicit: str | None, root: Path) -> str | None:
    """--agent-binary, PATH, then the e2e cache (.cache/agent-clis); None for in-process adapters."""
    if not adapter.needs_binary:
        return None
    if explicit:
        if not Path(explicit).is_file():
            raise ConfigError(f"--agent-binary {explicit} does not exist")
        return explicit
    found = shutil.which(adapter.executable)
    cached = root / ".cache" / "agent-clis" / "node_modules" / ".bin" / adapter.executable
    if found:
        return found
    if cached.exists():
        return str(cached)
    package = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli"}.get(adapter.executable, adapter.executable)
    raise ConfigError(f"the {adapter.name} agent binary `{adapter.executable}` is not installed",
                      fix=f"npm install -g {package} (or `python scripts/install_agent_clis.py`), or pass --agent-binary PATH")


def preflight(cfg: Config, opts: RunOptions) -> tuple[Adapter, dict[str, Any]]:
    """Fail early and clearly: unknown adapter, missing binary, missing credential, missing subject."""
    adapter = get_adapter(opts.adapter, **opts.adapter_options)
    binary = resolve_binary(adapter, opts.binary, cfg.root)
    if adapter.model_server_kind is None and not opts.scripted:
        raise ConfigError(f"the {adapter.name} adapter needs --model-server scripted:PATH (a model script or a directory of them)")
    if adapter.needs_endpoint and not opts.scripted and not opts.base_url:
        raise ConfigError(f"{adapter.name} needs an endpoint", fix="pass --base-url (e.g. http://127.0.0.1:11434/v1)")
    keyless = opts.scripted or opts.no_auth or is_loopback(opts.base_url)  # a local server needs no key
    if not keyless and adapter.credential_vars and not any(os.environ.get(v) for v in adapter.credential_vars):
        raise ConfigError(f"no credential for {adapter.name}: none of {', '.join(adapter.credential_vars)} is set",
                          fix="export one of them, pass --no-auth for an endpoint without one, or record with scripted "
                              "model turns: --model-server scripted:PATH")
    info: dict[str, Any] = {}
    if binary:
        bi = adapter.binary_info(binary)
        info = {"version": bi.version, "sha256": bi.sha256, "package": getattr(bi, "package", None)}
    else:
        import sys

        info = {"version": f"skill-eval {__version__} (python {sys.version.split()[0]})", "sha256": None}
    return adapter, {**info, "binary": binary}
