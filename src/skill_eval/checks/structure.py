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
from urllib.parse import unquote

from skill_eval.content.config import Config
from skill_eval.content.generate import drift, skill_tree
from skill_eval.content.skills import (
    SKILL_FILE,
    FolderProblem,
    Skill,
    citation_graph,
    decode_markdown,
    discover,
    iter_links,
    shared_fragments,
)
from skill_eval.core.errors import SkillEvalError

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SPEC_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
FENCE_RE = re.compile(r"(?ms)^(```|~~~)[^\n]*\n(.*?)^\1[^\n]*$")
# Claude Code / Codex / Gemini keys beyond the spec: accepted by those clients, so a warning
# (a skills-ref validator rejects them); list them in skills.extension_keys to silence it.
CLIENT_KEYS = frozenset({
    "disable-model-invocation", "user-invocable", "model", "argument-hint", "when_to_use", "context", "agent",
    "hooks", "effort", "paths",
})
# Folders every skill may name even before they exist (the spec's layout); any other top-level
# folder of the skill is checked too once it exists.
STANDARD_DIRS = ("scripts", "references", "assets")
_PATH_CHARS = r"[^\s`'\"()\[\]<>{}|,;!?*$]"


@dataclass(frozen=True)
class Finding:
    level: str  # error | warning | note (not a skill, skipped by rule)
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
        size = f" (it is {len(comp)})" if isinstance(comp, str) else ""
        err(f"compatibility must be a string of 1-500 characters{size}")
    meta = fm.get("metadata")
    if meta is not None and (not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())):
        err("metadata must map strings to strings")
    tools = fm.get("allowed-tools")
    if isinstance(tools, list) and all(isinstance(t, str) for t in tools):
        out.append(Finding("warning", where, "allowed-tools is a YAML list; the spec defines a space-separated string "
                                             "(Claude Code accepts both, other clients may not)"))
    elif tools is not None and (not isinstance(tools, str) or not tools.strip()):
        err("allowed-tools must be a non-empty space-separated string, e.g. 'Bash(git:*) Read'")
    lic = fm.get("license")
    if lic is not None and (not isinstance(lic, str) or not lic.strip()):
        err("license must be a non-empty string (a license name, or a reference to a bundled license file)")
    for key in sorted(set(fm) - SPEC_KEYS - cfg.extension_keys):
        if key in CLIENT_KEYS:
            out.append(Finding("warning", where, f"frontmatter field {key!r} is a client extension, not in the Agent Skills spec "
                                                 "(add it to skills.extension_keys to accept it)"))
        else:
            err(f"unknown frontmatter field {key!r} (allowed: {', '.join(sorted(SPEC_KEYS))}; extension keys need skills.extension_keys)")
    out += [Finding("warning", where, w) for w in skill.warnings]
    lines = skill.body.count("\n") + 1
    if lines > cfg.body_warn_lines:
        out.append(Finding("warning", where, f"body is {lines} lines (> {cfg.body_warn_lines}); move detail into references/"))
    if len(skill.body) / 4 > 5000:
        out.append(Finding("warning", where, f"body is ~{len(skill.body) // 4} tokens (> 5000); move detail into references/"))
    return out


def check_links(cfg: Config, skill: Skill) -> list[Finding]:
    """Every relative link and every skill-relative path a Markdown file names resolves.

    Resolution is inside the *published* tree (what an agent actually sees). Links are
    inline, reference-style or HTML, percent-decoded; named paths are tokens such as
    `scripts/fill.py` or `assets/logo.png`, in prose or code, under the spec's folders or
    under any top-level folder the skill has.
    """
    tree = {e.path: e for e in skill_tree(cfg, skill)}
    dirs = {posixpath.dirname(p) for p in tree} | {""}
    for p in list(dirs):
        while p:
            p = posixpath.dirname(p)
            dirs.add(p)
    has = {p.split("/", 1)[0] for p in tree if "/" in p}
    tops = sorted(has | set(STANDARD_DIRS))
    mention = re.compile(r"(?<![\w/.$~@:%-])(?:\./)?((?:" + "|".join(map(re.escape, tops)) + r")/" + _PATH_CHARS + r"+)")
    out = []
    for path, entry in sorted(tree.items()):
        if not path.endswith(".md"):
            continue
        source = _source_of(cfg, skill, path)
        try:
            text, _ = decode_markdown(entry.data, source)
        except SkillEvalError as exc:
            out.append(Finding("error", source, exc.message))
            continue
        for target in iter_links(text):
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if resolved.startswith("../") or resolved == "..":
                out.append(Finding("error", source, f"link {target!r} leaves the skill folder; skills must be self-contained (cite shared fragments from {cfg.skills_shared}/)"))
            elif resolved not in tree and resolved.rstrip("/") not in dirs:
                out.append(Finding("error", source, f"broken relative link {target!r} (no {resolved} in the published skill)"))
        reported: set[str] = set()
        for m in mention.finditer(text):
            ref = m.group(1).rstrip(".:")
            if text[m.end():m.end() + 1] in ("*", "<", "{", "$") or ref in reported:
                continue  # a glob or a placeholder, not a path
            candidates = {ref, unquote(ref)}  # a link target is percent-encoded (`user%20guide.md`)
            candidates |= {posixpath.normpath(posixpath.join(posixpath.dirname(path), c)) for c in list(candidates)}
            spaced = text[m.end():m.end() + 1] == " " and any(t.startswith(ref + " ") for t in tree)  # `a b.md`
            if not spaced and not any(c in tree or c.rstrip("/") in dirs for c in candidates):
                reported.add(ref)
                top = ref.removeprefix("./").split("/", 1)[0]
                if top in has:
                    out.append(Finding("error", source, f"names {ref!r}, which does not exist in the skill"))
                else:  # the skill has no such folder: maybe a path in the user's project, maybe a missing folder
                    out.append(Finding("warning", source, f"names {ref!r}, but the skill has no {top}/ folder "
                                                          "(ship it, or write the path so it is clearly the user's)"))
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
        text, _ = decode_markdown(entry.data, source)
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
    """Every L0 finding; a broken skill folder is that folder's finding, never an abort."""
    problems: list[FolderProblem] = []
    skills = discover(cfg, problems)
    findings: list[Finding] = []
    for p in problems:
        level = "error" if p.level == "error" else "note"
        findings.append(Finding(level, p.location, p.message + (f" (fix: {p.fix})" if p.fix else "")))
    if not skills and not any(p.level == "error" for p in problems):
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
    # A broken folder is reported above; its published copy is not a second finding.
    broken = {p.dir.rsplit("/", 1)[-1] for p in problems if p.level == "error"}
    drifted = [d for d in drift(cfg, skills) if not any(f"/{b}/" in d for b in broken)]
    findings += [Finding("error", "published", f"{p} — run `make pack` (= skill-eval generate && skill-eval pack) and commit")
                 for p in drifted]
    return findings, skills
