"""L0 hygiene rules the peers' linters have (agnix and others): reserved words in a name, bundled files
nothing names, long references without a table of contents, unpinned package runners.

Each finding is a warning (the skill works; it is worse than it should be) with the rule's fix and,
where it has one, its line and column; `skill-eval explain RULE` is its page (checks.rules). One pass
over each text file of a skill: its words for the reference index, its lines for the other rules.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from skill_eval.checks import pointers
from skill_eval.checks.rules import HYGIENE, RESERVED_WORDS, TOC_LINES, TOC_WINDOW, RuleFinding
from skill_eval.content.skills import SKILL_FILE, Skill

# files a skill carries for people or tools, never for the agent to be told about
_NEVER_NAMED = re.compile(r"^(?:license|licence|notice|readme|changelog|contributing|authors|copying|security)(?:[._-].*)?$"
                          r"|^(?:__init__\.py|requirements[\w.-]*\.txt|package(?:-lock)?\.json|pyproject\.toml|"
                          r"setup\.(?:py|cfg)|tsconfig\.json|\.[\w.-]+)$", re.I)
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", ".git", ".venv", "venv", "dist", "build", "target"})
_MAINTAINER = frozenset({"readme.md", "changelog.md", "contributing.md", "license.md", "claude.md", "agents.md",
                         "gemini.md", "spec.md", "evals.md", "todo.md"})
# the spec's folders: naming one ("see scripts/") does not name every file in it
_SPEC_DIRS = frozenset({"scripts", "references", "reference", "assets"})
# data a script reads (schemas, tables): it names nothing the agent is told about
DATA = (".xsd", ".xml", ".csv", ".tsv", ".svg", ".map", ".json", ".lock")
_TOC = re.compile(r"^\s{0,3}(?:#{1,6}\s*|\*\*|__)?\s*(?:table\s+of\s+contents|contents|toc|index|in\s+this\s+(?:file|document|"
                  r"guide|reference)|sections|quick\s+(?:links|navigation)|navigation|on\s+this\s+page)\b", re.I | re.M)
_ANCHOR = re.compile(r"\]\(#[^)\s]+\)")
_SHELL = frozenset({"bash", "sh", "shell", "zsh", "console", "shell-session", "terminal", "powershell", "ps1", "fish", ""})
_RUNNERS = re.compile(r"(?<![\w./-])(npx|bunx|pnpm\s+dlx|yarn\s+dlx|uvx|pipx\s+run)\s+([^\n`|;&]*)")
_INLINE = re.compile(r"`([^`\n]+)`")
# a fenced code block: its info word and its extent (CommonMark: closed by a fence at least as long)
_FENCE = re.compile(r"(?m)^[ ]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*\n(?:.*\n)*?(?:[ ]{0,3}\1[`~]*[ \t]*$|\Z)")


def check(skills: Mapping[str, Skill]) -> list[RuleFinding]:
    out: list[RuleFinding] = []
    for skill in skills.values():
        out += check_skill(skill)
    return out


def _text_files(skill: Skill) -> dict[str, str]:
    files: dict[str, str] = {}
    for entry in skill.files:
        if b"\0" not in entry.data[:8192]:
            files[entry.path] = entry.data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    return files


def check_skill(skill: Skill) -> list[RuleFinding]:
    texts = _text_files(skill)
    out = _reserved(skill, texts.get(SKILL_FILE, ""))
    out += _unreferenced(skill, texts)
    for path, text in sorted(texts.items()):
        if path.endswith(".md"):
            where = f"{skill.dir}/{path}"
            if path != SKILL_FILE and posixpath.basename(path).lower() not in _MAINTAINER:
                out += _toc(where, text)
            out += _unpinned(where, text)
    return out


def _finding(rule: str, where: str, message: str, subject: str, line: int = 0, column: int = 0) -> RuleFinding:
    return RuleFinding(HYGIENE[rule].level, where, message, rule, subject, line, column, HYGIENE[rule].fix)


def _reserved(skill: Skill, text: str) -> list[RuleFinding]:
    name = skill.frontmatter.get("name")
    if not isinstance(name, str):
        return []
    words = [w for w in RESERVED_WORDS if w in name.lower()]
    if not words:
        return []
    line = next((i for i, ln in enumerate(text.split("\n")[:200], 1) if ln.startswith("name:")), 0)
    return [_finding("name-reserved", f"{skill.dir}/{SKILL_FILE}", f"name {name!r} contains the reserved word "
                     f"{words[0]!r}: claude.ai and the Claude API refuse the skill on upload (Claude Code still loads it)",
                     "name", line, 1 if line else 0)]


def _unreferenced(skill: Skill, texts: dict[str, str]) -> list[RuleFinding]:
    """Bundled files no other file of the skill names: by path, file name, a folder below the spec's own
    (`scripts/office/`, `canvas-fonts/`), or for a Python module its import name. Data files (schemas,
    tables) name nothing for the agent and are not searched."""
    sources = [(p, t) for p, t in texts.items() if not p.lower().endswith(DATA)]
    out: list[RuleFinding] = []
    for entry in skill.files:
        path = entry.path
        parts = path.split("/")
        if path == SKILL_FILE or _NEVER_NAMED.match(parts[-1]) or any(p in _SKIP_DIRS or p.startswith(".") for p in parts[:-1]):
            continue
        wanted = [path, parts[-1], *(d for d in ("/".join(parts[:i]) for i in range(1, len(parts))) if d not in _SPEC_DIRS)]
        if any(n in text for own, text in sources if own != path for n in wanted):
            continue
        stem = parts[-1].removesuffix(".py")
        if path.endswith(".py") and stem.isidentifier():
            word = re.compile(rf"\b{re.escape(stem)}\b")
            if any(word.search(text) for own, text in sources if own != path and own.endswith(".py")):
                continue
        out.append(_finding("file-unreferenced", f"{skill.dir}/{path}", f"bundled file {path!r} is named by no other "
                            "file of the skill: the agent will not know it exists", path))
    return out


def _toc(where: str, text: str) -> list[RuleFinding]:
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines <= TOC_LINES:
        return []
    top = "\n".join(text.split("\n", TOC_WINDOW)[:TOC_WINDOW])
    if _TOC.search(top) or len(_ANCHOR.findall(top)) >= 3:
        return []
    return [_finding("reference-no-toc", where, f"reference file is {lines} lines (> {TOC_LINES}) and has no table of "
                     f"contents in its first {TOC_WINDOW} lines", "toc", 1, 1)]


def _unpinned(where: str, text: str) -> list[RuleFinding]:
    """`npx pkg` and the like with no pinned version, in shell code blocks and inline code (one regex
    pass for the runners, one for the fences, only when a runner is there at all)."""
    if not any(r in text for r in ("npx", "bunx", "dlx", "uvx", "pipx")):
        return []  # a substring test is far cheaper than the regex (whose lookbehind defeats its fast scan)
    runs = list(_RUNNERS.finditer(text))
    if not runs:
        return []
    fences = [(m.start(), m.end(), m.group(2).lower()) for m in _FENCE.finditer(text)]
    out: list[RuleFinding] = []
    seen: set[str] = set()
    for m in runs:
        fence = next((info for a, b, info in fences if a <= m.start() < b), None)
        line_start = text.rfind("\n", 0, m.start()) + 1
        if fence is not None:
            if fence not in _SHELL or text.startswith(("```", "~~~"), line_start):
                continue
        else:
            line_end = text.find("\n", m.start())
            line = text[line_start:len(text) if line_end < 0 else line_end]
            col = m.start() - line_start
            if not any(c.start(1) <= col < c.end(1) for c in _INLINE.finditer(line)):
                continue  # prose, not a command
        package = _package(m.group(1).split()[0], m.group(2))
        if package is None or package in seen:
            continue
        seen.add(package)
        out.append(_finding("command-unpinned", where, f"`{m.group(1)} {package}` runs the newest release of "
                            f"{package!r} on every run (no pinned version)", package,
                            text.count("\n", 0, m.start()) + 1, m.start() - line_start + 1))
    return out


_SOURCE_OPTS = {"npx": ("-p", "--package"), "uvx": ("--from",), "pipx": ("--spec",)}
_VALUE_OPTS = {"npx": ("-p", "--package", "-c", "--call"), "uvx": ("--from", "--with", "--python", "-p", "--index", "--with-requirements"),
               "pipx": ("--spec", "--python", "--pip-args")}


def _package(runner: str, rest: str) -> str | None:
    """The package a runner line fetches when its version is not pinned, else None."""
    words = pointers.command_words(rest, comments=True)
    key = "npx" if runner in ("npx", "bunx", "pnpm", "yarn") else runner
    source: str | None = None
    i = 0
    while i < len(words) and words[i].startswith("-"):
        opt = words[i].split("=", 1)
        if opt[0] in _SOURCE_OPTS[key]:  # the package comes from an option (`uvx --from pkg==1 cmd`)
            source = opt[1] if len(opt) > 1 else (words[i + 1] if i + 1 < len(words) else None)
        if len(opt) == 1 and opt[0] in _VALUE_OPTS.get(key, ()):
            i += 1
        i += 1
    package = source or (words[i] if i < len(words) else None)
    if not package or package.startswith((".", "/", "~", "$", "<", "{")) or not re.match(r"^@?[\w.-]", package):
        return None
    if key == "npx":
        pinned = "@" in package[1:] and not package.endswith(("@latest", "@next"))
    else:
        pinned = bool(re.search(r"(?:==|@)\d", package))
    return None if pinned else package.split("==")[0]
