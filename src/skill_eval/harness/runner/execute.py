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
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from skill_eval import __version__
from skill_eval.content import claim, freshness
from skill_eval.content.config import Config
from skill_eval.content.generate import SKILL_DOMAIN
from skill_eval.content.inputs import InputRecorder
from skill_eval.content.released import released_tree
from skill_eval.core import outcomes, strict
from skill_eval.core.errors import ConfigError, message_of
from skill_eval.core.formats import FORMATS
from skill_eval.core.hashing import TreeEntry, digest_entries, sha256_bytes, tree_digest
from skill_eval.core.vocab import BundleStatus
from skill_eval.harness import shim
from skill_eval.harness.adapters import get_adapter, is_loopback
from skill_eval.harness.adapters.base import Adapter, NormalizedRun
from skill_eval.harness.modelserver.script import ModelScript, parse_script
from skill_eval.harness.runner import isolation
from skill_eval.harness.runner.bundle_writer import BundleWriter, held_path
from skill_eval.harness.runner.launch import AgentLaunch, Ran, model_source
from skill_eval.harness.runner.launch import RunOptions as RunOptions  # re-exported: callers name it here
from skill_eval.harness.runner.normalize import PathScrubber, scrub_captured, scrub_run
from skill_eval.harness.runner.plan import RunItem, bundle_path, evidence_root
from skill_eval.harness.runner.sandbox import Sandbox, SandboxError, watch_paths

# Functions allowed to touch files directly (sandbox-private paths only, never repository
# inputs); tests/harness/test_input_accessor.py enforces that nothing else in runner/ opens files.
FILE_IO_HELPERS = ("_write_private", "_read_model_script", "scripted_model_id")
PROMPTS = "prompts"


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


def _sandbox(cfg: Config, item: RunItem, opts: RunOptions, recorder: InputRecorder, parent: Path, level: str) -> Sandbox:
    """The item's sandbox: the scenario's fixture (empty for a trigger run), seed, setup and subject shim."""
    sc = item.scenario
    return Sandbox.create(parent, recorder, f"{cfg.evals_root}/fixtures/{sc.fixture}" if sc else None,
                          profile=cfg.subject if cfg.has_subject else None, real=opts.real_subject,
                          setup=sc.setup if sc else (), timeout=opts.timeout, client_python=isolation.client_python(level),
                          deny=isolation.hidden_roots(cfg.root, parent), seed=sc.seed if sc else None,
                          case=sc.id if sc else None, level=level)


def _activation_stop(adapter: Adapter, item: RunItem, names: list[str], roots: list[str],
                     seen_work: str) -> Callable[[bytes], bool] | None:
    """A trigger run stops once the stream shows an activation (None: run to the end)."""
    if item.kind != "trigger" or not names:
        return None

    def stop_when(partial: bytes) -> bool:
        events = adapter.parse(partial, roots, cwd=seen_work, installed_skills=names).events
        return any(e.get("type") == "skill_activated" for e in events)

    return stop_when


@dataclass
class _Observed:
    """The runner's reading of one finished launch: the parsed run, its scrubbed streams, status and usage."""

    nr: NormalizedRun
    streams: dict[str, bytes]
    usage: dict[str, Any]
    status: BundleStatus
    reason: str
    outcome: str
    turns: int
    infra: bool
    scrubber: PathScrubber
    attested: dict[str, list[str]]


