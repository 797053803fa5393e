"""Support for the verdict-free (oracle-only) host tests: a small synthetic repository.

No test lives here. The host's subject declares only a name (no verdict profile), two modes
(committed; local, which needs decoy and provenance bytes), two skills, one oracle scenario
per skill x mode, and a seed.json per fixture. `make_host(tmp, **changes)` writes it and
returns the loaded Config; helpers let a test break exactly one thing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from skill_eval.content import config

SKILLS = ("notes-add", "notes-check")
DECOY = b'{"state": "stale", "written_by": "an older run"}\n'
SENTINEL = b"provenance: skill-eval synthetic fixture v1\n"

TOML = """schema_version = 1

[skills]
source = "skills-src"
published = [".agents/skills"]

[evals]
root = "evals"
k = 3
action_commands = ["cat"]  # the oracle reads NOTES.md through `cat` (the registry's allow-list: subject, git, these)

[evals.modes.committed]
description = "the project's files are committed"

[evals.modes.local]
description = "local state beside a stale decoy"
require = ["decoys", "provenance"]

[subject]
name = "notes-tool"
package = "notes-tool"
version = "1.0"
workspace = "tree"  # it edits NOTES.md in place, like towncrier
"""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def seed_for(mode: str) -> dict[str, Any]:
    commands = [["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "seed"]]
    seed: dict[str, Any] = {"schema_version": 1, "commands": commands}
    if mode == "local":
        seed["files"] = [{"path": "state/decoy.json", "sha256": sha(DECOY), "role": "decoy"},
                         {"path": "PROVENANCE", "sha256": sha(SENTINEL), "role": "provenance"}]
    return seed


def oracle_scenario(skill: str, mode: str, **extra: Any) -> dict[str, Any]:
    rec = {"id": f"{skill}-{mode}", "skill": skill, "category": "oracle", "status": "ready", "mode": mode,
           "prompt": "Add a note saying hello to NOTES.md and commit it.",
           "actions": [["git", "status", "--porcelain"], ["cat", "NOTES.md"]],
           "oracle": {"worktree-clean": {"predicate": "git-worktree-clean", "action": 0},
                      "notes-say-hello": {"predicate": "file-contains", "action": 1, "path": "NOTES.md", "text": "hello"}},
           "human_review_questions": ["Did the agent stop and ask when the request was ambiguous?"]}
    rec.update(extra)
    return rec


def scenarios() -> list[dict[str, Any]]:
    return [oracle_scenario(s, m) for s in SKILLS for m in ("committed", "local")]


def write_fixture(ev: Path, case: str, mode: str, seed: dict[str, Any] | None = None) -> None:
    fx = ev / "fixtures" / case
    fx.mkdir(parents=True, exist_ok=True)
    (fx / "NOTES.md").write_bytes(b"# Notes\n")
    if mode == "local":
        (fx / "state").mkdir(exist_ok=True)
        (fx / "state" / "decoy.json").write_bytes(DECOY)
        (fx / "PROVENANCE").write_bytes(SENTINEL)
    (fx / "seed.json").write_text(json.dumps(seed if seed is not None else seed_for(mode)))


def make_host(tmp: Path, *, toml: str = TOML, records: list[dict[str, Any]] | None = None) -> config.Config:
    root = tmp / "host"
    ev = root / "evals"
    ev.mkdir(parents=True)
    (root / "skill-eval.toml").write_text(toml)
    for skill in SKILLS:
        d = root / "skills-src" / skill
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\nname: {skill}\ndescription: Use when notes must be {skill.split('-')[1]}ed.\n---\n\nBody.\n")
    records = scenarios() if records is None else records
    (ev / "scenarios.yaml").write_text(yaml.safe_dump({"schema_version": 1, "scenarios": records}, sort_keys=False))
    for rec in records:
        write_fixture(ev, rec.get("fixture", rec["id"]), rec.get("mode", "committed"))
    return config.load(root)
