"""The evaluation registry's checks (the task-tool seed's "Evaluation Registry", DESIGN §9.3).

A scenario set is only evidence of anything if its cases are well-formed as a *set*: every
skill is exercised in every declared mode, case ids are unique, names agree with paths (one
case, one fixture directory, one sandbox of the same name), each fixture's seed recipe is
complete, every oracle assertion maps to exactly one supported predicate over a real
action, every action is read by an assertion, and the runner executes only allow-listed
programs (seed recipe, setup, actions: git, the subject, `[evals] action_commands`). These
checks run wherever scenarios are loaded (`content.load_scenarios` calls `record_problems` per
scenario and `set_problems` once), so no command can grade against a registry the registry
check would refuse; `skill-eval registry` lists every problem at once.

This module reads raw records (it never imports `content`, which imports it). Each problem is a
ConfigError naming the file, the field and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import formats, fsio, hashing, schemas, strict
from skill_eval.core.errors import ConfigError, SkillEvalError, message_of

SEED = "seed.json"
FIXTURES = "fixtures"
ORACLE = "oracle"  # the verdict-free scenario category
SEED_PROGRAMS = ("git",)  # besides the subject tool: the only programs a seed recipe may run
ROLE_OF = {"decoys": "decoy", "provenance": "provenance"}  # [evals.modes.*].require -> seed.json file role


@dataclass(frozen=True)
class SeedFile:
    """One seeded file of a fixture (a decoy or a provenance marker) and its digest."""

    path: str
    sha256: str
    role: str  # decoy | provenance


@dataclass(frozen=True)
class Seed:
    """fixtures/<case>/seed.json: what the runner executes before the agent (schemas/seed)."""

    source: str  # repository-relative path of seed.json
    commands: tuple[tuple[str, ...], ...]
    files: tuple[SeedFile, ...]

    def roles(self) -> set[str]:
        return {f.role for f in self.files}


ALLOW_FIX = ("use a documented git or subject-tool invocation, or add the program to [evals] action_commands "
             "in skill-eval.toml")


def allowed_commands(cfg: Config) -> frozenset[str]:
    """The programs the runner may execute for a scenario (seed recipe, setup, actions): git, the
    configured subject, and what `[evals] action_commands` adds. Matched against argv[0] exactly:
    a path (`/bin/rm`) or another program is refused."""
    return frozenset({*SEED_PROGRAMS, *([cfg.subject.name] if cfg.subject.name else []), *cfg.action_commands})


def fixture_rel(cfg: Config, fixture: str) -> str:
    return f"{cfg.evals_root}/{FIXTURES}/{fixture}"


def load_seed(cfg: Config, fixture: str) -> Seed | None:
    """The fixture's seed.json, validated (None when the fixture has none).

    Structure only (schema + `git init` first + allowed programs); the byte check of its
    decoy/provenance files is `seed_problems`, so one bad byte is reported, not raised."""
    rel = f"{fixture_rel(cfg, fixture)}/{SEED}"
    path = fsio.repo_path(cfg.root, rel)
    if not (path.exists() or path.is_symlink()):
        return None
    raw = formats.upgrade(strict.load_json(path), "seed", path)
    schemas.validate(raw, "seed", path)
    commands = tuple(tuple(c) for c in raw["commands"])
    if commands[0][:2] != ("git", "init"):
        raise ConfigError(f"the first command is {list(commands[0])}, not git init", source=rel, field="commands.0",
                          fix='start the recipe with ["git", "init", "-q"]')
    allowed = allowed_commands(cfg)
    for i, argv in enumerate(commands):
        if argv[0] not in allowed:
            raise ConfigError(f"command {i} runs {argv[0]!r}; a seed recipe runs only {sorted(allowed)}", source=rel,
                              field=f"commands.{i}", fix=ALLOW_FIX)
    files = tuple(SeedFile(f["path"], f["sha256"], f["role"]) for f in raw.get("files", ()))
    seen: set[str] = set()
    for i, f in enumerate(files):
        if f.path in seen:
            raise ConfigError(f"lists {f.path!r} twice", source=rel, field=f"files.{i}.path", fix="list each file once")
        seen.add(f.path)
    return Seed(rel, commands, files)


def seed_problems(cfg: Config, seed: Seed) -> list[ConfigError]:
    """Each listed decoy/provenance file must exist in the fixture with exactly the listed bytes."""
    out = []
    base = seed.source.rsplit("/", 1)[0]
    for i, f in enumerate(seed.files):
        try:
            data = fsio.read_file(cfg.root, f"{base}/{f.path}")
        except SkillEvalError as exc:
            data, why = None, message_of(exc)
        else:
            why = "it does not exist (or is not a regular file)"
        if data is None:
            out.append(ConfigError(f"{f.role} file {f.path}: {why}", source=seed.source, field=f"files.{i}.path",
                                   fix=f"add {base}/{f.path} with the listed bytes, or fix the path"))
        elif hashing.sha256_bytes(data) != f.sha256:
            out.append(ConfigError(f"{f.role} file {f.path} has sha256 {hashing.sha256_bytes(data)}, not the listed "
                                   f"{f.sha256}", source=seed.source, field=f"files.{i}.sha256",
                                   fix="restore the file's exact bytes, or record their new sha256 deliberately"))
    return out


def record_problems(cfg: Config, rec: dict[str, Any], where: str, path: Path, seed: Seed | None,
                    skills: set[str] | None, *, runnable: bool = True) -> list[ConfigError]:
    """Registry rules for one schema-valid scenario record (its fixture directory exists).

    `runnable`: the runner may execute its setup and actions (every scenarios.yaml record); the golden
    corpus's own scenarios are never run (make_golden.py replays them), so the allow-list skips them."""
    sid, out = rec["id"], []

    def bad(message: str, field: str, fix: str) -> None:
        out.append(ConfigError(f"{sid}: {message}", source=path, field=f"{where}.{field}", fix=fix))

    category = rec["category"]
    if category != ORACLE and not cfg.subject.verdict_skill(rec["skill"]):
        why = ("the subject declares no verdict profile" if not cfg.subject.has_verdicts
               else f"{rec['skill']!r} is not in subject.verdict_skills")
        bad(f"category {category} is a verdict question, but {why}", "category",
            "make it category oracle (graded by its command oracle), or add the skill to subject.verdict_skills")
    if rec.get("sandbox", sid) != sid:
        bad(f"sandbox {rec['sandbox']!r} is not the case id", "sandbox", f"name the sandbox {sid!r} (or omit it)")
    if category == ORACLE and rec.get("fixture", sid) != sid:
        bad(f"fixture {rec['fixture']!r} is not the case id (an oracle case has its own fixture directory)", "fixture",
            f"move the fixture to {FIXTURES}/{sid}/ (or omit `fixture`)")
    mode = rec.get("mode")
    if cfg.modes and mode is None:
        bad("names no mode", "mode", f"add `mode:` with one of {', '.join(cfg.modes)}")
    elif mode is not None and mode not in cfg.modes:
        bad(f"mode {mode!r} is not declared", "mode",
            f"use one of {', '.join(cfg.modes)}" if cfg.modes else "declare it under [evals.modes], or remove `mode:`")
    need = cfg.modes[mode].require if mode in cfg.modes else frozenset()
    if seed is None and (category == ORACLE or need):
        bad(f"fixture {rec.get('fixture', sid)!r} has no {SEED}", "fixture",
            f"add {FIXTURES}/{rec.get('fixture', sid)}/{SEED} (schemas/seed.schema.json), starting with git init")
    if seed is not None:
        for need_key in sorted(need):
            role = ROLE_OF[need_key]
            if role not in seed.roles():
                bad(f"mode {mode!r} needs {need_key} but {seed.source} lists no {role} file", "mode",
                    f"list the fixture's {need_key} bytes in {seed.source} `files` with role {role!r}")
        init = cfg.modes[mode].init if mode in cfg.modes else None
        if init is not None and sum(c == init for c in seed.commands[1:]) != 1:
            bad(f"{seed.source} does not run mode {mode!r}'s init command {list(init)} exactly once after git init",
                "mode", f"add {list(init)} to {seed.source} commands (once)")
    actions = rec.get("actions", ())
    for name, spec in sorted(rec.get("oracle", {}).items()):
        if spec["action"] >= len(actions):
            bad(f"oracle {name!r} names action {spec['action']}, which does not exist", f"oracle.{name}.action",
                "index an action of this scenario")
    if runnable:
        allowed = allowed_commands(cfg)
        for key in ("setup", "actions"):
            for i, argv in enumerate(rec.get(key, ())):
                if argv[0] not in allowed:
                    bad(f"{key[:-1] if key == 'actions' else key} {i} ({' '.join(argv)}) runs {argv[0]!r}; the runner "
                        f"executes only {sorted(allowed)}", f"{key}.{i}", ALLOW_FIX)
    used = {spec["action"] for spec in rec.get("oracle", {}).values()}
    for i, argv in enumerate(actions):
        if i not in used:
            bad(f"action {i} ({' '.join(argv)}) is used by no oracle assertion", f"actions.{i}",
                f"name it in an assertion (`action: {i}`), move it to `setup` if it prepares the sandbox, or remove it")
    return out


def set_problems(cfg: Config, records: Iterable[dict[str, Any]], path: Path, skills: set[str] | None) -> list[ConfigError]:
    """Rules over the whole scenario set: verdict_skills are real skills; every skill x mode is covered."""
    out = []
    records = list(records)
    if skills is not None and cfg.subject.verdict_skills is not None:
        for name in cfg.subject.verdict_skills:
            if name not in skills:
                out.append(ConfigError(f"verdict skill {name!r} does not exist in {cfg.skills_source}/", source=cfg.source,
                                       field="subject.verdict_skills", fix="name a skill folder of the source tree"))
    if skills is not None and cfg.modes:
        covered = {(r["skill"], r.get("mode")) for r in records if r["status"] == "ready"}
        for skill in sorted(skills):
            for mode in cfg.modes:
                if (skill, mode) not in covered:
                    out.append(ConfigError(f"skill {skill!r} has no ready scenario in mode {mode!r}", source=path,
                                           field="scenarios", fix=f"add a ready scenario with skill: {skill}, mode: {mode}"))
    return out
