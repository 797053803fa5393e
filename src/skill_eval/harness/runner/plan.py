"""What a live run must produce: one RunItem per (scenario|prompt, arm, k), with its bundle path.

The plan comes from the same selection rule the evidence gate derives its expected set from,
so a maintainer who records the plan records exactly what `pr` will demand. Resume is a
property of the plan: an item whose sealed bundle already exists is done; leftovers of an
interrupted run (temp dirs that never got renamed into place) are discarded.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.content import evals, selection
from skill_eval.content.config import Config
from skill_eval.core import fsio
from skill_eval.core.errors import ConfigError
from skill_eval.harness.runner import bundle_writer

# existing_state reads earlier runs' sealed meta.json: outputs of the runner, never inputs of a run.
FILE_IO_HELPERS = ("existing_state",)
EVIDENCE = "evidence"
TMP_PREFIX = ".tmp-"
ARM_RE = re.compile(r"^(skill-agent|skill|docs|baseline|siblings|released:[^/\s]+)$")


@dataclass(frozen=True)
class RunItem:
    kind: str  # behavioral | trigger
    skill: str  # scenario's skill, or "trigger"
    arm: str
    run_id: str
    item_id: str  # scenario id or prompt id
    k: int
    scenario: evals.Scenario | None = None
    prompt: evals.TriggerPrompt | None = None

    @property
    def label(self) -> str:
        return f"{self.skill}/{self.arm}/{self.item_id}/k{self.k}"


def evidence_root(cfg: Config) -> Path:
    return cfg.evals_dir / EVIDENCE


def arm_dir(arm: str) -> str:
    """Arms become one path segment: released:v1.2 -> released-v1.2."""
    return arm.replace(":", "-")


def bundle_path(cfg: Config, item: RunItem) -> Path:
    return evidence_root(cfg) / item.skill / arm_dir(item.arm) / item.run_id / item.item_id / str(item.k)


def default_run_id(adapter: str, model: str | None) -> str:
    """Stable across restarts of the same command, so resume finds the finished bundles."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", (model or "default").split(":")[0])
    return f"{adapter}-{slug}".strip("-")


def build(
    cfg: Config,
    *,
    suite: str = "risk",
    base: str | None = None,
    ids: list[str] | None = None,
    arm: str = "skill-agent",
    k: int | None = None,
    run_id: str,
    include_trigger: bool = True,
) -> list[RunItem]:
    if not ARM_RE.match(arm):
        raise ConfigError(f"unknown arm {arm!r}", fix="use skill-agent, skill, docs, baseline, siblings or released:<git-ref>")
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", run_id):
        raise ConfigError(f"run id {run_id!r} must be letters, digits, '.', '_' or '-'")
    reps = k if k is not None else cfg.k
    chosen = selection.select(cfg, suite, base)
    scenarios = list(chosen.scenarios)
    # trigger prompts only for skill-agent, the one arm that offers skills by description
    # (selection.expected_bundles documents why); explicit ids below may still name one
    prompts = list(chosen.prompts) if include_trigger and arm == "skill-agent" else []
    if ids:
        all_scenarios = {s.id: s for s in evals.load_scenarios(cfg)}
        has_corpus = evals.present(cfg, evals.TRIGGER_CORPUS)  # a host may have scenarios and no corpus
        all_prompts = {p.id: p for p in evals.load_trigger_corpus(cfg)} if has_corpus else {}
        unknown = [i for i in ids if i not in all_scenarios and i not in all_prompts]
        if unknown:
            raise ConfigError(f"unknown scenario or prompt id(s): {', '.join(unknown)}")
        scenarios = [all_scenarios[i] for i in ids if i in all_scenarios]
        prompts = [all_prompts[i] for i in ids if i in all_prompts]
    items = [RunItem("behavioral", s.skill, arm, run_id, s.id, n, scenario=s) for s in scenarios for n in range(reps)]
    items += [RunItem("trigger", "trigger", arm, run_id, p.id, n, prompt=p) for p in prompts for n in range(reps)]
    return items


def discard_partials(cfg: Config) -> list[Path]:
    """Remove temp bundle dirs that interrupted runs left anywhere in the evidence tree.

    Each directory holding temp dirs is handed to the bundle writer's own discard, which keeps
    the temp dir of a writer that is still alive (a concurrent run) and removes the rest.
    """
    root = evidence_root(cfg)
    if not root.is_dir():
        return []
    parents = sorted({p.parent for p in root.rglob(f"{TMP_PREFIX}*") if p.is_dir() and not p.is_symlink()})
    return [removed for parent in parents for removed in bundle_writer.discard_partials(parent)]


def existing_state(cfg: Config, item: RunItem, cur: Any) -> str:
    """missing | fresh | stale | incomplete | unreadable, for an item's sealed bundle.

    Resume keeps `fresh` (complete and recorded against the current content) and, by default,
    `incomplete` (a run cut off by a budget is evidence too: retrying it silently would turn
    pass^k into pass-on-the-best-attempt). A `stale` bundle is evidence for content that no
    longer exists, so the runner replaces it.
    """
    from skill_eval.content import freshness
    from skill_eval.core import formats, schemas, strict
    from skill_eval.core.errors import InputError

    meta_path = bundle_path(cfg, item) / "meta.json"
    if not meta_path.is_file():
        return "missing"
    try:
        meta = schemas.validate(formats.upgrade(strict.load_json(meta_path), "meta", meta_path), "meta", meta_path)
    except InputError:
        return "unreadable"
    if freshness.check_bundle_freshness(cfg, meta, cur):
        return "stale"
    return "fresh" if meta.get("status") == "complete" else "incomplete"


def retire(cfg: Config, item: RunItem) -> None:
    """Move a stale bundle out of the way (rename first, so no half-deleted bundle is ever visible)."""
    path = bundle_path(cfg, item)
    if path.exists() or path.is_symlink():  # through fsio: a planted symlink is refused, never followed
        doomed = path.with_name(f"{TMP_PREFIX}retired-{path.name}-{os.getpid()}")
        fsio.rename_within(cfg.root, path, doomed)
        fsio.remove_tree(cfg.root, doomed)
