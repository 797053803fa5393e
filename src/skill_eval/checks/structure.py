"""L0 structural check: is every skill well-formed, self-contained and non-drifted?

Checks the Agent Skills frontmatter rules, body size, that every relative link and every
path a skill points the agent at resolves inside the *published* tree (what an agent
actually sees; checks.pointers tells a pointer from a prose example), that every subject
command and flag named in a code block exists in the committed CLI reference, and that
the published copies are byte-identical to what the generator produces from skills-src/.
Each Finding has a stable id (rule:where:subject) that suppressions and the adoption
baseline match (checks.suppress).
"""

from __future__ import annotations

import bisect
import dataclasses
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from skill_eval.checks import pointers
from skill_eval.content.config import Config
from skill_eval.content.generate import drift, skill_tree
from skill_eval.content.skills import (
    HTML_LINK_RE,
    LINK_RE,
    REFDEF_RE,
    SKILL_FILE,
    FolderProblem,
    Skill,
    citation_graph,
    decode_markdown,
    discover,
    line_starts,
    link_targets,
    shared_fragments,
)
from skill_eval.core.errors import SkillEvalError

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
# Folders every skill may name even before they exist (the spec's layout); any other top-level
# folder of the skill is checked too once it exists.
STANDARD_DIRS = ("scripts", "references", "assets")
_PATH_CHARS = r"[^\s`'\"()\[\]<>{}|,;!?*$]"


@dataclass(frozen=True)
class Finding:
    """One L0 finding. `id` (rule:where:subject, no line number) is stable across edits elsewhere in
    the file, so a suppression or a baseline entry keeps matching it."""

    level: str  # error | warning | note (not a skill, skipped by rule)
    where: str
    message: str
    rule: str = "structure"
    subject: str = ""  # what the finding is about: a link target, a path, a frontmatter field
    line: int = 0  # 1-based line in `where` (0: the whole file); for inline suppressions, not part of the id

    @property
    def id(self) -> str:
        return f"{self.rule}:{self.where}" + (f":{self.subject}" if self.subject else "")

    def as_dict(self) -> dict[str, Any]:
        return {"level": self.level, "where": self.where, "message": self.message, "rule": self.rule, "id": self.id,
                **({"line": self.line} if self.line else {})}

    def __str__(self) -> str:  # `file:line:` as compilers and linters print it (an editor jumps there)
        return f"{self.level}: {self.where}{f':{self.line}' if self.line else ''}: {self.message} [{self.id}]"


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


