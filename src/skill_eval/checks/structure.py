"""L0 structural check: is every skill well-formed, self-contained and non-drifted?

Checks the Agent Skills frontmatter rules, body size, that every relative link and every
path a skill points the agent at resolves inside the *published* tree (checks.links), that
every subject command and flag named in a code block exists in the committed CLI reference,
and that the published copies are byte-identical to what the generator produces from
skills-src/. Each Finding (checks.findings) has a stable id (rule:where:subject) that
suppressions and the adoption baseline match (checks.suppress).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from skill_eval.checks import pointers
from skill_eval.checks.findings import Finding
from skill_eval.checks.links import check_links, source_of
from skill_eval.content.config import Config
from skill_eval.content.generate import drift, skill_tree
from skill_eval.content.skills import (
    SKILL_FILE,
    FolderProblem,
    Skill,
    citation_graph,
    decode_markdown,
    discover,
    shared_fragments,
)

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SPEC_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
FENCE_RE = re.compile(r"(?ms)^(```|~~~)[^\n]*\n(.*?)^\1[^\n]*$")
# Frontmatter keys beyond the spec that a supported client documents for skills (Claude Code's skills
# reference; Codex and Gemini CLI document only the spec's keys): a warning naming the client, since the
# spec's reference validator (skills-ref) rejects them; list them in skills.extension_keys to accept them.
# `version` is not in a client's skills reference but in Claude Code's own plugin-dev skill template.
CLIENT_KEYS: dict[str, str] = {
    **dict.fromkeys(("disable-model-invocation", "user-invocable", "model", "argument-hint", "when_to_use", "context",
                     "agent", "hooks", "effort", "paths", "shell", "disallowed-tools", "background", "display-name",
                     "default-enabled", "fallback"), "Claude Code documents it"),
    "version": "Claude Code's plugin skill template uses it",
}
# A key no client documents for skills, but a near one is: the likely fix.
_NEAR_KEYS = {"tools": "allowed-tools", "allowed_tools": "allowed-tools", "allowedTools": "allowed-tools",
              "when-to-use": "when_to_use", "triggers": "description"}


def check_frontmatter(cfg: Config, skill: Skill) -> list[Finding]:
    fm: dict[str, Any] = skill.frontmatter
    where = f"{skill.dir}/{SKILL_FILE}"
    out: list[Finding] = []

    def err(msg: str, subject: str = "") -> None:
        out.append(Finding("error", where, msg, "frontmatter", subject))

    problem = _name_problem(fm.get("name"), skill.name)
    if problem:
        err(problem, "name")
    desc = fm.get("description")
    if not isinstance(desc, str) or not desc.strip():
        err("frontmatter field 'description' is missing or empty", "description")
    elif len(desc) > 1024:
        err(f"description is {len(desc)} characters; the limit is 1024", "description")
    comp = fm.get("compatibility")
    if comp is not None and (not isinstance(comp, str) or not 1 <= len(comp) <= 500):
        size = f" (it is {len(comp)})" if isinstance(comp, str) else ""
        err(f"compatibility must be a string of 1-500 characters{size}", "compatibility")
    meta = fm.get("metadata")
    if meta is not None and (not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())):
        err("metadata must map strings to strings", "metadata")
    tools = fm.get("allowed-tools")
    if isinstance(tools, list) and all(isinstance(t, str) for t in tools):
        out.append(Finding("warning", where, "allowed-tools is a YAML list; the spec defines a space-separated string "
                                             "(Claude Code accepts both, other clients may not)", "frontmatter", "allowed-tools"))
    elif tools is not None and (not isinstance(tools, str) or not tools.strip()):
        err("allowed-tools must be a non-empty space-separated string, e.g. 'Bash(git:*) Read'", "allowed-tools")
    lic = fm.get("license")
    if lic is not None and (not isinstance(lic, str) or not lic.strip()):
        err("license must be a non-empty string (a license name, or a reference to a bundled license file)", "license")
    out += [_extension_key(where, key) for key in sorted(set(fm) - SPEC_KEYS - cfg.extension_keys)]
    out += [Finding("warning", where, w, "encoding") for w in skill.warnings]
    lines = skill.body.count("\n") + 1
    if lines > cfg.body_warn_lines:
        out.append(Finding("warning", where, f"body is {lines} lines (> {cfg.body_warn_lines}); move detail into references/", "body-size", "lines"))
    if len(skill.body) / 4 > 5000:
        out.append(Finding("warning", where, f"body is ~{len(skill.body) // 4} tokens (> 5000); move detail into references/", "body-size", "tokens"))
    return _with_key_lines(skill, out)


def _with_key_lines(skill: Skill, findings: list[Finding]) -> list[Finding]:
    """Frontmatter findings at the line of their key in SKILL.md (line 1, the frontmatter, for a key that is
    missing or a finding about the whole file), so --json, editors and CI annotations can point at it."""
    if not findings:
        return findings
    entry = next((e for e in skill.files if e.path == SKILL_FILE), None)
    head = entry.data.decode("utf-8", errors="replace").removeprefix("\ufeff") if entry else ""
    lines = head.replace("\r\n", "\n").split("\n")
    keys: dict[str, int] = {}
    for n, text in enumerate(lines[1:], start=2):
        if text.rstrip() == "---":
            break
        m = re.match(r"""^(["']?)([^\s:"'#][^:"']*)\1\s*:""", text)
        if m:
            keys.setdefault(m.group(2), n)
    body_line = len(lines) - skill.body.count("\n")  # where the body starts (body-size findings)
    out = []
    for f in findings:
        if f.line:
            out.append(f)
        elif f.rule == "body-size":
            out.append(dataclasses.replace(f, line=max(body_line, 1)))
        else:
            out.append(dataclasses.replace(f, line=keys.get(f.subject, 1)))
    return out


def _name_problem(name: object, folder: str) -> str:
    """What is wrong with `name:` as one message (one defect, one finding: a display name such as
    'Agent Development' is both badly formed and not the folder's name), or ""."""
    if not isinstance(name, str) or not name:
        return "frontmatter field 'name' is missing or not a string"
    wrong = []
    if len(name) > 64:
        wrong.append(f"is {len(name)} characters (the limit is 64)")
    if not NAME_RE.match(name):
        wrong.append("must be lowercase a-z, 0-9 and single hyphens, not starting or ending with '-'")
    if name != folder:
        wrong.append(f"must equal its folder name {folder!r}")
    if not wrong:
        return ""
    fix = f" (write `name: {folder}`" + ("; a display name goes in metadata" if " " in name or name != name.lower() else "") + ")"
    return f"name {name!r} " + " and ".join(wrong) + (fix if NAME_RE.match(folder) else "")


def _extension_key(where: str, key: str) -> Finding:
    """A frontmatter key the spec does not define: a warning when a supported client documents it (naming
    the client, the spec and the portable fix), else an error."""
    fix = f"the spec's place for it is metadata: (`metadata.{key}`), or list it in skills.extension_keys to accept it"
    client = CLIENT_KEYS.get(key)
    if client:
        if client.endswith("documents it"):  # it changes what Claude Code does: moving it would change the skill
            fix = (f"keep it top-level for Claude Code and list it in skills.extension_keys to accept it (other clients "
                   f"ignore it; for them the spec's place is `metadata.{key}`)")
        return Finding("warning", where, f"frontmatter field {key!r} is not in the Agent Skills spec (its reference "
                       f"validator rejects the skill), but {client}: {fix}", "client-key", key)
    near = _NEAR_KEYS.get(key)
    hint = f"did you mean {near!r}? " if near else ""
    return Finding("error", where, f"unknown frontmatter field {key!r}: neither the Agent Skills spec nor a supported "
                   f"client (Claude Code, Codex, Gemini CLI) defines it, so clients ignore it ({hint}allowed: "
                   f"{', '.join(sorted(SPEC_KEYS))}; {fix})", "frontmatter", key)




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
                tokens = pointers.command_words(segment, comments=False)
                if tokens and (tokens[0] == subject or tokens[0].endswith("/" + subject)):
                    found.append((lineno, tokens))
    return found


def check_commands(cfg: Config, skill: Skill, reference: dict[str, Any]) -> list[Finding]:
    commands: dict[str, list[str]] = {k: v["options"] for k, v in reference["commands"].items()}
    subject = cfg.subject.name
    out = []
    own = {e.path for e in skill.files}
    for entry in skill_tree(cfg, skill):
        if not entry.path.endswith(".md"):
            continue
        source = source_of(cfg, skill, entry.path, own)
        text, _ = decode_markdown(entry.data, source)
        for lineno, argv in subject_invocations(text, subject):
            path: list[str] = []
            rest = argv[1:]
            while rest and " ".join([*path, rest[0]]) in commands:
                path.append(rest.pop(0))
            cmd = " ".join(path)
            if not path and rest and not rest[0].startswith("-"):
                out.append(Finding("error", source, f"line {lineno}: `{subject} {rest[0]}`: {subject} has no command {rest[0]!r}",
                                   "command", rest[0], lineno))
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
                    out.append(Finding("error", source, f"line {lineno}: `{label} {flag}`: {label} has no option {flag} "
                                       f"(see {cfg.subject.cli_reference})", "command", f"{label} {flag}", lineno))
    return out


def check_all(cfg: Config, reference: dict[str, Any] | None) -> tuple[list[Finding], dict[str, Skill]]:
    """Every L0 finding; a broken skill folder is that folder's finding, never an abort."""
    problems: list[FolderProblem] = []
    skills = discover(cfg, problems)
    findings: list[Finding] = []
    for p in problems:
        level = "error" if p.level == "error" else "note"
        findings.append(Finding(level, p.location, p.message + (f" (fix: {p.fix})" if p.fix else ""), "folder"))
    if not skills and not any(p.level == "error" for p in problems):
        findings.append(Finding("error", cfg.skills_source, "no skills found", "no-skills"))
    for skill in skills.values():
        findings += check_frontmatter(cfg, skill)
        findings += check_links(cfg, skill, skills)
        if reference is not None:
            findings += check_commands(cfg, skill, reference)
    cited = citation_graph(cfg, skills)
    for frag in shared_fragments(cfg):
        if frag.endswith(".md") and frag not in cited:
            findings.append(Finding("warning", frag, "shared fragment is cited by no skill", "fragment-unused"))
    # A broken folder is reported above; its published copy is not a second finding.
    broken = {p.dir.rsplit("/", 1)[-1] for p in problems if p.level == "error"}
    drifted = [d for d in drift(cfg, skills) if not any(f"/{b}/" in d for b in broken)]
    findings += [Finding("error", "published", f"{p} — run `make pack` (= skill-eval generate && skill-eval pack) and commit",
                         "drift", p.split(":", 1)[0])
                 for p in drifted]
    return findings, skills
