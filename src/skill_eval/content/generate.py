"""The published trees (.agents/skills/, .claude/skills/), generated from skills-src/.

A published skill is its source folder plus every shared fragment it cites
(transitively) copied into references/shared/, with links rewritten to the copies.
The same in-memory tree feeds the writer, the parity check and the skill digest, so
the three can never disagree about what "the skill" is.
"""

from __future__ import annotations

import os
import posixpath

from skill_eval.content.config import Config
from skill_eval.content.skills import Skill, decode_markdown, discover, published_path, rewrite_links
from skill_eval.core import fsio, strict
from skill_eval.core.hashing import MODE_EXEC, MODE_FILE, TreeEntry, digest_entries, walk_tree

SKILL_DOMAIN = "skill-eval-skill-v1"


def _rewrite(cfg: Config, repo_file: str, published_file: str, data: bytes) -> bytes:
    text, bom = decode_markdown(data, repo_file)
    shared = cfg.skills_shared.rstrip("/") + "/"

    def mapping(target: str) -> str | None:
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(repo_file), target))
        if not resolved.startswith(shared):
            return None
        new = published_path(published_file, resolved, cfg.skills_shared)
        here = posixpath.dirname(published_file)
        same = posixpath.normpath(posixpath.join(here, target)) == posixpath.normpath(posixpath.join(here, new))
        return None if same else new  # keep bytes when the link already works (fragment -> fragment)

    out = rewrite_links(text, mapping).encode("utf-8")
    return b"\xef\xbb\xbf" + out if bom else out  # the copy keeps the source's bytes


def skill_tree(cfg: Config, skill: Skill) -> list[TreeEntry]:
    """The exact files of a skill's published copy (relative to the skill folder)."""
    out: list[TreeEntry] = []
    for entry in skill.files:
        data = entry.data
        if entry.path.endswith(".md"):
            data = _rewrite(cfg, f"{skill.dir}/{entry.path}", entry.path, data)
        out.append(TreeEntry(entry.path, entry.mode, data))
    for frag in skill.cites:
        path = fsio.repo_path(cfg.root, frag)
        if not path.is_file():
            continue
        inside = posixpath.relpath(frag, cfg.skills_shared)
        target = f"references/shared/{inside}"
        data = strict.read_bytes(path)
        if frag.endswith(".md"):
            data = _rewrite(cfg, frag, target, data)
        mode = MODE_EXEC if os.access(path, os.X_OK) else MODE_FILE
        out.append(TreeEntry(target, mode, data))
    return sorted(out, key=lambda e: e.path.encode())


def skill_digest(cfg: Config, skill: Skill) -> str:
    return digest_entries(SKILL_DOMAIN, skill_tree(cfg, skill))


def expected_published(cfg: Config, skills: dict[str, Skill] | None = None) -> dict[str, list[TreeEntry]]:
    """Relative path within a published root -> entries, for every skill."""
    skills = skills if skills is not None else discover(cfg)
    return {name: skill_tree(cfg, s) for name, s in skills.items()}


def _published_into(cfg: Config, skills: dict[str, Skill], root_rel: str) -> set[str]:
    """Names of the skills copied into one published root: with several [[skills.sources]], only
    those of the sources that list it as published."""
    if len(cfg.sources) <= 1:
        return set(skills)
    owners = [src for src in cfg.sources if root_rel in src.published]
    return {n for n, s in skills.items() if any(src.holds(s.dir) for src in owners)}


def drift(cfg: Config, skills: dict[str, Skill] | None = None) -> list[str]:
    """Every difference between the published trees on disk and what the generator produces."""
    skills = skills if skills is not None else discover(cfg)
    expected = expected_published(cfg, skills)
    problems: list[str] = []
    for root_rel in cfg.published:
        root = fsio.repo_path(cfg.root, root_rel)
        if not root.is_dir():
            problems.append(f"{root_rel}/: missing (run `skill-eval generate`)")
            continue
        on_disk = {e.path: e for e in walk_tree(root)}
        mine = _published_into(cfg, skills, root_rel)
        want = {f"{name}/{e.path}": e for name, entries in expected.items() if name in mine for e in entries}
        for path in sorted(set(on_disk) | set(want)):
            a, b = on_disk.get(path), want.get(path)
            if a is None:
                problems.append(f"{root_rel}/{path}: missing from the published copy")
            elif b is None:
                problems.append(f"{root_rel}/{path}: not produced from {cfg.skills_source}/ (stale or hand-added)")
            elif a.data != b.data:
                problems.append(f"{root_rel}/{path}: differs from its source (edit {cfg.skills_source}/, not the copy)")
            elif a.mode != b.mode:
                problems.append(f"{root_rel}/{path}: mode {a.mode} differs from source mode {b.mode}")
    return problems


def write_published(cfg: Config, skills: dict[str, Skill] | None = None) -> list[str]:
    """Regenerate every published root atomically (built beside it, then swapped in).

    Through fsio.replace_dir: no component of a published root may be a symlink, so a symlinked
    `.agents` can no longer turn this pre-commit hook into a deletion outside the repository.
    """
    skills = skills if skills is not None else discover(cfg)
    expected = expected_published(cfg, skills)
    written = []
    for root_rel in cfg.published:
        mine = _published_into(cfg, skills, root_rel)
        files = {f"{name}/{e.path}": (e.data, fsio.EXEC_MODE if e.mode == MODE_EXEC else fsio.FILE_MODE)
                 for name, entries in expected.items() if name in mine for e in entries}
        fsio.replace_dir(cfg.root, root_rel, files)
        written.append(root_rel)
    return written
