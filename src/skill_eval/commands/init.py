"""`skill-eval init PATH`: adopt skill-eval in a git repository, fitting what is already there.

Finds the skills the repository already has (any SKILL.md: `skills/`, `.claude/skills/`,
`.agents/skills/`, plugin layouts, skill folders at the repository root), proposes a configuration
for them and writes it with nox/Makefile/pre-commit entries that follow it (hooks fire on the real
source paths), then writes the evaluation pack. `--dry-run` prints the plan and writes nothing.
A folder of SKILL.md fragments (no frontmatter) beside real skills, or one whose skills duplicate
another source's (a preview channel), is not adopted: a note names it and how to adopt it anyway.
If the pack cannot be written (a broken skill), init has still adopted but exits 1 naming the fix.

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
import posixpath
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from skill_eval.commands import _corpus_template as corpus_template
from skill_eval.content import config, pack
from skill_eval.content.skills import NOT_SKILL_DIRS, iter_links
from skill_eval.core import fsio, strict
from skill_eval.core.errors import ConfigError, SkillEvalError
from skill_eval.core.output import emit

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
    roots: Counter[str] = field(default_factory=Counter)  # collection folder ("." = the repository root) -> skills in it
    names: dict[str, set[str]] = field(default_factory=dict)  # collection folder -> skill names
    bare: dict[str, set[str]] = field(default_factory=dict)  # collection folder -> names whose SKILL.md has no frontmatter

    def add(self, collection: str, name: str, skill_md: Path) -> None:
        self.roots[collection] += 1
        self.names.setdefault(collection, set()).add(name)
        if not _has_frontmatter(skill_md):
            self.bare.setdefault(collection, set()).add(name)


def _has_frontmatter(skill_md: Path) -> bool:
    """Whether SKILL.md is meant as a skill: it starts with a `---` frontmatter block, or at least has a
    `name:` / `description:` line (a skill whose frontmatter is broken: adopted, so L0 names the mistake).
    A file with neither is a fragment (an override merged into a skill elsewhere), not a skill."""
    try:
        with skill_md.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return True  # unreadable: adopt it and let L0 name the problem
    return (head.removeprefix(b"\xef\xbb\xbf").startswith(b"---")
            or re.search(rb"(?m)^[ \t]*(?:name|description)[ \t]*:", head) is not None)


def show(rel: str) -> str:
    """A source folder as the user reads it: never './'."""
    return "the repository root" if rel == "." else f"{rel}/"


def _norm(rel: str) -> str:
    return posixpath.normpath(rel.strip().strip("/") or ".")


@dataclass
class Plan:
    source: str  # the first source (the one with the most skills)
    published: list[str]
    detected: Detected
    notes: list[str]
    files: list[tuple[str, str, bytes]]  # (repo-relative path, "create" | "append", bytes)
    example: bool
    sources: list[tuple[str, list[str]]] = field(default_factory=list)  # every adopted source and its published copies
    publish: str = "plugin"
    publish_why: str = ""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path, help="root of the target git repository")
    p.add_argument("--source", action="append", default=None, metavar="DIR",
                   help="skill source folder (one folder per skill; '.': skill folders at the repository root; repeatable: "
                        "several sources in one config); "
                        "default: every folder of SKILL.md folders found")
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
            parent = rel.parent.as_posix()  # "." for a skill folder directly under the root (editframe/skills)
            if parent == "." and here.name.startswith((".", "_")):
                continue  # discovery skips such folders at any source root
            found.add(parent, here.name, here / "SKILL.md")
    return found


def _count(root: Path, found: Detected, src: str) -> None:
    """A source the user named that the walk did not see (too deep, or under tests/): count its skills."""
    base = root / src
    if src in found.roots or not base.is_dir() or base.is_symlink():
        return
    for child in sorted(base.iterdir()):
        if (child / "SKILL.md").is_file() and child.name not in NOT_SKILL_DIRS and not child.name.startswith((".", "_")):
            found.add(src, child.name, child / "SKILL.md")


def choose_all(root: Path, found: Detected, sources: list[str] | None,
               published: list[str] | None) -> tuple[list[tuple[str, list[str]]], list[str], bool]:
    """([(source, published copies)], notes, needs_example): every authored collection of skills is a source
    (openai/skills: skills/.curated, .experimental, .system; editframe/skills: the repository root); a discovery
    folder holding copies of a source's skills is that source's published copy. A folder of SKILL.md fragments
    (no frontmatter) or of duplicates of another source's skills (a preview channel) is skipped with a note.
    The user's --source / --published override."""
    notes: list[str] = []
    skipped: dict[str, str] = {}
    if not sources:
        sources = _default_sources(found, skipped) or ["skills"]
    sources = list(dict.fromkeys(_norm(s) for s in sources))
    for src in sources:
        _count(root, found, src)
    example = len(sources) == 1 and not found.roots.get(sources[0]) and not (root / sources[0]).is_dir()
    out: list[tuple[str, list[str]]] = []
    claimed: set[str] = set()
    for src in sources:
        if published is not None:  # the user's list is for the first source
            pub = [] if published == ["none"] or out else [_norm(p) for p in published]
        else:
            mine = found.names.get(src, set())
            pub = sorted(r for r in found.roots if r not in sources and r not in claimed and _is_discovery(r)
                         and mine and found.names[r] <= mine)
        claimed |= set(pub)
        out.append((src, pub))
    for r in sorted(found.roots):
        if r in skipped:
            notes.append(skipped[r])
        elif r not in sources and r not in claimed:
            notes.append(f"{show(r)} ({found.roots[r]} skill(s)) is not covered (add it with another --source {r}, "
                         "or ignore it)")
    if len(out) > 1:
        notes.append(f"adopted {len(out)} skill sources in one config ([[skills.sources]]): "
                     + ", ".join(f"{show(s)} ({found.roots.get(s, 0)})" for s, _ in out))
    return out, notes, example


