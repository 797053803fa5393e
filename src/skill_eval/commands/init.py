"""`skill-eval init PATH`: adopt skill-eval in a git repository, fitting what is already there.

Finds the skills the repository already has (any SKILL.md: `skills/`, `.claude/skills/`,
`.agents/skills/`, plugin layouts), proposes a configuration for them and writes it with
nox/Makefile/pre-commit entries that follow it (hooks fire on the real source paths), then
writes the evaluation pack. `--dry-run` prints the plan and writes nothing.

Nothing is ever published into an agent's discovery directory: published copies are
configured only where copies of the source skills already exist (or with --published).
The subject tool, scenarios, trigger corpus, golden corpus and evidence are features a
host turns on later, so `skill-eval pr` right after `init` runs only the checks that
apply and is green unless the skills have real findings. A repository with no skill yet
gets one generic example skill (unpublished) and a tiny trigger corpus.
Existing files are never overwritten; snippets are appended to noxfile.py, Makefile and
.pre-commit-config.yaml only when they do not already mention skill-eval.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from skill_eval.content import config, pack
from skill_eval.content.skills import NOT_SKILL_DIRS
from skill_eval.core import fsio, strict
from skill_eval.core.errors import ConfigError, SkillEvalError
from skill_eval.core.output import emit

NAME = "init"
HELP = "adopt skill-eval in a git repository: detect its skills, write config, nox/Makefile/pre-commit entries"
DESCRIPTION = __doc__

TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "init"
EVALS_ROOT = "agent-evals/skills"
# Where agents discover project skills (never a place init publishes an example into).
DISCOVERY_DIRS = (".claude/skills", ".agents/skills", ".gemini/skills", ".codex/skills", ".github/skills")
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".nox", ".tox", "dist", "build"})
# Never where a repository keeps the skills it ships: test fixtures and templates.
_NOT_SOURCES = frozenset({"tests", "test", "testdata", "fixtures"}) | NOT_SKILL_DIRS
_MAX_DEPTH = 7


@dataclass
class Detected:
    roots: Counter[str] = field(default_factory=Counter)  # collection folder -> number of skills in it
    names: dict[str, set[str]] = field(default_factory=dict)  # collection folder -> skill names


@dataclass
class Plan:
    source: str
    published: list[str]
    detected: Detected
    notes: list[str]
    files: list[tuple[str, str, bytes]]  # (repo-relative path, "create" | "append", bytes)
    example: bool


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path, help="root of the target git repository")
    p.add_argument("--source", default=None, metavar="DIR",
                   help="skill source folder (one folder per skill); default: detected from the SKILL.md files found")
    p.add_argument("--published", action="append", default=None, metavar="DIR",
                   help="a generated, parity-checked copy of the source skills (repeatable; 'none' for no copy); "
                        "default: discovery folders that already hold copies of the source skills")
    p.add_argument("--dry-run", action="store_true", help="print the plan (detected skills, config, files) and write nothing")
    p.add_argument("--force", action="store_true", help="adopt even if a skill-eval.toml already exists (existing files are still kept)")


def _is_discovery(rel: str) -> bool:
    return rel in DISCOVERY_DIRS or any(rel.endswith("/" + d) for d in DISCOVERY_DIRS)


def detect(root: Path) -> Detected:
    """Every folder holding SKILL.md, grouped by the collection folder that holds it."""
    found = Detected()
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel = here.relative_to(root)
        depth = len(rel.parts)
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and d not in _NOT_SOURCES
                             and not (here / d).is_symlink() and depth < _MAX_DEPTH)
        if "SKILL.md" in filenames and depth >= 1 and here.name not in NOT_SKILL_DIRS:
            parent = rel.parent.as_posix()
            if parent == ".":
                continue  # a skill folder at the repository root cannot be a collection member
            found.roots[parent] += 1
            found.names.setdefault(parent, set()).add(here.name)
    return found


def choose(root: Path, found: Detected, source: str | None, published: list[str] | None) -> tuple[str, list[str], list[str], bool]:
    """(source, published, notes, needs_example) for the detected layout and the user's overrides."""
    notes: list[str] = []
    if source is None:
        authored = [r for r in found.roots if not _is_discovery(r)]
        pool = authored or list(found.roots)
        if pool:
            source = sorted(pool, key=lambda r: (-found.roots[r], r.count("/"), r))[0]
        else:
            source = "skills"
    source = source.strip("/")
    example = not found.roots.get(source) and not (root / source).is_dir()
    if published is None:
        mine = found.names.get(source, set())
        published = sorted(r for r in found.roots if r != source and _is_discovery(r) and found.names[r] <= mine and mine)
    elif published == ["none"]:
        published = []
    published = [p.strip("/") for p in published]
    for r in sorted(found.roots):
        if r != source and r not in published:
            notes.append(f"{r}/ ({found.roots[r]} skill(s)) is not covered: one source per config "
                         f"(adopt it with `skill-eval init --source {r}` in its own config, or ignore it)")
    return source, published, notes, example