def _observe(box: Sandbox, adapter: Adapter, ran: Ran, names: list[str], roots: list[str], seen_work: str,
             skill_dirs: list[Path], max_cost: float | None, violations: list[dict[str, str]]) -> _Observed:
    """Parse the agent's stream (after the recorder has closed), scrub machine-local paths, derive the status."""
    infra = [*ran.infra, *(f"recording failed: {f}" for f in box.stop_recording())]
    if shim.INFRA_MARKER.encode() in ran.stream or shim.INFRA_MARKER.encode() in ran.stderr:
        # a call the recorder never saw (socket gone): fail closed, even if the agent only printed it
        infra.append("recording failed: a shim client could not reach the recorder")
    nr = adapter.parse(ran.stream, roots, cwd=seen_work, installed_skills=names, exit_code=None if ran.stopped else ran.code)
    nr.events = [*nr.events, *violations]  # the graders fail a run whose agent tried to pass its proxy
    if ran.stopped:  # the cut-off stream is expected: no terminal event, killed process
        nr.errors = [e for e in nr.errors if not e.startswith(("incomplete_stream", "agent_error"))]
        nr.stop_reason = "activation_observed"
    attested = arm_isolation(skill_dirs, nr.events)
    lay = box.layout
    scrubber = PathScrubber.for_sandbox(box.root, box.work, box.home, fixed=bool(lay and lay.fixed))
    nr, streams = scrub_run(scrubber, nr, {"stream": ran.stream, "stderr": ran.stderr})
    usage = {**nr.usage, "wall_clock_s": ran.wall, "retries": nr.usage.get("retries") or 0,
             **({"stop_reason": "activation_observed"} if ran.stopped else {})}
    status, reason = _status(nr, ran.timed_out, usage.get("cost_usd"), max_cost)
    if infra:  # an infrastructure failure is never sealed complete
        status, reason = ("incomplete" if status == "complete" else status), "; ".join([*infra, reason]).strip("; ")[:2000]
    counted = usage.get("turns")
    turns = counted if isinstance(counted, int) else int(any(e.get("type") != "run_error" for e in nr.events))
    outcome = outcomes.derive(status, reason, turns=turns, infra=bool(infra))  # the one rule (skill_eval.core.outcomes)
    return _Observed(nr, streams, usage, status, reason, outcome, turns, bool(infra), scrubber, attested)


def _finish_sandbox(box: Sandbox, item: RunItem, obs: _Observed) -> tuple[dict[str, Any], Any]:
    """(the sandbox block, the scenario's facts receipt or None); an undigestable work tree is the run's error."""
    sc = item.scenario  # facts.json receipts the actions and/or the fixture's seed recipe
    try:
        sandbox_block = box.finish()
        facts = box.run_actions(sc.actions, watch=watch_paths(sc)) if sc is not None and (sc.actions or sc.seed) else None
    except SandboxError as exc:
        # The agent left a tree no digest can represent (e.g. a symlink): sealing nothing would let
        # it erase a failing run and get a fresh try on resume, so the run is sealed as its error.
        sandbox_block = {"before": box.initial.digest} if box.initial is not None else {}
        facts = None
        if not obs.infra:
            detail = message_of(exc).rsplit(f"{box.work}: ", 1)[-1]  # no machine-local path in the bundle
            obs.status = "error"
            obs.reason = f"agent_error: work tree cannot be digested ({detail}); {obs.reason}".strip("; ")[:2000]
            obs.outcome = outcomes.derive(obs.status, obs.reason, turns=obs.turns)
    return sandbox_block, facts


@dataclass(frozen=True)
class _Recorded:
    """What a recording knows besides the launch: when, which script, which skills, the attested model."""

    started_at: str
    script_rel: str | None
    script: ModelScript | None
    names: list[str]
    released: str | None
    model: str | None


def _meta(cfg: Config, item: RunItem, opts: RunOptions, cur: freshness.Current, adapter: Adapter,
          agent_info: dict[str, Any], launch: AgentLaunch, rec: _Recorded, obs: _Observed, ran: Ran,
          recorder: InputRecorder, sandbox_block: dict[str, Any]) -> dict[str, Any]:
    nr, script = obs.nr, rec.script
    meta: dict[str, Any] = {
        "schema_version": FORMATS["meta"], "kind": item.kind, "arm": item.arm, "run_id": item.run_id, "k": item.k,
        "skill": item.skill if item.kind == "behavioral" else None,
        "agent": {"name": adapter.name, "version": agent_info.get("version") or nr.agent_version or "unknown",
                  "binary_sha256": agent_info.get("sha256")},
        "model": rec.model or nr.model or "unknown", "adapter_tier": adapter.tier, "runner_version": __version__,
        "observed_inputs": recorder.observed(), "sandbox": sandbox_block,
        "started_at": rec.started_at, "finished_at": _now(), "seed": None if script else item_seed(opts.seed, item),
        "temperature": None if script else opts.temperature,
        "status": obs.status, "isolation": launch.level, "network": launch.network, "outcome": obs.outcome,
        "scripted": bool(script), "arm_isolation": obs.attested,
        "extra": {"exit_code": ran.code, "timed_out": ran.timed_out, "stopped_on_activation": ran.stopped,
                  "run_errors": nr.errors, "stop_reason": nr.stop_reason, "installed_skills": rec.names,
                  "model_script": rec.script_rel, "path_placeholders": obs.scrubber.counts,
                  **({"model_script_id": script.model_id} if script else {}), **({"aa": True} if opts.aa else {}),
                  **({"released_skill_digest": rec.released} if rec.released else {}),
                  "model_source": model_source(script is not None, opts.base_url, adapter),
                  **({"reported_model": nr.model} if nr.model else {}), **launch.meta_extra(),
                  **({"package": agent_info["package"]} if agent_info.get("package") else {})},
    }
    meta["scenario" if item.kind == "behavioral" else "prompt_id"] = item.item_id
    if obs.reason:
        meta["status_reason"] = obs.reason
    keys = set(freshness.required_keys(meta, cur))
    for obs_input in meta["observed_inputs"]:
        keys.update(cur.route(obs_input["path"]))
    meta["digests"] = {k: cur.digest(k) for k in sorted(keys) if cur.digest(k)}
    return meta