def _default_sources(found: Detected, skipped: dict[str, str]) -> list[str]:
    """Every folder of real skills: the one with the most skills (on a tie, skills/) first; fragments and
    duplicate channels are recorded in `skipped` with the reason and the way to adopt them anyway."""
    order = sorted(found.roots, key=lambda r: (-found.roots[r], r != "skills", r.count("/"), r))
    framed = [r for r in order if len(found.bare.get(r, ())) < found.roots[r]]
    for r in order:
        if r not in framed and framed:  # fragments beside real skills; if nothing has frontmatter, L0 names it
            skipped[r] = (f"{show(r)} ({found.roots[r]} SKILL.md) not adopted: none of its SKILL.md files starts with a "
                          f"'---' frontmatter block, so they are fragments, not skills (pass --source {r} to check "
                          "them as skills)")
    candidates = framed or order
    kept: list[str] = []
    for r in [c for c in candidates if not _is_discovery(c)] + [c for c in candidates if _is_discovery(c)]:
        if _is_discovery(r) and any(found.names[r] <= found.names[a] for a in kept):
            continue  # a published copy of an adopted source (choose_all assigns it)
        dup = max(kept, key=lambda a: len(found.names[r] & found.names[a]), default=None)
        same = sorted(found.names[r] & found.names[dup]) if dup else []
        if dup and 2 * len(same) > len(found.names[r]):
            skipped[r] = (f"{show(r)} ({found.roots[r]} skill(s)) not adopted: {len(same)} of its skill names duplicate "
                          f"{show(dup)} ({', '.join(same[:3])}{', ...' if len(same) > 3 else ''}); pass --source {r} "
                          f"to adopt it instead")
            continue
        clash = sorted(n for a in kept for n in found.names[r] & found.names[a])
        if clash:  # one config holds each skill name once: adopting it would make init's own pack fail
            where = sorted(a for a in kept if found.names[r] & found.names[a])
            skipped[r] = (f"{show(r)} ({found.roots[r]} skill(s)) not adopted: skill names are unique in one config "
                          f"and {', '.join(clash[:3])}{', ...' if len(clash) > 3 else ''} also in "
                          f"{', '.join(show(a) for a in where[:2])}{', ...' if len(where) > 2 else ''} (plugins "
                          f"namespace such names; skill-eval does not yet); rename the skill, or pass --source {r} "
                          "(one --source per folder) to choose which to adopt")
            continue
        kept.append(r)
    return kept


