"""L0 links and paths: every relative link and every path a skill's Markdown points the agent at
resolves inside the *published* tree (what an agent actually sees; checks.pointers tells a pointer
from a prose example). A link or path that leaves the skill, or is written from the repository root,
is worded by where it works (a plugin, a clone) and where it does not (the skill installed alone).
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
from skill_eval.checks.findings import Finding
from skill_eval.content.config import Config
from skill_eval.content.generate import skill_tree
from skill_eval.content.skills import (
    HTML_LINK_RE,
    LINK_RE,
    REFDEF_RE,
    SKILL_FILE,
    Skill,
    decode_markdown,
    line_starts,
    link_targets,
)
from skill_eval.core.errors import SkillEvalError
from skill_eval.core.hashing import TreeEntry

# Folders every skill may name even before they exist (the spec's layout); any other top-level
# folder of the skill is checked too once it exists.
STANDARD_DIRS = ("scripts", "references", "assets")
_PATH_CHARS = r"[^\s`'\"()\[\]<>{}|,;!?*$]"


@dataclass(frozen=True)
class _Published:
    """One skill as check_links reads it: its published tree, and the patterns finding the paths its
    Markdown files name."""

    cfg: Config
    skill: Skill
    skills: Mapping[str, Skill]  # every discovered skill (a path may be a sibling's)
    tree: dict[str, TreeEntry]  # published path -> file
    dirs: set[str]  # every folder of the published tree ("" included)
    has: set[str]  # the skill's top-level folders
    mention: re.Pattern[str]  # a path under the spec's folders or a top-level folder the skill has
    trees: list[str]  # what a path from the repository root starts with (none: not looked for)
    rooted: re.Pattern[str]
    standalone: bool  # `[checks] publish = "standalone"` for this skill
    loaded: set[str]  # what SKILL.md links to: loaded by the agent, whatever its name


@dataclass(frozen=True)
class _Doc:
    """One Markdown file of the published skill, decoded, with how its findings are worded."""

    path: str  # published path
    source: str  # the repository file behind it (where its findings point)
    text: str  # LF line ends; in SKILL.md the frontmatter blanked, line breaks kept
    starts: list[int]  # offsets where its lines start
    lines: list[pointers.LineInfo]
    link_spans: list[tuple[int, int]]  # every link's text and target
    maintainer: str  # why the agent does not follow its pointers (_maintainer_doc), or ""
    broken: str  # the level of a pointer that resolves nowhere: a warning in a maintainer document
    aside: str  # " (<maintainer>)" at a finding's end, or ""


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
    view = _published(cfg, skill, skills if skills is not None else {skill.name: skill})  # check_all's: every skill
    out: list[Finding] = []
    own = {e.path for e in skill.files}
    for path, entry in sorted(view.tree.items()):
        if not path.endswith(".md"):
            continue
        source = source_of(cfg, skill, path, own)
        try:
            text, _ = decode_markdown(entry.data, source)
        except SkillEvalError as exc:
            out.append(Finding("error", source, exc.message, "encoding"))
            continue
        doc = _doc(path, source, text, view.loaded)
        linked: set[str] = set()  # one finding per target and file, at its first line (its id names the target)
        out += _link_findings(view, doc, linked)
        reported: set[str] = set()  # one finding per path and file, whichever pattern names it first
        out += _mention_findings(view, doc, linked, reported)
        out += _rooted_findings(view, doc, reported)
    return out


def _published(cfg: Config, skill: Skill, skills: Mapping[str, Skill]) -> _Published:
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
    trees = [s.path for s in cfg.sources if s.path != "."]
    if len(trees) < len(cfg.sources):
        trees += sorted(s.dir for s in skills.values() if "/" not in s.dir)
    rooted = re.compile(r"(?<![\w/.$~@:%-])((?:" + "|".join(map(re.escape, trees)) + r")/" + _PATH_CHARS + r"+)")
    standalone = cfg.publish_of(skill.dir) == "standalone"
    # what SKILL.md links to is loaded by the agent: its pointers are never downgraded, whatever its name
    loaded = {posixpath.normpath(t) for t, _ in link_targets(skill.body) if not t.startswith("/")}
    return _Published(cfg, skill, skills, tree, dirs, has, mention, trees, rooted, standalone, loaded)


def _doc(path: str, source: str, text: str, loaded: set[str]) -> _Doc:
    text = text.replace("\r\n", "\n")
    if path == SKILL_FILE:  # frontmatter values (`name: r-lib/cli`) are not pointers: blanked, line breaks kept
        text = _FRONTMATTER_BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text, count=1)
    # a maintainer document (README.md, SPEC.md, CLAUDE.md, .maintenance/...) is not what the agent loads:
    # what it points at is worth a warning, never an error
    maintainer = _maintainer_doc(path, loaded)
    return _Doc(path, source, text, line_starts(text), pointers.lines_of(text), _link_spans(text), maintainer,
                "warning" if maintainer else "error", f" ({maintainer})" if maintainer else "")


def _link_findings(view: _Published, doc: _Doc, linked: set[str]) -> list[Finding]:
    """The links of a file that resolve nowhere, or leave the skill; `linked` collects every target."""
    out: list[Finding] = []
    for target, line in link_targets(doc.text):
        if target in linked:
            continue  # one finding per target and file, at its first line (its id names the target)
        linked.add(target)
        out += _link_finding(view, doc, target, line)
    return out


def _link_finding(view: _Published, doc: _Doc, target: str, line: int) -> list[Finding]:
    if target.startswith("${"):
        return _variable_link(view.tree.keys() | view.dirs, target,
                              Finding(doc.broken, doc.source, doc.aside, "link-broken", "", line))
    if target.startswith("/"):
        if not _SLASH_COMMAND.match(target) and not _quoted_link(doc.text, line, target):
            return [Finding(doc.broken, doc.source, f"absolute link {target!r} resolves nowhere once the skill is "
                            f"installed{doc.aside} (write it relative to this file)", "link-broken", target, line)]
        return []  # `/plugin:skill`: a client's slash command, not a file
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(doc.path), target))
    if resolved.startswith("../") or resolved == "..":
        return [_leaving_link(view, doc, target, line)]
    if resolved not in view.tree and resolved.rstrip("/") not in view.dirs:
        return _unresolved_link(view, doc, target, resolved, line)
    return []


def _leaving_link(view: _Published, doc: _Doc, target: str, line: int) -> Finding:
    """A link out of the skill folder: a portability warning (an error for a skill published alone) when it
    resolves in the repository, else broken."""
    in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(doc.source), target))
    if not in_repo.startswith("../") and (view.cfg.root / in_repo).exists():
        if view.standalone:
            return Finding(doc.broken, doc.source, f"link {target!r} leaves the skill folder ({in_repo}); a skill "
                           f"published alone must be self-contained{doc.aside} (copy the file into the skill, or "
                           f"cite a shared fragment from {view.cfg.skills_shared}/)", "link-leaves-skill", target, line)
        return Finding("warning", doc.source, f"link {target!r} leaves the skill folder ({in_repo}): it works "
                       "only where the skills ship together (a plugin); copy the file into the skill to "
                       "install it alone", "link-leaves-skill", target, line)
    return Finding(doc.broken, doc.source, f"broken relative link {target!r} (it leaves the skill and {in_repo} "
                   f"does not exist in the repository){doc.aside}", "link-broken", target, line)


def _unresolved_link(view: _Published, doc: _Doc, target: str, resolved: str, line: int) -> list[Finding]:
    """A link inside the skill to nothing relative to its file: fine when written from the skill root."""
    from_root = posixpath.normpath(target)
    if from_root in view.tree or from_root.rstrip("/") in view.dirs:
        return []  # written from the skill root, as the Agent Skills spec asks for file references
    if not doc.maintainer and _quoted_link(doc.text, line, target):  # '"see our [frameworks](link)"': the user's text
        return [Finding("warning", doc.source, f"link {target!r} in a quoted example resolves nowhere in the "
                        "skill: it is the example's text, unless the agent should open it", "link-broken", target, line)]
    return [Finding(doc.broken, doc.source, f"broken relative link {target!r} (no {resolved} in the published "
                    f"skill){doc.aside}{_did_you_mean(view.tree, doc.path, resolved)}", "link-broken", target, line)]


def _mention_findings(view: _Published, doc: _Doc, linked: set[str], reported: set[str]) -> list[Finding]:
    """The paths a file names in text (`scripts/fill.py`) as pointers that the skill does not have."""
    out: list[Finding] = []
    for m in view.mention.finditer(doc.text):
        ref = m.group(1).split("#", 1)[0].rstrip(".:")  # `guide.md#section`: the file is what must exist
        if _mention_needs_no_finding(view, doc, m, ref, linked, reported):
            continue
        index, col = _position(doc.starts, m.start(1))
        if not pointers.is_pointer(doc.lines, index, col, ref):
            continue  # a prose example (`scripts/rotate_pdf.py` as an illustration), never a finding
        reported.add(ref)
        out.append(_missing_path(view, doc, ref, index, col))
    return out


def _mention_needs_no_finding(view: _Published, doc: _Doc, m: re.Match[str], ref: str, linked: set[str],
                              reported: set[str]) -> bool:
    """Whether a path named in text is no missing file: a placeholder or a glob, a link's target or its own
    text (checked as the link), a path already reported, or one the skill has."""
    text = doc.text
    raw = m.group(1).rstrip(",:;)")
    if _ELLIPSIS.search(raw) or _PLACEHOLDER.match(posixpath.splitext(posixpath.basename(ref))[0]):
        return True  # `references/...`, `scripts/script_name.py`: a placeholder for any path
    if text[m.end():m.end() + 1] in ("*", "<", "{", "$") or ref in reported or _inside(doc.link_spans, m.start(1)):
        return True  # a glob, a placeholder, or a link target (checked above)
    if ref.removeprefix("./") in {t.removeprefix("./") for t in linked}:
        return True  # `[references/x.md](references/x.md)`: the link's own text; one defect is one finding
    candidates = {ref, unquote(ref)}  # a link target is percent-encoded (`user%20guide.md`)
    candidates |= {posixpath.normpath(posixpath.join(posixpath.dirname(doc.path), c)) for c in list(candidates)}
    spaced = text[m.end():m.end() + 1] == " " and any(t.startswith(ref + " ") for t in view.tree)  # `a b.md`
    return spaced or any(c in view.tree or c.rstrip("/") in view.dirs for c in candidates)


def _missing_path(view: _Published, doc: _Doc, ref: str, index: int, col: int) -> Finding:
    """The finding for a pointer to a file the skill does not have, worded by where the file is instead."""
    source, lines = doc.source, doc.lines
    example = _example_aside(doc.path, lines[index], doc.text, ref.removeprefix("./").split("/", 1)[0], view.has)
    if example:
        return Finding("warning", source, f"names {ref!r}, which does not exist in the skill ({example})",
                       "path-missing", ref, index + 1)
    stem = [t for t in view.tree if posixpath.splitext(t)[0] == ref]
    owner = (None if pointers.is_command(lines, index, col, ref)
             else _sibling_owning(view.cfg, lines[index].text[:col], ref, view.skill, view.skills))
    if owner:
        return Finding("error" if view.standalone else "warning", source, f"names {ref!r}, a file of the skill "
                       f"{owner!r} named right before it: it is there only where the skills ship together "
                       f"(a plugin); write '../{owner}/{ref}', or copy the file into this skill",
                       "path-missing", ref, index + 1)
    if stem:
        return Finding("warning", source, f"names {ref!r}, which does not exist in the skill; did you mean "
                       f"{stem[0]!r}?{doc.aside}", "path-missing", ref, index + 1)
    if not doc.maintainer and (outside := _outside_skill(view.cfg, view.skill, ref)):  # `./scripts/convert.sh`
        return Finding("error" if view.standalone else "warning", source, f"names {ref!r}, which is not in the "
                       f"skill but {outside}", "path-missing", ref, index + 1)
    top = ref.removeprefix("./").split("/", 1)[0]
    why = "" if top in view.has else (f" (the skill has no {top}/ folder: ship the file, fix the path, "
                                      "or write it so it is clearly the user's)")
    return Finding(doc.broken, source, f"names {ref!r}, which does not exist in the skill{why}{doc.aside}",
                   "path-missing", ref, index + 1)


def _rooted_findings(view: _Published, doc: _Doc, reported: set[str]) -> list[Finding]:
    """The paths a file names from the repository root (`skills/<name>/guide.md`) that exist there."""
    out: list[Finding] = []
    for m in view.rooted.finditer(doc.text) if view.trees else ():
        ref = m.group(1).rstrip(".:")
        if ref in reported or _inside(doc.link_spans, m.start(1)) or not (view.cfg.root / ref).exists():
            continue
        reported.add(ref)
        out.append(_root_relative(view, doc, ref, *_position(doc.starts, m.start(1))))
    return out


def _root_relative(view: _Published, doc: _Doc, ref: str, index: int, col: int) -> Finding:
    """A path from the repository root: an error when it is an instruction the agent follows, else a warning."""
    skill_dir = view.skill.dir
    inside = posixpath.relpath(ref, skill_dir) if ref.startswith(skill_dir + "/") else None
    if ref.rstrip("/") == skill_dir:
        fix = "the skill's own folder: name the skill, or write paths inside it relative to it"
    elif inside:
        fix = f"write it relative to the skill: {inside!r}"
    else:
        fix = "copy the file into the skill and name it relative to the skill"
    lines = doc.lines
    in_example = lines[index].fence is not None and doc.path != SKILL_FILE  # a code example in a reference file
    elsewhere = _OTHER_REPO.match(lines[index].text[col + len(ref):]) is not None  # "... in the `x` repo"
    instruction = (pointers.is_pointer(lines, index, col, ref) and not doc.maintainer and not in_example
                   and not elsewhere)
    level, how = ("error", "an instruction names") if instruction else ("warning", "names")
    where = " (in a code example of a reference file)" if in_example else doc.aside
    return Finding(level, doc.source, f"{how} {ref!r} from the repository root, which is wrong once the skill is "
                   f"installed{where} ({fix})", "path-root-relative", ref, index + 1)


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


def source_of(cfg: Config, skill: Skill, published: str, own: set[str]) -> str:
    """The repository file behind a published path: the skill's own, or a cited shared fragment (whose
    published copy is references/shared/... unless the skill has a file there itself, `own`)."""
    if published.startswith("references/shared/") and published not in own:
        return f"{cfg.skills_shared}/{published[len('references/shared/'):]}"
    return f"{skill.dir}/{published}"
