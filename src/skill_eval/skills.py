"""Skills in the source tree: discovery, frontmatter, links and the citation graph.

A relative link from a skill file to a shared fragment is a citation. The citation
graph (transitive through fragments) decides which fragments the generator copies
into a skill's published tree, and therefore which skills a fragment edit affects.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from skill_eval import fsio, strict
from skill_eval.config import Config
from skill_eval.errors import ConfigError, InputError
from skill_eval.hashing import TreeEntry, walk_tree

SKILL_FILE = "SKILL.md"
# [text](target "title") — the target is group 1; images share the syntax.
LINK_RE = re.compile(r"(!?\[[^\]\n]*\]\()([^)\s]+)((?:\s+\"[^\"\n]*\")?\))")
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//|^#")


@dataclass(frozen=True)
class Link:
    file: str  # skill-relative (or fragment-relative) path of the file holding the link
    target: str  # as written, without #fragment
    resolved: str  # repository-relative, normalized


@dataclass
class Skill:
    name: str
    dir: str  # repository-relative
    files: list[TreeEntry]
    frontmatter: dict[str, Any]
    body: str
    links: list[Link] = field(default_factory=list)
    cites: list[str] = field(default_factory=list)  # repo-relative fragment paths, transitive, sorted


def split_frontmatter(text: str, source: object) -> tuple[dict[str, Any], str]:
    """Split `---\\nYAML\\n---\\nbody`; the frontmatter must be a mapping."""
    if not text.startswith("---\n"):
        raise InputError("does not start with a '---' frontmatter block", source=source,
                         fix="begin SKILL.md with ---, name:, description:, ---")
    end = text.find("\n---\n", 4)
    if end < 0:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise InputError("frontmatter block is not closed with '---'", source=source)
    data = strict.loads_yaml(text[4:end + 1], source)
    if not isinstance(data, dict):
        raise InputError("frontmatter is not a mapping", source=source)
    return data, text[end + 5:]


def iter_links(text: str) -> list[str]:
    """Relative link targets in Markdown text, ignoring URLs, anchors and code spans/blocks."""
    out = []
    for target in LINK_RE.findall(_strip_code(text)):
        t = target[1]
        if t.startswith("<") and t.endswith(">"):
            t = t[1:-1]
        if _EXTERNAL.match(t):
            continue
        t = t.split("#", 1)[0]
        if t:
            out.append(t)
    return out


def _strip_code(text: str) -> str:
    """Blank out fenced code blocks and inline code so example links there are not links."""
    text = re.sub(r"(?ms)^(```|~~~).*?^\1[^\n]*$", lambda m: "\n" * m.group(0).count("\n"), text)
    return re.sub(r"`[^`\n]*`", "", text)


def rewrite_links(text: str, mapping) -> str:
    """Replace link targets: mapping(target_without_fragment) -> new target or None (keep)."""

    def repl(m: re.Match[str]) -> str:
        target = m.group(2)
        base, sep, frag = target.partition("#")
        new = mapping(base) if base and not _EXTERNAL.match(target) else None
        return m.group(0) if new is None else f"{m.group(1)}{new}{sep}{frag}{m.group(3)}"

    # Protect code blocks: rewrite only outside fences.
    parts = re.split(r"(?ms)(^(?:```|~~~).*?^(?:```|~~~)[^\n]*$)", text)
    return "".join(p if i % 2 else LINK_RE.sub(repl, p) for i, p in enumerate(parts))


def _resolve(from_repo_file: str, target: str) -> str:
    return posixpath.normpath(posixpath.join(posixpath.dirname(from_repo_file), target))


def discover(cfg: Config) -> dict[str, Skill]:
    """Every skill folder under the source tree (the shared folder excluded), sorted by name."""
    src = fsio.repo_path(cfg.root, cfg.skills_source)
    if not src.is_dir():
        raise ConfigError(f"skills.source {cfg.skills_source!r} is not a directory", source=cfg.source)
    shared_rel = cfg.skills_shared
    skills: dict[str, Skill] = {}
    for child in sorted(src.iterdir()):
        rel = f"{cfg.skills_source}/{child.name}"
        if rel == shared_rel or child.name.startswith("."):
            continue
        if child.is_symlink():
            raise InputError("skill folder is a symlink", source=child)
        if not child.is_dir():
            continue
        if not (child / SKILL_FILE).is_file():
            raise InputError(f"skill folder has no {SKILL_FILE}", source=child, fix=f"add {SKILL_FILE} or remove the folder")
        files = walk_tree(child)
        skill_md = next(e for e in files if e.path == SKILL_FILE)
        text = strict.decode_utf8(skill_md.data, child / SKILL_FILE)
        fm, body = split_frontmatter(text, child / SKILL_FILE)
        skill = Skill(child.name, rel, files, fm, body)
        for entry in files:
            if entry.path.endswith(".md"):
                md = strict.decode_utf8(entry.data, child / entry.path)
                for target in iter_links(md):
                    skill.links.append(Link(entry.path, target, _resolve(f"{rel}/{entry.path}", target)))
        skills[child.name] = skill
    _resolve_citations(cfg, skills)
    return skills


def fragment_links(cfg: Config, fragment: str) -> list[Link]:
    path = fsio.repo_path(cfg.root, fragment)
    text = strict.read_text(path)
    return [Link(fragment, t, _resolve(fragment, t)) for t in iter_links(text)]


def _resolve_citations(cfg: Config, skills: dict[str, Skill]) -> None:
    shared = cfg.skills_shared.rstrip("/") + "/"
    cache: dict[str, list[Link]] = {}
    for skill in skills.values():
        todo = [lk.resolved for lk in skill.links if lk.resolved.startswith(shared)]
        seen: set[str] = set()
        while todo:
            frag = todo.pop()
            if frag in seen:
                continue
            seen.add(frag)
            if not fsio.repo_path(cfg.root, frag).is_file():
                continue  # reported as a broken link by the structural check
            if frag not in cache:
                cache[frag] = fragment_links(cfg, frag)
            todo.extend(lk.resolved for lk in cache[frag] if lk.resolved.startswith(shared))
        skill.cites = sorted(seen)


def citation_graph(cfg: Config, skills: dict[str, Skill] | None = None) -> dict[str, list[str]]:
    """fragment path -> sorted names of the skills that cite it (transitively)."""
    skills = skills if skills is not None else discover(cfg)
    graph: dict[str, list[str]] = {}
    for skill in skills.values():
        for frag in skill.cites:
            graph.setdefault(frag, []).append(skill.name)
    return {k: sorted(v) for k, v in sorted(graph.items())}


def shared_fragments(cfg: Config) -> list[str]:
    root = fsio.repo_path(cfg.root, cfg.skills_shared)
    if not root.is_dir():
        return []
    return sorted(f"{cfg.skills_shared}/{e.path}" for e in walk_tree(root))


def published_path(skill_file: str, fragment: str, shared_root: str) -> str:
    """Link target from a published skill file to the fragment's copy in references/shared/."""
    inside = posixpath.relpath(fragment, shared_root)
    return posixpath.relpath(f"references/shared/{inside}", posixpath.dirname(skill_file) or ".")