# A plugin manifest: the skills ship together, so a link into a sibling skill resolves once installed.
PLUGIN_MANIFESTS = (".claude-plugin", ".codex-plugin", ".cursor-plugin", "gemini-extension.json", "plugin.json")


def publish_mode(root: Path, found: Detected | None = None) -> tuple[str, str]:
    """([checks] publish, why), read from how the repository publishes its skills.

    Signs that skills are installed one by one (marketplace entries that are single skills, a licence or
    manifest in most skill folders, README install lines naming single skills) mean standalone; else a plugin
    manifest, or skills that link to sibling skills, mean they ship together (plugin); with neither, standalone.
    """
    skills = _skill_dirs(root, found or detect(root))
    one_by_one = _one_by_one_signs(root, skills)
    manifest = next((m for m in PLUGIN_MANIFESTS if (root / m).exists()), None)
    if one_by_one and not (manifest and not one_by_one[0].startswith("marketplace")):
        return "standalone", f"{one_by_one[0]}: each skill is installed alone, so a link out of a skill is an error"
    if manifest:
        return "plugin", f"found {manifest}: the skills ship together, so links between sibling skills are portability warnings"
    links = _sibling_links(root, skills)
    if links:
        return "plugin", (f"{links} link(s) between sibling skills and no sign of one-by-one publishing (no per-skill "
                          "licence, manifest, marketplace entry or README install line): the skills ship together, so "
                          "such links are portability warnings")
    return "standalone", "no plugin manifest: each skill is installed alone, so a link out of a skill is an error"


def publish_line(mode: str) -> str:
    """The one config line that changes init's publishing guess."""
    other = "standalone" if mode == "plugin" else "plugin"
    return f'to change: set publish = "{other}" under [checks] in skill-eval.toml'


def _skill_dirs(root: Path, found: Detected) -> dict[str, Path]:
    """skill folder name -> its folder, for every detected skill."""
    return {name: root / src / name if src != "." else root / name
            for src, names in found.names.items() for name in names}


_INSTALL_LINE = re.compile(r"(?i)\binstall\b|\bskills\s+add\b|\bcp\s+-r\b|--skill\b")


def _one_by_one_signs(root: Path, skills: dict[str, Path]) -> list[str]:
    """What says the skills are installed one by one (most telling first), or []."""
    signs: list[str] = []
    market = root / ".claude-plugin" / "marketplace.json"
    if market.is_file() and len(skills) > 1:
        try:
            entries = json.loads(market.read_text(encoding="utf-8")).get("plugins", [])
        except (ValueError, OSError, AttributeError):
            entries = []
        entries = entries if isinstance(entries, list) else []  # a contributor's file: any shape
        dirs = {p.resolve() for p in skills.values()}
        single = sum(1 for e in entries if isinstance(e, dict) and isinstance(e.get("source"), str)
                     and _resolved(root / e["source"]) in dirs)
        if entries and 2 * single > len(entries):
            signs.append(f"marketplace.json: {single} of its {len(entries)} plugins are single skills")
    own = sum(1 for d in skills.values() if any((d / f).is_file() for f in _PER_SKILL_FILES))
    if len(skills) > 1 and 2 * own > len(skills):
        signs.append(f"{own} of {len(skills)} skill folders carry their own licence or manifest")
    readme = next((root / n for n in ("README.md", "README", "readme.md") if (root / n).is_file()), None)
    if readme is not None:
        names = set(skills)
        text = readme.read_text(encoding="utf-8", errors="replace")
        named = sorted({w for line in text.splitlines() if _INSTALL_LINE.search(line)
                        for w in re.findall(r"[A-Za-z0-9][\w.-]*", line) if w in names})
        if named:
            signs.append(f"{readme.name} install lines name single skills ({', '.join(named[:3])})")
    return signs


