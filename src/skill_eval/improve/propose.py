"""`skill-eval propose`'s library: stage the skill sources, let an agent edit a sandboxed copy, keep a patch.

The flow (the release contract's step 5, docs/PROPOSE.md): failing cases -> an agent, sandboxed like a
recording, edits a copy of the skill source folders only -> the runner diffs the copy against the
originals it staged, refusing any change outside the skill sources, under a protected path, or
through a link -> `<out>/proposal.patch` (unified diff, `git apply`-able from the repository root,
proven by applying it to a scratch copy) and `<out>/proposal.json` (the cases it addresses, the
agent's account, the base digest, the commands to re-run), each written atomically. The working tree
is never written: a human reviews the patch, applies it with `git apply`, and re-runs the untouched
case set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skill_eval import __version__
from skill_eval.content.config import Config
from skill_eval.core import fsio, hashing, schemas, strict
from skill_eval.core.errors import CheckFailed, ConfigError
from skill_eval.harness.runner.execute import RunOptions
from skill_eval.improve import patch
from skill_eval.improve.cases import FailingCase
from skill_eval.improve.patch import FileState
from skill_eval.improve.sandbox import CONTEXT_FILE, AgentRun, run_agent

SCHEMA_VERSION = 1
BASE_DOMAIN = "skill-eval-propose-base-v1"
PATCH_NAME = "proposal.patch"
RECORD_NAME = "proposal.json"
DEFAULT_OUT = "build/propose"
COMPLETED = "completed"

PROMPT = """\
You are improving Agent Skills. Your working directory is a copy of this repository's skill source
folders, at their repository paths: {sources}. Nothing else of the repository is here.

The cases below fail. Find the general problem of the skill that they reveal and fix it by editing
the skill sources: a skill's SKILL.md (its frontmatter `description`, which decides when the skill is
used, or its body), or the files it references. Fix the skill, not one prompt: a description should
name what users ask for in their own words, not quote a case.

Rules:
- Change only files inside {sources}. A file created anywhere else, a symlink, or a binary file
  refuses the whole proposal.
- Keep every SKILL.md's frontmatter valid YAML with its `name` and `description`.
- Use /tmp for scratch files.

When you are done, answer with a short summary of what you changed and why.