def check_links(cfg: Config, skill: Skill, skills: Mapping[str, Skill] | None = None) -> list[Finding]:
    """Every relative link and every path a Markdown file points the agent at resolves.

    Resolution is inside the *published* tree (what an agent actually sees). Links are
    inline, reference-style or HTML, percent-decoded, and always pointers; a path named in
    text (`scripts/fill.py`, under the spec's folders or any top-level folder the skill
    has) is checked only when it is a pointer (checks.pointers): a prose example is never a
    finding. A link that leaves the skill but resolves in the repository works when the
    skills ship together (a plugin) and is a portability warning, an error where the skill
    is published alone (`[checks] publish = "standalone"`). A path written from the
    repository root (`skills/<name>/guide.md`) is wrong once the skill is installed.
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
    # a path from the repository root starts with a source folder; for skills at the root, with a skill's name
    skills = skills if skills is not None else {skill.name: skill}  # every discovered skill (check_all's)
    trees = [s.path for s in cfg.sources if s.path != "."]
    if len(trees) < len(cfg.sources):
        trees += sorted(s.dir for s in skills.values() if "/" not in s.dir)
    rooted = re.compile(r"(?<![\w/.$~@:%-])((?:" + "|".join(map(re.escape, trees)) + r")/" + _PATH_CHARS + r"+)")
    standalone = cfg.publish_of(skill.dir) == "standalone"
    out: list[Finding] = []
    own = {e.path for e in skill.files}
    # what SKILL.md links to is loaded by the agent: its pointers are never downgraded, whatever its name
    loaded = {posixpath.normpath(t) for t, _ in link_targets(skill.body) if not t.startswith("/")}
    for path, entry in sorted(tree.items()):
        if not path.endswith(".md"):
            continue
        source = _source_of(cfg, skill, path, own)
        try:
            text, _ = decode_markdown(entry.data, source)
        except SkillEvalError as exc:
            out.append(Finding("error", source, exc.message, "encoding"))
            continue
        text = text.replace("\r\n", "\n")
        if path == SKILL_FILE:  # frontmatter values (`name: r-lib/cli`) are not pointers: blanked, line breaks kept
            text = _FRONTMATTER_BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text, count=1)
        starts = line_starts(text)
        # a maintainer document (README.md, SPEC.md, CLAUDE.md, .maintenance/...) is not what the agent loads:
        # what it points at is worth a warning, never an error
        maintainer = _maintainer_doc(path, loaded)
        broken = "warning" if maintainer else "error"
        aside = f" ({maintainer})" if maintainer else ""
        linked: set[str] = set()
        for target, line in link_targets(text):
            if target in linked:
                continue  # one finding per target and file, at its first line (its id names the target)
            linked.add(target)
            if target.startswith("${"):
                out += _variable_link(tree.keys() | dirs, target, Finding(broken, source, aside, "link-broken", "", line))
                continue
            if target.startswith("/"):
                if not _SLASH_COMMAND.match(target) and not _quoted_link(text, line, target):
                    out.append(Finding(broken, source, f"absolute link {target!r} resolves nowhere once the skill is "
                                       f"installed{aside} (write it relative to this file)", "link-broken", target, line))
                continue  # `/plugin:skill`: a client's slash command, not a file
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if resolved.startswith("../") or resolved == "..":
                in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
                if not in_repo.startswith("../") and (cfg.root / in_repo).exists():
                    if standalone:
                        out.append(Finding(broken, source, f"link {target!r} leaves the skill folder ({in_repo}); a skill "
                                           f"published alone must be self-contained{aside} (copy the file into the skill, or "
                                           f"cite a shared fragment from {cfg.skills_shared}/)", "link-leaves-skill", target, line))
                    else:
                        out.append(Finding("warning", source, f"link {target!r} leaves the skill folder ({in_repo}): it works "
                                           "only where the skills ship together (a plugin); copy the file into the skill to "
                                           "install it alone", "link-leaves-skill", target, line))
                else:
                    out.append(Finding(broken, source, f"broken relative link {target!r} (it leaves the skill and {in_repo} "
                                       f"does not exist in the repository){aside}", "link-broken", target, line))
            elif resolved not in tree and resolved.rstrip("/") not in dirs:
                from_root = posixpath.normpath(target)
                if from_root in tree or from_root.rstrip("/") in dirs:
                    continue  # written from the skill root, as the Agent Skills spec asks for file references
                if not maintainer and _quoted_link(text, line, target):  # '"see our [frameworks](link)"': the user's text
                    out.append(Finding("warning", source, f"link {target!r} in a quoted example resolves nowhere in the "
                                       "skill: it is the example's text, unless the agent should open it",
                                       "link-broken", target, line))
                    continue
                out.append(Finding(broken, source, f"broken relative link {target!r} (no {resolved} in the published "
                                   f"skill){aside}{_did_you_mean(tree, path, resolved)}", "link-broken", target, line))
        lines = pointers.lines_of(text)
        link_spans = _link_spans(text)
        reported: set[str] = set()
        for m in mention.finditer(text):
            ref = m.group(1).split("#", 1)[0].rstrip(".:")  # `guide.md#section`: the file is what must exist
            raw = m.group(1).rstrip(",:;)")
            if _ELLIPSIS.search(raw) or _PLACEHOLDER.match(posixpath.splitext(posixpath.basename(ref))[0]):
                continue  # `references/...`, `scripts/script_name.py`: a placeholder for any path
            if text[m.end():m.end() + 1] in ("*", "<", "{", "$") or ref in reported or _inside(link_spans, m.start(1)):
                continue  # a glob, a placeholder, or a link target (checked above)
            if ref.removeprefix("./") in {t.removeprefix("./") for t in linked}:
                continue  # `[references/x.md](references/x.md)`: the link's own text; one defect is one finding
            candidates = {ref, unquote(ref)}  # a link target is percent-encoded (`user%20guide.md`)
            candidates |= {posixpath.normpath(posixpath.join(posixpath.dirname(path), c)) for c in list(candidates)}
            spaced = text[m.end():m.end() + 1] == " " and any(t.startswith(ref + " ") for t in tree)  # `a b.md`
            if spaced or any(c in tree or c.rstrip("/") in dirs for c in candidates):
                continue
            index, col = _position(starts, m.start(1))
            if not pointers.is_pointer(lines, index, col, ref):
                continue  # a prose example (`scripts/rotate_pdf.py` as an illustration), never a finding
            reported.add(ref)
            example = _example_aside(path, lines[index], text, ref.removeprefix("./").split("/", 1)[0], has)
            if example:
                out.append(Finding("warning", source, f"names {ref!r}, which does not exist in the skill ({example})",
                                   "path-missing", ref, index + 1))
                continue
            stem = [t for t in tree if posixpath.splitext(t)[0] == ref]
            owner = (None if pointers.is_command(lines, index, col, ref)
                     else _sibling_owning(cfg, lines[index].text[:col], ref, skill, skills))
            if owner:
                out.append(Finding("error" if standalone else "warning", source, f"names {ref!r}, a file of the skill "
                                   f"{owner!r} named right before it: it is there only where the skills ship together "
                                   f"(a plugin); write '../{owner}/{ref}', or copy the file into this skill",
                                   "path-missing", ref, index + 1))
            elif stem:
                out.append(Finding("warning", source, f"names {ref!r}, which does not exist in the skill; did you mean "
                                   f"{stem[0]!r}?{aside}", "path-missing", ref, index + 1))
            elif not maintainer and (outside := _outside_skill(cfg, skill, ref)):  # `./scripts/convert.sh`
                out.append(Finding("error" if standalone else "warning", source, f"names {ref!r}, which is not in the "
                                   f"skill but {outside}", "path-missing", ref, index + 1))
            else:
                top = ref.removeprefix("./").split("/", 1)[0]
                why = "" if top in has else (f" (the skill has no {top}/ folder: ship the file, fix the path, "
                                             "or write it so it is clearly the user's)")
                out.append(Finding(broken, source, f"names {ref!r}, which does not exist in the skill{why}{aside}",
                                   "path-missing", ref, index + 1))
        for m in rooted.finditer(text) if trees else ():
            ref = m.group(1).rstrip(".:")
            if ref in reported or _inside(link_spans, m.start(1)) or not (cfg.root / ref).exists():
                continue
            reported.add(ref)
            index, col = _position(starts, m.start(1))
            inside = posixpath.relpath(ref, skill.dir) if ref.startswith(skill.dir + "/") else None
            if ref.rstrip("/") == skill.dir:
                fix = "the skill's own folder: name the skill, or write paths inside it relative to it"
            elif inside:
                fix = f"write it relative to the skill: {inside!r}"
            else:
                fix = "copy the file into the skill and name it relative to the skill"
            in_example = lines[index].fence is not None and path != SKILL_FILE  # a code example in a reference file
            elsewhere = _OTHER_REPO.match(lines[index].text[col + len(ref):]) is not None  # "... in the `x` repo"
            instruction = (pointers.is_pointer(lines, index, col, ref) and not maintainer and not in_example
                           and not elsewhere)
            level, how = ("error", "an instruction names") if instruction else ("warning", "names")
            where = " (in a code example of a reference file)" if in_example else aside
            out.append(Finding(level, source, f"{how} {ref!r} from the repository root, which is wrong once the skill is "
                               f"installed{where} ({fix})", "path-root-relative", ref, index + 1))
    return out


_FRONTMATTER_BLOCK = re.compile(r"\A---[ \t]*\n.*?^---[ \t]*$", re.S | re.M)
_SKILL_DIR_VAR = re.compile(r"^\$\{CLAUDE_SKILL_DIR\}/(.+)$")


# a path said to be another repository's: "Read `skills/x/y.md` in the `marketingskills` repo"
_OTHER_REPO = re.compile(r"^[`'\")\]]*\s+\(?(?:in|from|of)\s+the\s+`?[\w./-]+`?\s+(?:repo|repository|project)\b", re.I)


def _quoted_link(text: str, line: int, target: str) -> bool:
    """Whether a site-absolute link is inside a quoted example on its line ('"Learn more about
    [analytics](/features/analytics)"': text the user's site should carry, not a file the agent opens)."""
    row = text.split("\n")[line - 1] if 0 < line <= text.count("\n") + 1 else ""
    at = row.find(f"]({target}")
    return at >= 0 and (row.count('"', 0, at) % 2 == 1 or row.count("\u201c", 0, at) > row.count("\u201d", 0, at))


def _variable_link(known: set[str], target: str, at: Finding) -> list[Finding]:
    """A link through a client's variable: `${CLAUDE_SKILL_DIR}/x` is `x` in the skill (Claude Code
    substitutes it); any other (`${CLAUDE_PLUGIN_ROOT}/...`) is outside what L0 can resolve."""
    var = _SKILL_DIR_VAR.match(target)
    inside = posixpath.normpath(var.group(1)) if var else ""
    if not inside or inside in known or inside.rstrip("/") in known:
        return []
    return [dataclasses.replace(at, subject=var.group(1) if var else target,
                                message=f"broken link {target!r}: no {inside} in the published skill{at.message}")]


def _outside_skill(cfg: Config, skill: Skill, ref: str) -> str:
    """Where a path missing from the skill is found beside it, worded as the finding's end, or "": in the
    plugin folder holding `skills/` (it ships with the plugin, under another path), or at the repository
    root (the repository's own script, run from a clone)."""
    ref = ref.removeprefix("./")
    parent = posixpath.dirname(skill.dir)
    plugin = posixpath.dirname(parent) if posixpath.basename(parent) == "skills" else ""
    if plugin and (cfg.root / plugin / ref).is_file():
        return (f"in its plugin's folder ({plugin}/{ref}): it ships with the plugin, not at this path (write "
                f"${{CLAUDE_PLUGIN_ROOT}}/{ref}, or copy it into the skill)")
    if (cfg.root / ref).is_file():
        return ("at the repository root: it works only in a clone of the repository (ship it in the skill, or say "
                "the command is run from a clone)")
    return ""


def _example_aside(path: str, line: pointers.LineInfo, text: str, top: str, has: set[str]) -> str:
    """Why a missing file named as a pointer is only a warning, or "": a command in a code block of a
    reference file is an example of use (a runbook's script, a project's health check), and a folder the
    file says lives elsewhere ("the scripts live in a local clone of ...") is not the skill's."""
    if line.fence is not None and path != SKILL_FILE:
        return "in a code example of a reference file: an example, unless the skill should ship it"
    if top not in has and re.search(rf"\b{re.escape(top)}\b[^.]{{0,120}}\blive\s+in\s+(?:a|the|your)\s+(?:local\s+)?"
                                    r"(?:clone|checkout|copy)\b", text, re.I):
        return f"the file says its {top} live in a clone, not in the skill: ship them, or keep that instruction clear"
    return ""


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    """(0-based line index, column) of a character offset, given the offsets where lines start."""
    index = bisect.bisect_right(starts, offset) - 1
    return index, offset - starts[index]


def _link_spans(text: str) -> list[tuple[int, int]]:
    # a link's target and its text (`[references/x.md](../../references/x.md)`: the target is what is checked)
    spans = [(m.start(1), m.end(2)) for m in LINK_RE.finditer(text)] + [m.span(2) for m in REFDEF_RE.finditer(text)]
    return spans + [m.span() for m in HTML_LINK_RE.finditer(text)]


def _inside(spans: list[tuple[int, int]], offset: int) -> bool:
    return any(a <= offset < b for a, b in spans)


_SLASH_COMMAND = re.compile(r"^/[\w.-]+:[\w.-]+/?$")  # `[x](/plugin:skill)`: a Claude Code command, not a path
# maintainer documents beside SKILL.md (the agent loads SKILL.md and what it points at, not these)
_MAINTAINER = frozenset({"README.md", "CHANGELOG.md", "CONTRIBUTING.md", "LICENSE.md", "CLAUDE.md", "AGENTS.md",
                         "GEMINI.md", "SPEC.md", "EVAL.md", "EVALS.md", "SOURCES.md", "MAINTAINERS.md", "TODO.md"})
_TEMPLATE = re.compile(r"[_.-]template$|^template[_.-]", re.I)  # soap_note_template.md, report.template.md
# a sample of what the skill produces (expected_outputs/sample-prd-readme.md): its links are the sample's pages
_SAMPLE_DIR = re.compile(r"(?:expected|sample|example)[_-]?outputs?", re.I)
_SAMPLE_FILE = re.compile(r"(?:sample|example)[_-]output", re.I)
# a placeholder file name in an example command: `python scripts/script_name.py --help`
_ELLIPSIS = re.compile(r"/(?:\.\.\.|…)(?:/|\.?$)")  # `references/...`: any path
_PLACEHOLDER = re.compile(r"^(?:your[_-].+|(?:script|file)[_-]?name)$", re.I)


def _maintainer_doc(path: str, loaded: set[str]) -> str:
    """Why the agent does not follow this file's pointers, or "": a maintainer document (README.md, SPEC.md,
    CLAUDE.md ... in any folder, anything in a dot-folder or the skill's tests/) is not loaded; a template (in a `templates/`
    folder, or named *_template*) is copied into the user's output, its links are the output's. A file
    SKILL.md links to is loaded whatever its name (`[forms](FORMS.md)`), so it is never one of these."""
    if path == SKILL_FILE or path in loaded:
        return ""
    parts = path.split("/")
    if any(p.startswith(".") for p in parts[:-1]) or parts[-1] in _MAINTAINER or parts[0] in ("tests", "test"):
        return "in a maintainer document the agent does not load"
    if any(p.lower() in ("templates", "template") for p in parts[:-1]) or _TEMPLATE.search(posixpath.splitext(parts[-1])[0]):
        return "in a template: its links are the output's"
    if any(_SAMPLE_DIR.fullmatch(p) for p in parts[:-1]) or _SAMPLE_FILE.match(parts[-1]):
        return "in a sample of the skill's output: its links are the output's"
    return ""


def _did_you_mean(tree: dict[str, Any], path: str, resolved: str) -> str:
    """"; did you mean 'x'?" for a file of the skill with the missing file's name (a folder renamed), or ""."""
    same = sorted(t for t in tree if posixpath.basename(t) == posixpath.basename(resolved))
    if not same:
        return ""
    return f"; did you mean {posixpath.relpath(same[0], posixpath.dirname(path) or '.')!r}?"


def _sibling_owning(cfg: Config, before: str, ref: str, skill: Skill, skills: Mapping[str, Skill]) -> str | None:
    """The other skill named in the few words right before `ref` ("the `uipath-platform` skill
    (`references/x/`)", "`editframe-api` `references/files.md`") whose folder holds it, or None."""
    near: set[str] = set(re.findall(r"(?<![\w-])[a-z0-9]+(?:-[a-z0-9]+)*(?![\w-])", before[-60:]))
    for word in sorted(near & (set(skills) - {skill.name})):
        if (cfg.root / skills[word].dir / ref.removeprefix("./")).exists():
            return word
    return None


def _source_of(cfg: Config, skill: Skill, published: str, own: set[str]) -> str:
    """The repository file behind a published path: the skill's own, or a cited shared fragment (whose
    published copy is references/shared/... unless the skill has a file there itself, `own`)."""
    if published.startswith("references/shared/") and published not in own:
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
        source = _source_of(cfg, skill, entry.path, own)
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