def _seal(cfg: Config, item: RunItem, opts: RunOptions, box: Sandbox, secrets: dict[str, str], prompt: str,
          obs: _Observed, facts: Any, meta: dict[str, Any]) -> Path:
    """Write and seal the bundle (its secrets redacted by the writer); returns its path."""
    dest = bundle_path(cfg, item)
    calls = box.calls()
    writer = BundleWriter(dest, secrets, root=cfg.root, held=held_path(evidence_root(cfg), dest),
                          sign=(opts.signing_key, dest.relative_to(evidence_root(cfg)).as_posix())
                          if opts.signing_key is not None else None)
    try:
        writer.add_text("prompt.txt", prompt)
        writer.add_bytes("raw/stream.jsonl", obs.streams["stream"])
        writer.add_bytes("raw/stderr.log", obs.streams["stderr"])
        writer.add_jsonl("events.jsonl", obs.nr.events)
        writer.add_text("final.md", obs.nr.final_text)
        writer.add_json("claim.json", claim.extract(obs.nr.final_text, cfg.subject).as_file())
        writer.add_json("usage.json", obs.usage)
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
    return dest


def run_item(cfg: Config, item: RunItem, opts: RunOptions, cur: freshness.Current, adapter: Adapter,
             agent_info: dict[str, Any]) -> Outcome:
    """Record one run: sandbox -> install the arm's skills -> launch (runner/launch.py) -> parse -> seal."""
    started = time.monotonic()
    started_at = _now()
    recorder = InputRecorder(cfg.root)
    script_rel, script = load_item_script(cfg, opts, item) if opts.scripted else (None, None)
    prompt = render_prompt(cfg, item, recorder, _skill_body(cfg, recorder, item))
    parent = opts.sandbox_parent or isolation.default_parent()
    level = isolation.level()
    box = _sandbox(cfg, item, opts, recorder, parent, level)
    try:
        lay = box.layout
        assert lay is not None
        # an in-process loop reads the script: the repository is hidden from the agent, so it gets a private copy
        script_file = (script_rel, _read_model_script(cfg.root / script_rel)) \
            if script_rel and not adapter.model_server_kind else None
        with AgentLaunch(box, adapter, opts, level=level, hidden_from=(cfg.root, parent), script=script,
                         script_file=script_file, binary=agent_info.get("binary"),
                         hosts=item.scenario.network_hosts if item.scenario else ()) as launch:
            spec = launch.prepare(prompt, seed=item_seed(opts.seed, item))
            names = installed_skills(item, cur)
            skill_dirs = [lay.host(d) for d in spec.skill_dirs]  # the runner installs and attests on the host side
            released = _install(cfg, recorder, names, skill_dirs[0], item.arm)
            box.initial = box.tree()  # the installed skills are part of what the agent was given
            roots, seen_work = [str(d) for d in spec.skill_dirs], lay.visible(box.work)
            ran = launch.run(opts.timeout, _activation_stop(adapter, item, names, roots, seen_work))
            obs = _observe(box, adapter, ran, names, roots, seen_work, skill_dirs, opts.max_cost_usd,
                           launch.violation_events())
            scrub_captured(obs.scrubber, box.calls(), box.record)  # abicheck prints the absolute paths it compared
            sandbox_block, facts = _finish_sandbox(box, item, obs)
            rec = _Recorded(started_at, script_rel, script, names, released,
                            scripted_model_id(cfg, opts) if script else opts.model)
            meta = _meta(cfg, item, opts, cur, adapter, agent_info, launch, rec, obs, ran, recorder, sandbox_block)
            dest = _seal(cfg, item, opts, box, {**box.secrets(spec.credential_vars), **launch.injected}, prompt, obs,
                         facts, meta)
        return Outcome(item, obs.status, obs.reason, round(time.monotonic() - started, 2), dest)
    finally:
        box.cleanup()


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