def install_spec() -> tuple[str | None, str]:
    """(a portable pip requirement for this skill-eval, or None; where this one was installed from).

    The package is not on PyPI, so `pip install skill-eval` fails. A git install (PEP 610
    direct_url.json with vcs_info) is portable and becomes the nox default; a local path or
    wheel works only on this machine, so it is only named in a comment.
    """
    try:
        raw = metadata.distribution("skill-eval").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        raw = None
    info = {}
    if raw:
        try:
            info = json.loads(raw)
        except ValueError:
            info = {}
    url, vcs = info.get("url", ""), info.get("vcs_info")
    if vcs and url:
        spec = f"skill-eval @ {vcs.get('vcs', 'git')}+{url}" + (f"@{vcs['commit_id']}" if vcs.get("commit_id") else "")
        return spec, spec
    if url:
        return None, url
    checkout = Path(__file__).resolve().parents[3]
    return None, checkout.as_uri() if (checkout / "pyproject.toml").is_file() else "unknown"


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def render_config(source: str, published: list[str]) -> str:
    return (TEMPLATES / "skill-eval.toml").read_text(encoding="utf-8").format(
        source=json.dumps(source), published=_toml_list(published), evals_root=json.dumps(EVALS_ROOT))


def _paths_regex(paths: list[str]) -> str:
    alts = "|".join(re.escape(p.rstrip("/")) + "/" for p in paths)
    return rf"^({alts}|{re.escape(EVALS_ROOT)}/|skill-eval\.toml$)"


def render_snippets(source: str, published: list[str], spec: tuple[str | None, str]) -> dict[str, str]:
    """The nox/Makefile/pre-commit text, following the config's real paths."""
    gen = "$(SKILL_EVAL) generate && " if published else ""
    values = {
        "files_pack": _paths_regex([source]),
        "files_skills": _paths_regex([source, *published]),
        "generate": gen,
        "spec": json.dumps(spec[0]) if spec[0] else "None",
        "origin": f"`skill-eval init` ran from: {spec[1]}",
    }
    out = {}
    for name in ("skill-eval.mk", "noxfile_snippet.txt", "pre-commit-snippet.yaml"):
        out[name] = (TEMPLATES / name).read_text(encoding="utf-8").format(**values)
    return out


def plan(root: Path, source: str | None, published: list[str] | None) -> Plan:
    found = detect(root)
    src, pub, notes, example = choose(root, found, source, published)
    files: list[tuple[str, str, bytes]] = [("skill-eval.toml", "create", render_config(src, pub).encode())]
    snippets = render_snippets(src, pub, install_spec())

    def add(rel: str, text: str, marker: str, header: str = "") -> None:
        path = root / rel
        if not path.exists():
            files.append((rel, "create", (header + text).encode()))
        elif marker not in path.read_text(encoding="utf-8", errors="replace"):
            files.append((rel, "append", text.encode()))

    add("skill-eval.mk", snippets["skill-eval.mk"], "skill-eval")
    add("Makefile", "include skill-eval.mk\n", "skill-eval.mk")
    add("noxfile.py", snippets["noxfile_snippet.txt"], "skill-eval", header='"""nox sessions."""\n')
    pc = root / ".pre-commit-config.yaml"
    if pc.exists() and "skill-eval" not in pc.read_text(encoding="utf-8", errors="replace") and not _repos_last(pc):
        notes.append(".pre-commit-config.yaml: `repos:` is not its last top-level key, so the hooks were not appended; "
                     "add the two skill-eval hooks under `repos:` by hand (see `skill-eval init --dry-run --json`)")
    else:
        add(".pre-commit-config.yaml", snippets["pre-commit-snippet.yaml"], "skill-eval", header="repos:\n")
    if example:
        ex = TEMPLATES / "example"
        files.append((f"{src}/example-skill/SKILL.md", "create", (ex / "SKILL.md").read_bytes()))
        corpus = root / EVALS_ROOT / "trigger_corpus.yaml"
        if not corpus.exists():
            files.append((f"{EVALS_ROOT}/trigger_corpus.yaml", "create", (ex / "trigger_corpus.yaml").read_bytes()))
    return Plan(src, pub, found, notes, [f for f in files if not (f[1] == "create" and (root / f[0]).exists())], example)


