"""The evaluation pack: every digest freshness reads, generated and committed.

Entries are per skill, per scenario, plus the trigger corpus and the harness — never
one whole-pack hash, so a single-skill edit invalidates only that skill's evidence.
Each entry lists its inputs with their own digests, so `--check` can say exactly
which input moved. The consumed-surface digest is computed on demand, never
committed, so an unrelated PR cannot leave the committed pack silently stale.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.content import evals
from skill_eval.content.config import Config
from skill_eval.content.generate import skill_digest
from skill_eval.content.skills import Skill, discover
from skill_eval.core import formats, fsio, schemas, strict
from skill_eval.core.errors import CheckFailed, InputError
from skill_eval.core.hashing import (
    MODE_EXEC,
    MODE_FILE,
    TreeEntry,
    digest_entries,
    record_digest,
    sha256_bytes,
    tree_digest,
    walk_tree,
)

PACK_NAME = "skill-eval-pack.json"
GENERATOR = "skill-eval pack v1"
SCENARIO_DOMAIN = "skill-eval-scenario-v1"
CORPUS_DOMAIN = "skill-eval-corpus-v1"
HARNESS_DOMAIN = "skill-eval-harness-v1"
SURFACE_DOMAIN = "skill-eval-surface-v1"
LAUNCH_CONFIG = "skill-eval.toml#agent,subject"


@dataclass(frozen=True)
class Entry:
    """One digest of the evaluation pack: its key, value, the skills it affects and the inputs hashed."""

    key: str
    digest: str
    affects: tuple[str, ...]
    inputs: dict[str, str]

    def as_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "affects": list(self.affects), "inputs": dict(sorted(self.inputs.items()))}


def pack_path(cfg: Config) -> Path:
    return fsio.repo_path(cfg.root, f"{cfg.evals_root}/{PACK_NAME}")


def _file_digest(cfg: Config, rel: str) -> str:
    return sha256_bytes(strict.read_bytes(fsio.repo_path(cfg.root, rel)))


def _path_entries(cfg: Config, rel: str) -> list[TreeEntry]:
    """Files of a harness path as tree entries named by their repository path."""
    path = fsio.repo_path(cfg.root, rel)
    if path.is_symlink():
        raise InputError("harness path is a symlink", source=path)
    if path.is_dir():
        return [TreeEntry(f"{rel}/{e.path}", e.mode, e.data) for e in walk_tree(path) if "__pycache__/" not in f"{e.path}"]
    if not path.is_file():
        raise InputError(f"harness path {rel!r} does not exist", source=cfg.source, fix="fix evals.harness in the config")
    mode = MODE_EXEC if os.access(path, os.X_OK) else MODE_FILE
    return [TreeEntry(rel, mode, strict.read_bytes(path))]


TOOL_HARNESS = ("adapters", "runner", "modelserver", "shim.py")  # below skill_eval/harness/


def tool_harness_files() -> dict[str, list[TreeEntry]]:
    """skill-eval's own run-shaping source, named `skill-eval:<part>` (not repository paths)."""
    pkg = Path(__file__).resolve().parents[1] / "harness"
    out: dict[str, list[TreeEntry]] = {}
    for part in TOOL_HARNESS:
        path = pkg / part
        if path.is_dir():
            files = [TreeEntry(f"skill-eval:{part}/{e.path}", e.mode, e.data) for e in walk_tree(path, skip_dirs=frozenset({".git", "__pycache__"}))]
        elif path.is_file():
            files = [TreeEntry(f"skill-eval:{part}", MODE_FILE, path.read_bytes())]
        else:
            continue
        out[f"skill-eval:{part}"] = files
    return out


def skill_entry(cfg: Config, skill: Skill) -> Entry:
    """Source folder + cited fragments; the published copies route here too (the runner
    installs a skill by reading its published copy, which the L0 parity check pins)."""
    inputs = {skill.dir: tree_digest(fsio.repo_path(cfg.root, skill.dir))}
    for frag in skill.cites:
        inputs[frag] = _file_digest(cfg, frag)
    digest = skill_digest(cfg, skill)
    for root in cfg.published:
        inputs[f"{root}/{skill.name}"] = digest
    return Entry(f"skill:{skill.name}", digest, (skill.name,), inputs)


def scenario_entry(cfg: Config, scenario: evals.Scenario, truth: evals.TruthCase | None) -> Entry:
    """A scenario's digest: its record, its fixture tree (seed.json included) and, for a verdict
    question, its ground-truth case (an oracle scenario has none)."""
    ev = cfg.evals_root
    fixture_rel = f"{ev}/{evals.FIXTURES}/{scenario.fixture}"
    fixture_digest = tree_digest(fsio.repo_path(cfg.root, fixture_rel))
    record = {"scenario": scenario.record, "fixture": fixture_digest}
    inputs = {
        f"{ev}/{evals.SCENARIOS}#{scenario.id}": record_digest(SCENARIO_DOMAIN, scenario.record),
        fixture_rel: fixture_digest,
    }
    if truth is not None:
        record["truth"] = truth.record
        inputs[f"{ev}/{evals.GROUND_TRUTH}#{truth.id}"] = record_digest(SCENARIO_DOMAIN, truth.record)
    return Entry(f"scenario:{scenario.id}", record_digest(SCENARIO_DOMAIN, record), (scenario.skill,), inputs)


def corpus_entry(cfg: Config, skills: list[str]) -> Entry:
    rel = f"{cfg.evals_root}/{evals.TRIGGER_CORPUS}"
    data = strict.read_bytes(fsio.repo_path(cfg.root, rel))
    digest = digest_entries(CORPUS_DOMAIN, [TreeEntry(rel, MODE_FILE, data)])
    return Entry("corpus", digest, tuple(skills), {rel: sha256_bytes(data)})