_PER_SKILL_FILES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "plugin.json", "package.json", "gemini-extension.json")


def _sibling_links(root: Path, skills: dict[str, Path]) -> int:
    """How many relative links in skill Markdown land in another skill's folder."""
    dirs = {p.resolve(): name for name, p in skills.items()}
    count = 0
    for name, folder in skills.items():
        for dirpath, dirnames, filenames in os.walk(folder):  # symlinked folders are not followed
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for md in (Path(dirpath) / f for f in sorted(filenames) if f.endswith(".md")):
                if md.is_symlink() or not md.is_file():
                    continue
                for target in iter_links(md.read_text(encoding="utf-8", errors="replace")):
                    landed = _resolved(md.parent / target) if target.startswith("../") else None
                    owner = next((n for d, n in dirs.items() if landed == d or (landed and d in landed.parents)), None)
                    count += owner is not None and owner != name
    return count


def _resolved(path: Path) -> Path | None:
    """A path made absolute, or None where it cannot be (a NUL byte, a symlink loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return None


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
    if vcs and url and not _machine_local(url):
        spec = f"skill-eval @ {vcs.get('vcs', 'git')}+{url}" + (f"@{vcs['commit_id']}" if vcs.get("commit_id") else "")
        return spec, spec
    # A file:// URL, a local path or a wheel on this disk: true only on this machine, so it is never
    # written into a committed file (noxfile.py) — not even as a comment.
    return None, "a local checkout or wheel (not named: a machine-local path does not belong in a committed file)"


def _machine_local(url: str) -> bool:
    return url.startswith("file:") or url.startswith("/") or "://localhost" in url or "://127.0.0.1" in url


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def render_config(source: str | list[tuple[str, list[str]]], published: list[str] | None = None,
                  publish: str = "plugin", publish_why: str = "") -> str:
    sources = [(source, published or [])] if isinstance(source, str) else source
    if len(sources) == 1:
        block = (f"source = {json.dumps(sources[0][0])}\npublished = {_toml_list(sources[0][1])}  "
                 "# generated copies, byte-parity checked (`skill-eval generate`); [] = none\n")
    else:
        block = "".join(f"\n[[skills.sources]]\npath = {json.dumps(s)}\npublished = {_toml_list(p)}\n" for s, p in sources)
    return (TEMPLATES / "skill-eval.toml").read_text(encoding="utf-8").format(
        sources=block, evals_root=json.dumps(EVALS_ROOT), publish=json.dumps(publish),
        publish_why=publish_why or "plugin: skills ship together; standalone: each skill is installed alone")


def _paths_regex(paths: list[str], root_skills: list[str]) -> str:
    """pre-commit `files:` for the source trees. Its paths never start with './': a root source (".") is its
    skill folders, plus any `<folder>/SKILL.md` so a skill added at the root later fires the hooks too."""
    alts: list[str] = []
    for p in paths:
        if _norm(p) == ".":
            alts += [re.escape(n) + "/" for n in sorted(root_skills)] + [r"[^/]+/SKILL\.md$"]
        else:
            alts.append(re.escape(_norm(p)) + "/")
    return rf"^({'|'.join(dict.fromkeys(alts))}|{re.escape(EVALS_ROOT)}/|skill-eval\.toml$)"


def render_snippets(source: str | list[str], published: list[str], spec: tuple[str | None, str],
                    root_skills: list[str] | None = None) -> dict[str, str]:
    """The nox/Makefile/pre-commit text, following the config's real paths (every source; root_skills:
    the skill folders of a "." source)."""
    sources = [source] if isinstance(source, str) else source
    roots = root_skills or []
    gen = "$(SKILL_EVAL) generate && " if published else ""
    values = {
        "files_pack": _paths_regex(sources, roots),
        "files_skills": _paths_regex([*sources, *published], roots),
        "generate": gen,
        "spec": json.dumps(spec[0]) if spec[0] else "None",
        "origin": f"`skill-eval init` ran from: {spec[1]}",
        "mk_install": (f'`skill-eval init` ran from git: pipx install "{spec[0]}"' if spec[0] else
                       "<skill-eval repository URL> is a placeholder: replace it with where your team gets skill-eval "
                       "(init ran from a local checkout or wheel, which is not named in a committed file)"),
    }
    out = {}
    for name in ("skill-eval.mk", "noxfile_snippet.txt", "pre-commit-snippet.yaml"):
        out[name] = (TEMPLATES / name).read_text(encoding="utf-8").format(**values)
    return out


def plan(root: Path, source: str | list[str] | None, published: list[str] | None) -> Plan:
    found = detect(root)
    chosen, notes, example = choose_all(root, found, [source] if isinstance(source, str) else source, published)
    src, pub = chosen[0]
    all_pub = [p for _, ps in chosen for p in ps]
    mode, why = publish_mode(root, found)
    files: list[tuple[str, str, bytes]] = [("skill-eval.toml", "create", render_config(chosen, None, mode, why).encode())]
    snippets = render_snippets([s for s, _ in chosen], all_pub, install_spec(), sorted(found.names.get(".", ())))

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
    _codeowners(root, add, notes)
    if example:
        ex = TEMPLATES / "example"
        files.append((f"{src}/example-skill/SKILL.md", "create", (ex / "SKILL.md").read_bytes()))
        corpus = root / EVALS_ROOT / "trigger_corpus.yaml"
        if not corpus.exists():
            files.append((f"{EVALS_ROOT}/trigger_corpus.yaml", "create", (ex / "trigger_corpus.yaml").read_bytes()))
    elif not (root / EVALS_ROOT / "trigger_corpus.yaml").exists():
        files.append((f"{EVALS_ROOT}/trigger_corpus.yaml", "create",
                      corpus_template.render(root, [s for s, _ in chosen]).encode()))
    return Plan(src, pub, found, notes, [f for f in files if not (f[1] == "create" and (root / f[0]).exists())], example,
                chosen, mode, why)


CODEOWNER = "@your-org/skill-eval-maintainers"  # a placeholder the adopter replaces (init's note says so)


def codeowners(prefix: str = "") -> str:
    """The CODEOWNERS entry for the trust files (issue 34 item 10): written by init at the repository root's
    .github/CODEOWNERS (`prefix`: the host's folder inside the repository, '' at the top)."""
    return (TEMPLATES / "CODEOWNERS-snippet.txt").read_text(encoding="utf-8").format(
        owner=CODEOWNER, prefix=prefix, evals_root=EVALS_ROOT)


def _codeowners(root: Path, add: Callable[[str, str, str], None], notes: list[str]) -> None:
    """Add the CODEOWNERS entry at the repository's top; a host in a subfolder gets a note instead."""
    from skill_eval.core import gitrepo

    prefix = gitrepo.prefix(root) or ""
    if prefix:
        notes.append(f"the host is in a subfolder ({prefix}): give the repository's .github/CODEOWNERS the entry for "
                     "skill-eval's trust files (docs/SIGNING.md, \"The gate's own configuration\")")
        return
    add(".github/CODEOWNERS", codeowners(), "skill-eval's trust files")
    notes.append(f".github/CODEOWNERS: replace {CODEOWNER} with your maintainers")


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
    from skill_eval.core import gitrepo

    in_git = gitrepo.prefix(root) is not None
    if not in_git and not args.dry_run:  # a dry run writes nothing: it may look at any folder first
        raise ConfigError(f"{root} is not inside a git repository", fix=f"run `git init {root}` first")
    if (root / config.CONFIG_NAME).exists() and not args.force:
        raise ConfigError(f"{root / config.CONFIG_NAME} already exists", fix="pass --force to add missing files only")
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and "skill-eval" in strict.load_toml(pyproject).get("tool", {}):
        raise ConfigError("pyproject.toml already has a [tool.skill-eval] table", source=pyproject,
                          fix="keep configuring it there, or remove it before `skill-eval init`")
    if (root / "SKILL.md").is_file() and not args.source:
        # A single-skill repository: no source folder holds it, so adopting would check nothing (a false green).
        raise ConfigError("the repository root is itself a skill (SKILL.md at the root); a skill source is a folder "
                          "holding one folder per skill", source=root / "SKILL.md",
                          fix="move the skill into a folder of its own (e.g. skills/<name>/), then run init again; or pass "
                              "--source DIR naming a folder of skill folders")
    p = plan(root, args.source, args.published)
    if not in_git:
        p.notes.append(f"{root} is not a git repository yet: run `git init` there before adopting (a dry run only looks)")
    all_pub = [d for _, ps in p.sources for d in ps]
    for tree in (*(s for s, _ in p.sources), *all_pub):  # a configured tree that is a symlink leaving the repository is refused
        if (root / tree).exists() or (root / tree).is_symlink():
            fsio.repo_tree(root, tree)
    lines = [f"  found {n} skill(s) in {r}/" if r != "." else
             f"  found {n} skill(s) at the repository root: {', '.join(sorted(p.detected.names[r]))}"
             for r, n in sorted(p.detected.roots.items())] or ["  found no SKILL.md"]
    if len(p.sources) > 1:
        lines.append(f"  sources: {', '.join(show(s) for s, _ in p.sources)} (every one adopted, [[skills.sources]])")
    else:
        lines.append(f"  source: {show(p.source)}" + (' (source = ".")' if p.source == "." else "")
                     + (" (new: an example skill is scaffolded there)" if p.example else ""))
    lines.append(f"  published copies: {', '.join(all_pub) or 'none (nothing is written into an agent discovery folder)'}")
    lines.append(f"  publish: {p.publish} ({p.publish_why}); {publish_line(p.publish)}")
    lines += [f"  note: {n}" for n in p.notes]
    lines += [f"  {'append to' if action == 'append' else 'create'} {rel}" for rel, action, _ in p.files]
    pack_rel = f"{EVALS_ROOT}/{pack.PACK_NAME}"
    pack_line = f"  {'update' if (root / pack_rel).exists() else 'create'} {pack_rel}"  # pack.write, after the files
    payload = {"ok": True, "root": str(root), "dry_run": args.dry_run, "source": p.source, "published": all_pub,
               "sources": [{"path": s, "published": ps} for s, ps in p.sources], "publish": p.publish,
               "detected": dict(sorted(p.detected.roots.items())), "notes": p.notes,
               "files": [{"path": rel, "action": action} for rel, action, _ in p.files], "pack": pack_rel}
    if args.dry_run:
        lines.append(pack_line)
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
        lines += [f"  create {d}/ (generated copies of {show(p.source)})" for d in fresh]
    elif fresh:
        lines.append(f"  note: {', '.join(fresh)} not generated (other published folders exist); run `make skill-eval-pack`")
    try:
        path = pack.write(cfg)
        payload["pack"] = str(path.relative_to(root))
        lines.append(pack_line)
    except SkillEvalError as exc:  # a broken skill: the pack waits until it is fixed (L0 names it)
        # Not ok: the hooks and `pr` fail until the pack exists, so init says so and exits 1 (a check failed).
        payload.update(ok=False, pack=None, pack_error=exc.as_dict())
        lines.append(f"init: FAIL — adopted {root} (files above written) but {pack_rel} was not: {exc.render()}. "
                     "Fix that skill (`skill-eval pr` names every finding), then run `skill-eval pack`.")
        emit(args, lines, payload)
        return 1
    lines.append(f"init: ok — adopted {root}. Next: `skill-eval pr` (runs the checks that apply; each one that does "
                 "not says how to turn it on), then commit the new files.")
    emit(args, lines, payload)
    return 0