Failing cases ({count}; also, read-only, in {{context_file}}):
{cases}
"""


@dataclass(frozen=True)
class Staged:
    """The skill sources as the runner copied them: the originals the proposal is diffed against."""

    files: dict[str, FileState]
    sources: list[str]  # repository-relative source folders (the only places a change may land)
    protected: list[str]  # folders and files never the agent's, even inside a source folder
    digest: str  # T(skill-eval-propose-base-v1) over the staged files


@dataclass(frozen=True)
class Proposal:
    patch_path: Path
    record_path: Path
    record: dict[str, Any]


def source_folders(cfg: Config) -> list[str]:
    """The `[skills]` source folders (every [[skills.sources]] entry), repository-relative."""
    folders = [s.path.strip("/") for s in cfg.sources] or [cfg.skills_source.strip("/")]
    return sorted({f for f in folders if f})


def protected_paths(cfg: Config) -> list[str]:
    """What a proposal may never touch: the evals root (fixtures, scenarios, ground truth, golden,
    evidence, baselines, the trigger corpus), every published copy, the harness files, the config."""
    paths = {cfg.evals_root, *cfg.published, *(p for s in cfg.sources for p in s.published), *cfg.harness}
    if cfg.subject.cli_reference:
        paths.add(cfg.subject.cli_reference)
    try:
        paths.add(cfg.source.resolve().relative_to(cfg.root.resolve()).as_posix())
    except ValueError:
        pass
    return sorted(p.strip("/") for p in paths if p and p.strip("/"))


def stage(cfg: Config) -> Staged:
    """Read the skill source folders (symlinks refused, as every hashed tree refuses them), leaving out
    anything under a protected path."""
    sources, protected = source_folders(cfg), protected_paths(cfg)
    files: dict[str, FileState] = {}
    for folder in sources:
        path = fsio.repo_path(cfg.root, folder)
        if not path.is_dir():
            raise ConfigError(f"skill source folder {folder} does not exist", source=cfg.source, field="skills.source",
                              fix="name the folder that holds your skills' source")
        for entry in hashing.walk_tree(path):
            rel = f"{folder}/{entry.path}"
            if not any(patch.under(rel, p) for p in protected):
                files[rel] = FileState(entry.data, entry.mode == hashing.MODE_EXEC)
    digest = hashing.digest_entries(BASE_DOMAIN, [hashing.TreeEntry(k, v.mode, v.data) for k, v in files.items()])
    return Staged(files, sources, protected, digest)


def build_prompt(cases: list[FailingCase], sources: list[str]) -> str:
    lines = []
    for c in cases:
        lines.append(f"- {c.id} ({c.kind} case, skill {c.skill or 'none: no skill should be used'})\n"
                     f"  prompt: {json.dumps(c.prompt, ensure_ascii=False)}\n"
                     f"  expected: {c.expected}\n  observed: {c.observed}")
    return PROMPT.format(sources=", ".join(f"{s}/" for s in sources), count=len(cases), cases="\n".join(lines))


def context_json(cases: list[FailingCase], staged: Staged) -> bytes:
    return strict.dumps_json({"schema_version": SCHEMA_VERSION, "sources": staged.sources,
                              "cases": [c.as_json() for c in cases]}).encode("utf-8")


def check_out_dir(cfg: Config, out: Path, staged: Staged) -> Path | None:
    """The output folder relative to the repository (None: outside it); refuses one inside the skill
    sources or a protected path (the proposal would then change what it is diffed against)."""
    inside = fsio.within(cfg.root, out)
    if inside is None:
        return None
    rel = inside.as_posix()
    for p in [*staged.sources, *staged.protected]:
        if patch.under(rel, p) or rel == ".":
            raise ConfigError(f"--out {out} is inside {p if rel != '.' else 'the repository root'}",
                              field="--out", fix=f"write the proposal elsewhere, e.g. --out {DEFAULT_OUT}")
    return inside


def propose(cfg: Config, opts: RunOptions, cases: list[FailingCase], out: Path,
            problems: list[str] | None = None) -> Proposal:
    """Run the proposing agent and write the proposal; CheckFailed (exit 1) when there is none."""
    staged = stage(cfg)
    inside = check_out_dir(cfg, out, staged)
    run = run_agent(cfg, opts, staged.files, build_prompt(cases, staged.sources), context_json(cases, staged))
    if run.timed_out or run.stop_reason != COMPLETED:
        detail = "; ".join(run.errors)[:300] or run.stop_reason
        raise CheckFailed(f"the agent's run did not complete ({run.stop_reason}: {detail}); no proposal from a "
                          "half-finished edit", source="propose", fix="raise --timeout/--max-turns, or re-run")
    found = patch.changes(staged.files, run.files, allowed=staged.sources, protected=staged.protected)
    if not found:
        raise CheckFailed("the agent changed no skill source: no patch", source="propose",
                          fix="re-run with another agent or model, or fix the skills by hand")
    text = patch.render(found)
    patch.verify(text, found)
    record = _record(cfg, staged, cases, run, found, text, problems or [], out, inside)
    schemas.validate(record, "proposal", RECORD_NAME)  # the sidecar's format: schemas/proposal.schema.json
    data = strict.dumps_json(record)
    if inside is not None:  # in the repository: no component followed through a symlink
        patch_path = fsio.write_file(cfg.root, inside / PATCH_NAME, text)
        record_path = fsio.write_file(cfg.root, inside / RECORD_NAME, data)
    else:
        patch_path = fsio.write_output(out / PATCH_NAME, text)
        record_path = fsio.write_output(out / RECORD_NAME, data)
    return Proposal(patch_path, record_path, record)


def _record(cfg: Config, staged: Staged, cases: list[FailingCase], run: AgentRun, found: list[patch.Change],
            text: str, problems: list[str], out: Path, inside: Path | None) -> dict[str, Any]:
    shown = (inside / PATCH_NAME).as_posix() if inside is not None else str(out / PATCH_NAME)
    rerun = list(dict.fromkeys(cmd for c in cases for cmd in c.rerun))
    return {
        "schema_version": SCHEMA_VERSION,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "skill_eval_version": __version__,
        "base": {"sources": staged.sources, "protected": staged.protected, "digest": staged.digest,
                 "files": len(staged.files)},
        "patch": {"file": PATCH_NAME, "sha256": hashing.sha256_bytes(text.encode("utf-8")),
                  "changes": [{"path": c.path, "status": c.status} for c in found]},
        "cases": [c.as_json() for c in cases],
        "check_problems": problems,
        "agent": {"adapter": run.adapter, "model": run.model, "model_source": run.model_source,
                  "isolation": run.isolation, "exit_code": run.exit_code, "stop_reason": run.stop_reason,
                  "errors": run.errors, "seconds": run.seconds, "usage": run.usage, "summary": run.final_text,
                  "context_file": CONTEXT_FILE},
        "next": [f"review {shown}", f"git apply {shown}   (from the repository root)",
                 *(["skill-eval generate   (refresh the published copies)"] if cfg.published else []), *rerun,
                 "re-run the untouched final case set before a release (docs/PROPOSE.md)"],
    }
