"""L0 structural check: is every skill well-formed, self-contained and non-drifted?

Checks the Agent Skills frontmatter rules, body size, that every relative link and
`references/` path resolves inside the *published* tree (what an agent actually
sees), that every subject command and flag named in a code block exists in the
committed CLI reference, and that the published copies are byte-identical to what
the generator produces from skills-src/.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Any

from skill_eval import strict
from skill_eval.config import Config
from skill_eval.generate import drift, skill_tree
from skill_eval.skills import SKILL_FILE, Skill, citation_graph, discover, iter_links, shared_fragments

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SPEC_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
FENCE_RE = re.compile(r"(?ms)^(```|~~~)[^\n]*\n(.*?)^\1[^\n]*$")
REF_PATH_RE = re.compile(r"(?<![\w/.-])(references/[\w./-]*[\w-])")


@dataclass(frozen=True)
class Finding:
    level: str  # error | warning
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.where}: {self.message}"


def check_frontmatter(cfg: Config, skill: Skill) -> list[Finding]:
    fm: dict[str, Any] = skill.frontmatter
    where = f"{skill.dir}/{SKILL_FILE}"
    out: list[Finding] = []

    def err(msg: str) -> None:
        out.append(Finding("error", where, msg))

    name = fm.get("name")
    if not isinstance(name, str) or not name:
        err("frontmatter field 'name' is missing or not a string")
    else:
        if len(name) > 64:
            err(f"name {name!r} is {len(name)} characters; the limit is 64")
        if not NAME_RE.match(name):
            err(f"name {name!r} must be lowercase a-z, 0-9 and single hyphens, not starting or ending with '-'")
        if name != skill.name:
            err(f"name {name!r} must equal its folder name {skill.name!r}")
    desc = fm.get("description")
    if not isinstance(desc, str) or not desc.strip():
        err("frontmatter field 'description' is missing or empty")
    elif len(desc) > 1024:
        err(f"description is {len(desc)} characters; the limit is 1024")
    comp = fm.get("compatibility")
    if comp is not None and (not isinstance(comp, str) or not 1 <= len(comp) <= 500):
        err("compatibility must be a string of 1-500 characters")
    meta = fm.get("metadata")
    if meta is not None and (not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())):
        err("metadata must map strings to strings")
    tools = fm.get("allowed-tools")
    if tools is not None and not isinstance(tools, str):
        err("allowed-tools must be a space-separated string")
    lic = fm.get("license")
    if lic is not None and not isinstance(lic, str):
        err("license must be a string")
    for key in sorted(set(fm) - SPEC_KEYS - cfg.extension_keys):
        err(f"unknown frontmatter field {key!r} (allowed: {', '.join(sorted(SPEC_KEYS))}; extension keys need skills.extension_keys)")
    lines = skill.body.count("\n") + 1
    if lines > cfg.body_warn_lines:
        out.append(Finding("warning", where, f"body is {lines} lines (> {cfg.body_warn_lines}); move detail into references/"))
    if len(skill.body) / 4 > 5000:
        out.append(Finding("warning", where, f"body is ~{len(skill.body) // 4} tokens (> 5000); move detail into references/"))
    return out


def check_links(cfg: Config, skill: Skill) -> list[Finding]:
    """Every relative link and references/ path in the published tree resolves inside it."""
    tree = {e.path: e for e in skill_tree(cfg, skill)}
    dirs = {posixpath.dirname(p) for p in tree} | {""}
    for p in list(dirs):
        while p:
            p = posixpath.dirname(p)
            dirs.add(p)
    out = []
    for path, entry in sorted(tree.items()):
        if not path.endswith(".md"):
            continue
        source = _source_of(cfg, skill, path)
        text = strict.decode_utf8(entry.data, source)
        for target in iter_links(text):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if resolved.startswith("../") or resolved == "..":
                out.append(Finding("error", source, f"link {target!r} leaves the skill folder; skills must be self-contained (cite shared fragments from {cfg.skills_shared}/)"))
            elif resolved not in tree and resolved.rstrip("/") not in dirs:
                out.append(Finding("error", source, f"broken relative link {target!r} (no {resolved} in the published skill)"))
        for m in REF_PATH_RE.finditer(text):
            ref = m.group(1).rstrip(".")
            if ref not in tree and ref.rstrip("/") not in dirs:
                out.append(Finding("error", source, f"names {ref!r}, which does not exist in the skill"))
    return out


def _source_of(cfg: Config, skill: Skill, published: str) -> str:
    if published.startswith("references/shared/"):
        return f"{cfg.skills_shared}/{published[len('references/shared/'):]}"
    return f"{skill.dir}/{published}"


def subject_invocations(text: str, subject: str) -> list[tuple[int, list[str]]]:
    """(line number, argv) of every subject invocation inside fenced code blocks."""
    found = []
    for block in FENCE_RE.finditer(text):
        start_line = text.count("\n", 0, block.start(2)) + 1
        logical: list[tuple[int, str]] = []
        buf, buf_line = "", 0
        for offset, line in enumerate(block.group(2).split("\n")):
            if not buf:
                buf_line = start_line + offset
            if line.rstrip().endswith("\\"):
                buf += line.rstrip()[:-1] + " "
                continue
            logical.append((buf_line, buf + line))
            buf = ""
        if buf:
            logical.append((buf_line, buf))
        for lineno, line in logical:
            line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
            for segment in re.split(r"\|\||&&|[|;]|\$\(", line):
                try:
                    tokens = shlex.split(segment, comments=False)
                except ValueError:
                    tokens = segment.split()
                while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
                    tokens.pop(0)
                if tokens and (tokens[0] == subject or tokens[0].endswith("/" + subject)):
                    found.append((lineno, tokens))
    return found


def check_commands(cfg: Config, skill: Skill, reference: dict[str, Any]) -> list[Finding]:
    commands: dict[str, list[str]] = {k: v["options"] for k, v in reference["commands"].items()}
    subject = cfg.subject.name
    out = []
    for entry in skill_tree(cfg, skill):
        if not entry.path.endswith(".md"):
            continue
        source = _source_of(cfg, skill, entry.path)
        text = strict.decode_utf8(entry.data, source)
        for lineno, argv in subject_invocations(text, subject):
            path: list[str] = []
            rest = argv[1:]
            while rest and " ".join([*path, rest[0]]) in commands:
                path.append(rest.pop(0))
            cmd = " ".join(path)
            if not path and rest and not rest[0].startswith("-"):
                out.append(Finding("error", f"{source}:{lineno}", f"`{subject} {rest[0]}`: {subject} has no command {rest[0]!r}"))
                continue
            allowed = set(commands.get(cmd, ()))
            for tok in rest:
                if tok == "--":
                    break
                if not tok.startswith("-") or tok == "-" or re.match(r"^-\d", tok):
                    continue
                flag = tok.split("=", 1)[0]
                if flag not in allowed:
                    label = f"{subject} {cmd}".strip()
                    out.append(Finding("error", f"{source}:{lineno}", f"`{label} {flag}`: {label} has no option {flag} (see {cfg.subject.cli_reference})"))
    return out


def check_all(cfg: Config, reference: dict[str, Any] | None) -> tuple[list[Finding], dict[str, Skill]]:
    skills = discover(cfg)
    findings: list[Finding] = []
    if not skills:
        findings.append(Finding("error", cfg.skills_source, "no skills found"))
    for skill in skills.values():
        findings += check_frontmatter(cfg, skill)
        findings += check_links(cfg, skill)
        if reference is not None:
            findings += check_commands(cfg, skill, reference)
    cited = citation_graph(cfg, skills)
    for frag in shared_fragments(cfg):
        if frag.endswith(".md") and frag not in cited:
            findings.append(Finding("warning", frag, "shared fragment is cited by no skill"))
    findings += [Finding("error", "published", p) for p in drift(cfg, skills)]
    return findings, skills
