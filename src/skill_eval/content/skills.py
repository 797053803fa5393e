"""Skills in the source tree: discovery, frontmatter, links and the citation graph.

A relative link from a skill file to a shared fragment is a citation. The citation
graph (transitive through fragments) decides which fragments the generator copies
into a skill's published tree, and therefore which skills a fragment edit affects.
"""

from __future__ import annotations

import bisect
import itertools
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from skill_eval.content.config import Config
from skill_eval.core import fsio, strict
from skill_eval.core.errors import ConfigError, InputError
from skill_eval.core.hashing import TreeEntry, walk_tree

SKILL_FILE = "SKILL.md"
# Folders under the source tree that are never skills (anthropics/skills ships `template/`):
# skipped by rule and reported as a note, never as a broken skill.
NOT_SKILL_DIRS = frozenset({"template", "templates"})
# [text](target "title") — the target is group 2; images share the syntax. A target may be
# written <with spaces> in angle brackets.
LINK_RE = re.compile(r"(!?\[[^\]\n]*\]\()(<[^>\n]*>|[^)\s]+)((?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\))")
# [label]: target "title" — a reference-style link definition (CommonMark, up to 3 spaces indent); a
# footnote definition `[^1]: text` is not one (its text is prose, not a target).
REFDEF_RE = re.compile(r"(?m)^([ ]{0,3}\[(?!\^)[^\]\n]+\]:[ \t]*)(<[^>\n]*>|\S+)(.*)$")
# <a href="..."> / <img src="..."> in inline HTML.
HTML_LINK_RE = re.compile(r"""<(?:a|img|source|link)\b[^>]*?\b(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//|^#")
_BOM = "\ufeff"
_FENCE_RUN = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})")
_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\n(.*?)^---[ \t]*(?:\n|\Z)", re.S | re.M)


@dataclass(frozen=True)
class Link:
    """One relative link in a skill file, as written and as resolved in the repository."""

    file: str  # skill-relative (or fragment-relative) path of the file holding the link
    target: str  # as written (percent-decoded), without #fragment
    resolved: str  # repository-relative, normalized


@dataclass
class Skill:
    """One skill folder: its name, directory, files and SKILL.md frontmatter."""

    name: str
    dir: str  # repository-relative
    files: list[TreeEntry]
    frontmatter: dict[str, Any]
    body: str
    links: list[Link] = field(default_factory=list)
    cites: list[str] = field(default_factory=list)  # repo-relative fragment paths, transitive, sorted
    warnings: list[str] = field(default_factory=list)  # accepted but worth fixing (a BOM)


@dataclass(frozen=True)
class FolderProblem:
    """A folder under the source tree that is not a usable skill: the L0 finding for it alone."""

    dir: str  # repository-relative
    level: str  # error (a broken skill) | note (not a skill, skipped by rule)
    message: str
    fix: str | None = None
    where: str = ""  # the file inside the folder the problem is in, repository-relative

    @property
    def location(self) -> str:
        return self.where or self.dir


def decode_markdown(data: bytes, source: object) -> tuple[str, bool]:
    """UTF-8 text of a Markdown file and whether it had a BOM (accepted: YAML and CommonMark allow it)."""
    had_bom = data.startswith(b"\xef\xbb\xbf")
    return strict.decode_utf8(data[3:] if had_bom else data, source), had_bom


def split_frontmatter(text: str, source: object) -> tuple[dict[str, Any], str]:
    """Split `---\\nYAML\\n---\\nbody` (LF or CRLF); an empty block is an empty mapping."""
    text = text.removeprefix(_BOM).replace("\r\n", "\n")
    if not re.match(r"---[ \t]*\n", text):
        raise InputError("does not start with a '---' frontmatter block", source=source,
                         fix="begin SKILL.md with ---, name:, description:, ---")
    m = _FRONTMATTER_RE.match(text)
    if m is None:
        raise InputError("frontmatter block is not closed with a '---' line", source=source,
                         fix="end the frontmatter with a line holding only ---")
    block = m.group(1)
    blank = not re.sub(r"(?m)^[ \t]*#.*$", "", block).strip()  # empty, or only comments
    data = {} if blank else strict.loads_yaml("\n" + block, source)  # "\n": YAML line numbers = file line numbers
    if data is None:  # only comments
        data = {}
    if not isinstance(data, dict):
        raise InputError("frontmatter is not a mapping", source=source, fix="write the frontmatter as `key: value` lines")
    return data, text[m.end():]


def _clean_target(raw: str) -> str | None:
    """A local link target, percent-decoded, without #fragment or ?query; None for URLs and anchors."""
    t = raw.strip()
    if t.startswith("<") and t.endswith(">"):
        t = t[1:-1].strip()
    if not t or _EXTERNAL.match(t):
        return None
    t = t.split("#", 1)[0].split("?", 1)[0]
    return unquote(t) or None


def iter_links(text: str) -> list[str]:
    """Relative link targets in Markdown text: inline, reference-style and HTML links.

    URLs, anchors and links inside code spans/blocks are ignored; targets are
    percent-decoded (`a%20b.md` names the file `a b.md`), as a Markdown renderer does.
    """
    return [t for t, _ in link_targets(text)]


def link_targets(text: str) -> list[tuple[str, int]]:
    """`iter_links` with each target's 1-based line (in document order), for findings."""
    text = _strip_code(text)  # line breaks kept: a line number in the stripped text is one in the text
    raw = [(m.group(2), m.start(2)) for m in LINK_RE.finditer(text)]
    raw += [(m.group(2), m.start(2)) for m in REFDEF_RE.finditer(text)]
    raw += [(m.group(1), m.start(1)) if m.group(1) is not None else (m.group(2), m.start(2)) for m in HTML_LINK_RE.finditer(text)]
    if not raw:
        return []
    starts = line_starts(text)  # a bisect per link, not a count from the top
    out: list[tuple[str, int]] = []
    for r, at in sorted(raw, key=lambda x: x[1]):
        t = _clean_target(r)
        if t:
            out.append((t, bisect.bisect_right(starts, at)))
    return out


def line_starts(text: str) -> list[int]:
    """The offset where each line of `text` starts (bisect an offset into it for its line)."""
    return [0, *itertools.accumulate(len(line) + 1 for line in text.split("\n"))]


def _strip_code(text: str) -> str:
    """Blank out fenced code blocks and inline code so example links there are not links (line breaks kept)."""
    out: list[str] = []
    fence = ""  # the open fence's run of ` or ~ (CommonMark: closed by a run of the same character, at least as long)
    last = prev = ""  # the last non-blank line outside code; the line before this one
    indented = False  # inside an indented code block (4 spaces after a blank line, not in a list item)
    for line in text.split("\n"):
        m = _FENCE_RUN.match(line)
        blank_before, prev = not prev.strip(), line
        if not fence:
            if line.strip() and line.startswith(("    ", "\t")) and (indented or (blank_before and _opens_code(last))):
                indented = True
                out.append("")
                continue
            indented = indented and not line.strip()
            if m:
                fence = m.group(1)
                out.append("")
            else:
                out.append(line)
                last = line if line.strip() else last
            continue
        out.append("")
        closing = line.strip()
        if m and set(closing) == {fence[0]} and len(closing) >= len(fence):
            fence = ""
    return re.sub(r"`[^`\n]*`", "", "\n".join(out))


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def _opens_code(last: str) -> bool:
    """Whether an indented line after a blank line, below `last`, starts an indented code block (CommonMark):
    after a paragraph at the margin, yes; inside a list item (its continuation), no."""
    return not last or (not last.startswith((" ", "\t")) and not _LIST_ITEM.match(last))


def rewrite_links(text: str, mapping: Callable[[str], str | None]) -> str:
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


def discover(cfg: Config, problems: list[FolderProblem] | None = None) -> dict[str, Skill]:
    """Every skill folder under the source tree (the shared folder excluded), sorted by name.

    A folder with no SKILL.md (or a `template/`) is not a skill and is skipped by rule.
    A broken skill folder (symlink, non-UTF-8, BOM-less garbage, duplicate frontmatter key)
    raises — unless `problems` is given, in which case it is recorded there as that
    folder's own finding and the other skills are still discovered (the L0 check uses
    this so one bad folder never hides the findings of the rest).
    """
    skills: dict[str, Skill] = {}
    shared = {s.shared for s in cfg.sources} | {cfg.skills_shared}
    for tree in [s.path for s in cfg.sources] or [cfg.skills_source]:
        src = fsio.repo_path(cfg.root, tree)
        if not src.is_dir():
            raise ConfigError(f"skills.source {tree!r} is not a directory", source=cfg.source, field="skills",
                              fix="point [skills] source (or [[skills.sources]] path) at the folder holding one folder per skill")
        for child in sorted(src.iterdir()):
            rel = child.name if tree == "." else f"{tree}/{child.name}"  # a root source: `webhooks`, not `./webhooks`
            if rel in shared or child.name.startswith((".", "_")) or rel == cfg.evals_root.split("/", 1)[0]:
                continue  # (skills at the root: the evaluation content beside them is not a skill folder)
            if tree == "." and not (child / SKILL_FILE).is_file() and not child.is_symlink():
                continue  # at the root every folder without SKILL.md (docs/, src/) is simply not a skill: no note
            try:
                skill = _load_skill(child, rel, problems)
            except InputError as exc:
                if problems is None:
                    raise
                problems.append(FolderProblem(rel, "error", exc.message, exc.fix, _relative(cfg, exc.source)))
                continue
            if skill is None:
                continue
            if child.name in skills:
                clash = f"skill {child.name!r} is also in {skills[child.name].dir}; skill names must be unique across sources"
                if problems is None:
                    raise InputError(clash, source=child, fix="rename one of the two skills")
                problems.append(FolderProblem(rel, "error", clash, "rename one of the two skills"))
                continue
            skills[child.name] = skill
    skills = dict(sorted(skills.items()))
    _resolve_citations(cfg, skills)
    return skills


def _relative(cfg: Config, source: str | None) -> str:
    try:
        return Path(source).relative_to(cfg.root).as_posix() if source else ""
    except ValueError:
        return source or ""


def _load_skill(child: Path, rel: str, problems: list[FolderProblem] | None) -> Skill | None:
    def note(message: str) -> None:
        if problems is not None:
            problems.append(FolderProblem(rel, "note", message))

    if child.is_symlink():
        raise InputError("skill folder is a symlink; skills must be real folders (their bytes are hashed)",
                         source=child, fix="replace the symlink with the folder itself")
    if not child.is_dir():
        return None
    if child.name in NOT_SKILL_DIRS:
        note("skipped: a template folder is not a skill")
        return None
    if not (child / SKILL_FILE).is_file():
        if any(p.name.lower() == SKILL_FILE.lower() for p in child.iterdir()):
            raise InputError(f"the skill file must be named exactly {SKILL_FILE}", source=child,
                             fix=f"rename it to {SKILL_FILE}")
        note(f"skipped: no {SKILL_FILE}, so not a skill")
        return None
    files = walk_tree(child)
    skill_md = next(e for e in files if e.path == SKILL_FILE)
    text, bom = decode_markdown(skill_md.data, child / SKILL_FILE)
    fm, body = split_frontmatter(text, child / SKILL_FILE)
    skill = Skill(child.name, rel, files, fm, body)
    if bom:
        skill.warnings.append(f"{SKILL_FILE} starts with a UTF-8 byte-order mark; some agents have skipped such skills "
                              "(save it as UTF-8 without BOM)")
    for entry in files:
        if entry.path.endswith(".md"):
            md, _ = decode_markdown(entry.data, child / entry.path)
            for target in iter_links(md):
                skill.links.append(Link(entry.path, target, _resolve(f"{rel}/{entry.path}", target)))
    return skill


def fragment_links(cfg: Config, fragment: str) -> list[Link]:
    path = fsio.repo_path(cfg.root, fragment)
    text, _ = decode_markdown(strict.read_bytes(path), path)
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