def _repos_last(path: Path) -> bool:
    """Whether appending list items at the end of a pre-commit config lands under `repos:`."""
    keys = re.findall(r"(?m)^([A-Za-z_][\w-]*):", path.read_text(encoding="utf-8", errors="replace"))
    return bool(keys) and keys[-1] == "repos"


def write_file(root: Path, rel: str, data: bytes, *, append: bool = False) -> None:
    """The one place init writes a file: through fsio (atomic, never through a symlink, never
    outside the repository)."""
    if append:
        current = fsio.read_file(root, rel) or b""
        data = current.rstrip(b"\n") + b"\n" + data
    fsio.write_file(root, rel, data)


def run(args: argparse.Namespace) -> int:
    root: Path = args.path.resolve()
    if not root.is_dir():
        raise ConfigError(f"{root} is not a directory", fix="create the repository first (git init)")
    probe = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        raise ConfigError(f"{root} is not inside a git repository", fix=f"run `git init {root}` first")
    if (root / config.CONFIG_NAME).exists() and not args.force:
        raise ConfigError(f"{root / config.CONFIG_NAME} already exists", fix="pass --force to add missing files only")
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and "skill-eval" in strict.load_toml(pyproject).get("tool", {}):
        raise ConfigError("pyproject.toml already has a [tool.skill-eval] table", source=pyproject,
                          fix="keep configuring it there, or remove it before `skill-eval init`")
    p = plan(root, args.source, args.published)
    for tree in (p.source, *p.published):  # a configured tree that is a symlink leaving the repository is refused
        if (root / tree).exists() or (root / tree).is_symlink():
            fsio.repo_tree(root, tree)
    lines = [f"  found {n} skill(s) in {r}/" for r, n in sorted(p.detected.roots.items())] or ["  found no SKILL.md"]
    lines.append(f"  source: {p.source}/" + (" (new: an example skill is scaffolded there)" if p.example else ""))
    lines.append(f"  published copies: {', '.join(p.published) or 'none (nothing is written into an agent discovery folder)'}")
    lines += [f"  note: {n}" for n in p.notes]
    lines += [f"  {'append to' if action == 'append' else 'create'} {rel}" for rel, action, _ in p.files]
    payload = {"ok": True, "root": str(root), "dry_run": args.dry_run, "source": p.source, "published": p.published,
               "detected": dict(sorted(p.detected.roots.items())), "notes": p.notes,
               "files": [{"path": rel, "action": action} for rel, action, _ in p.files]}
    if args.dry_run:
        lines.append(f"init: dry run — nothing written; run without --dry-run to adopt {root}")
        emit(args, lines, payload)
        return 0
    for rel, action, data in p.files:
        write_file(root, rel, data, append=action == "append")
    cfg = config.load(root)
    fresh = [d for d in cfg.published if not (root / d).exists()]
    if fresh and len(fresh) == len(cfg.published):
        # Only folders that do not exist yet (asked for with --published): never replace a folder
        # that may hold an agent's other skills. Existing copies are parity-checked by L0 instead.
        from skill_eval.content import generate

        generate.write_published(cfg)
        lines += [f"  create {d}/ (generated copies of {p.source}/)" for d in fresh]
    elif fresh:
        lines.append(f"  note: {', '.join(fresh)} not generated (other published folders exist); run `make skill-eval-pack`")
    try:
        path = pack.write(cfg)
        lines.append(f"  create {path.relative_to(root)}")
        payload["pack"] = str(path.relative_to(root))
    except SkillEvalError as exc:  # a broken skill: the pack waits until it is fixed (L0 names it)
        lines.append(f"  pack not written: {exc.render()} — fix it, then `skill-eval pack`")
        payload["pack_error"] = exc.as_dict()
    lines.append(f"init: ok — adopted {root}. Next: `skill-eval pr` (runs the checks that apply; each one that does "
                 "not says how to turn it on), then commit the new files.")
    emit(args, lines, payload)
    return 0