def harness_entry(cfg: Config, skills: list[str]) -> Entry:
    entries: list[TreeEntry] = []
    inputs: dict[str, str] = {}
    for rel in cfg.harness:
        files = _path_entries(cfg, rel)
        entries.extend(files)
        inputs[rel] = digest_entries(HARNESS_DOMAIN, files)
    if cfg.tool_harness:
        for name, files in tool_harness_files().items():
            entries.extend(files)
            inputs[name] = digest_entries(HARNESS_DOMAIN, files)
    launch = {"agent": cfg.raw.get("agent", {}), "subject": cfg.raw.get("subject")}
    launch_digest = record_digest(HARNESS_DOMAIN, launch)
    entries.append(TreeEntry(LAUNCH_CONFIG, MODE_FILE, launch_digest.encode()))
    inputs[LAUNCH_CONFIG] = launch_digest
    return Entry("harness", digest_entries(HARNESS_DOMAIN, entries), tuple(skills), inputs)


def surface_digest(cfg: Config) -> str:
    """The consumed surface of the subject tool, computed on demand (never committed)."""
    entries = []
    for rel in cfg.subject.surface_files:
        entries.extend(_path_entries(cfg, rel))
    return digest_entries(SURFACE_DOMAIN, entries)


def compute(cfg: Config, skills: dict[str, Skill] | None = None) -> dict[str, Entry]:
    """Every pack entry for the current working tree."""
    skills = skills if skills is not None else discover(cfg)
    names = sorted(skills)
    # Scenarios, ground truth, the trigger corpus and the rubric are features a host turns on
    # by adding the file (DESIGN §3 turn 2); a present file is always loaded and validated.
    truth = evals.load_ground_truth(cfg) if evals.present(cfg, evals.GROUND_TRUTH) else {}
    scenarios = evals.load_scenarios(cfg, skills=set(names), truth=truth) if evals.present(cfg, evals.SCENARIOS) else []
    # Validate every content file here too, so `pack --check` (the pre-commit hook) fails
    # closed on a malformed corpus or rubric even though only their bytes are hashed.
    has_corpus = evals.present(cfg, evals.TRIGGER_CORPUS)
    if has_corpus:
        evals.load_trigger_corpus(cfg, skills=set(names))
    if evals.present(cfg, evals.RUBRIC):
        evals.load_rubric(cfg)
    entries: dict[str, Entry] = {}
    for name in names:
        e = skill_entry(cfg, skills[name])
        entries[e.key] = e
    for sc in scenarios:
        e = scenario_entry(cfg, sc, truth.get(sc.fixture) if sc.verdict else None)
        entries[e.key] = e
    if names:
        for e in ((corpus_entry(cfg, names),) if has_corpus else ()) + (harness_entry(cfg, names),):
            entries[e.key] = e
    return entries


def render(entries: dict[str, Entry]) -> str:
    doc = {
        "schema_version": formats.FORMATS["pack"],
        "generator": GENERATOR,
        "entries": {k: entries[k].as_json() for k in sorted(entries)},
    }
    return strict.dumps_json(doc)


def write(cfg: Config, entries: dict[str, Entry] | None = None) -> Path:
    """Write the pack atomically, never through a symlink (fsio.write_file)."""
    entries = entries if entries is not None else compute(cfg)
    return fsio.write_file(cfg.root, pack_path(cfg), render(entries))


def load_committed_text(cfg: Config, text: str, source: object) -> dict[str, Entry]:
    doc = schemas.validate(formats.upgrade(strict.loads_json(text, source), "pack", source), "pack", source)
    return {
        k: Entry(k, v["digest"], tuple(v["affects"]), dict(v["inputs"]))
        for k, v in doc["entries"].items()
    }


def load_committed(cfg: Config) -> dict[str, Entry]:
    path = pack_path(cfg)
    if not path.is_file():
        raise CheckFailed(f"{path.relative_to(cfg.root)} does not exist", fix="run `skill-eval pack` and commit it")
    return load_committed_text(cfg, strict.read_text(path), path)


def diff(committed: dict[str, Entry], current: dict[str, Entry]) -> list[str]:
    """Human-readable list of every entry that moved, naming the inputs that moved."""
    problems = []
    for key in sorted(set(committed) | set(current)):
        old, new = committed.get(key), current.get(key)
        if old is None:
            assert new is not None  # the key came from one of the two
            problems.append(f"{key}: new entry not in the committed pack (affects {', '.join(new.affects)})")
            continue
        if new is None:
            problems.append(f"{key}: in the committed pack but no longer exists")
            continue
        if old.digest == new.digest and old.inputs == new.inputs and old.affects == new.affects:
            continue
        moved = sorted(p for p in set(old.inputs) | set(new.inputs) if old.inputs.get(p) != new.inputs.get(p))
        what = f"inputs moved: {', '.join(moved)}" if moved else "digest does not match its inputs (hand-edited?)"
        if old.affects != new.affects:
            what += f"; affected skills {list(old.affects)} -> {list(new.affects)}"
        problems.append(f"{key}: {what} (affects {', '.join(new.affects)})")
    return problems


def check(cfg: Config) -> list[str]:
    """Problems with the committed pack: stale entries, or bytes not in generated form."""
    path = pack_path(cfg)
    current = compute(cfg)
    committed = load_committed(cfg)
    problems = diff(committed, current)
    if not problems and strict.read_text(path) != render(current):
        problems.append(f"{path.relative_to(cfg.root)}: not in generated form (hand-edited formatting?)")
    return problems
