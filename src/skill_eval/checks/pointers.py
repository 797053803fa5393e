"""Is a path named in a skill file a real pointer, or a prose example?

A Markdown link is always a pointer. A path named in text is a pointer when the agent is
told to do something with it: an instruction verb before it in the same sentence ("See
references/workflows.md", "run scripts/x.py"), a command that runs it (`python
scripts/x.py` in inline code or in a shell code block), or a line of its own right after an
instruction ending in ':'. Anything else is an example: a list of example names, a folder
tree, a path inside a ````markdown example block, a path said to be the user's.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

# Programs whose argument is a file the agent is meant to run or read.
INTERPRETERS = frozenset({
    "python", "python3", "py", "uv", "uvx", "node", "bash", "sh", "zsh", "source", ".", "ruby", "perl", "deno",
    "bun", "tsx", "npx", "cat", "pwsh", "powershell", "go", "java", "php", "Rscript", "osascript",
})
_VERB = re.compile(
    r"\b(?:see|read|reads|reading|load|loads|open|run|runs|running|execute|executes|consult|refer\s+to|follow|"
    r"invoke|call|launch|view|use|using|check|details?\s+in|documented\s+in|described\s+in|defined\s+in|"
    r"found\s+in|listed\s+in|guide\s+in|instructions\s+in)\b", re.I)
_RUN_VERB = re.compile(r"\b(?:run|runs|running|execute|executes|invoke|call|launch)\b", re.I)
_WORD_PAIR = re.compile(r"[A-Za-z]+/[A-Za-z]+")  # `references/examples`: no extension, no third part, no trailing '/'
# "e.g." / "i.e." end in a dot, so no \b after them ("(e.g., `x`)" is an example too)
_EXAMPLE = re.compile(r"(?<![\w.])(?:e\.g\.|i\.e\.)|\b(?:for\s+example|examples?|for\s+instance|such\s+as|like|good|bad)\b", re.I)
_EXAMPLE_RIGHT_BEFORE = re.compile(r"(?:(?<![\w.])(?:e\.g\.|i\.e\.)|\bfor\s+(?:example|instance)|\bsuch\s+as)[,:]?\s*\(?\s*$", re.I)
_USERS = re.compile(r"\b(?:your\s+(?:project|repo|repository|codebase|workspace|app)|the\s+user'?s)\b", re.I)
_EXAMPLE_FENCES = frozenset({"markdown", "md", "mdx", "text", "txt", "plain", "tree", "yaml", "yml", "json", "toml"})
_FENCE_OPEN = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})\s*([^\s`]*)")
_SHELL_FENCES = frozenset({"bash", "sh", "shell", "zsh", "console", "shell-session", "powershell", "ps1", "fish"})
_SHELL_SPLIT = re.compile(r"\|\||&&|[|;]|\$\(")
_CREATE = re.compile(r"\b(?:create|creates|creating|write|writes|save|saves|add|adds)\s+(?:a\s+|an\s+|the\s+|new\s+)*$", re.I)
_DOCUMENTS = (".md", ".txt", ".json", ".yaml", ".yml", ".csv", ".html")  # read, never run as `./x`
_CD = re.compile(r"(?:^|[\s\"'(])(?:cd|pushd)\s+([^\s;&|\"')]+)")  # a command run in another folder
_SKILL_DIR = re.compile(r"skill|dirname|BASH_SOURCE|\$0", re.I)  # ... unless that folder is the skill's own


@dataclass(frozen=True)
class LineInfo:
    """One line of a Markdown file: its text and the info string of the code fence holding it (None: prose)."""

    text: str
    fence: str | None


def lines_of(text: str) -> list[LineInfo]:
    """Every line with its fence context (CommonMark fences: a longer fence holds shorter ones as text)."""
    out: list[LineInfo] = []
    open_run: str | None = None
    info = ""
    for line in text.split("\n"):
        m = _FENCE_OPEN.match(line)
        if open_run is None:
            if m:
                open_run, info = m.group(1), m.group(2).lower()
                out.append(LineInfo(line, info))  # the fence line itself is code
                continue
            out.append(LineInfo(line, None))
            continue
        out.append(LineInfo(line, info))
        stripped = line.strip()
        if stripped and set(stripped) == {open_run[0]} and len(stripped) >= len(open_run):
            open_run = None
    return out


def _inline_code(line: str, col: int) -> str | None:
    """The inline code span holding column `col`, or None."""
    for m in re.finditer(r"`([^`\n]+)`", line):
        if m.start(1) <= col < m.end(1):
            return m.group(1)
    return None


def command_words(segment: str, *, comments: bool) -> list[str]:
    """A command line's words (shell quoting; split on blanks where quoting is broken), leading
    VAR=value assignments dropped."""
    try:
        tokens = shlex.split(segment, comments=comments)
    except ValueError:
        tokens = segment.split()
    while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
        tokens.pop(0)
    return tokens


def _invoked(segment: str, path: str, *, shell: bool = False) -> bool:
    """Whether a command line runs or reads `path`: its program is an interpreter, or the path itself
    written `./path` (or bare, in a shell code block)."""
    for part in _SHELL_SPLIT.split(segment):
        moved = _CD.search(part)
        if moved and not _SKILL_DIR.search(moved.group(1)):
            return False  # `cd ~/project && ./scripts/x.sh`: a file of that folder, not of the skill
        tokens = command_words(part, comments=True)
        if not tokens:
            continue
        names = [t.removeprefix("./") for t in tokens]
        if path not in names and f"./{path}" not in tokens:
            continue
        run = tokens[0] == f"./{path}" and not path.endswith(_DOCUMENTS)  # `./references/guide.md` is not run
        if run or (shell and names[0] == path) or tokens[0].rsplit("/", 1)[-1] in INTERPRETERS:
            return True
    return False


def _sentence_before(line: str, col: int) -> str:
    """The part of the sentence before `col` on this line (after the last '. ', '? ', '! ', ';' or table
    cell border '|': "| Instructions in reference files | Injection in references/guide.md |" has no verb)."""
    head = line[:col]
    cut = max(head.rfind(". "), head.rfind("? "), head.rfind("! "), head.rfind(";"), head.rfind("|"))
    return head[cut + 1:] if cut >= 0 else head


def is_command(lines: list[LineInfo], index: int, col: int, path: str) -> bool:
    """Whether the path at (line index, column) is run or read by a command (a code block, or inline code)."""
    info = lines[index]
    if info.fence is not None:
        return info.fence not in _EXAMPLE_FENCES and _invoked(info.text, path, shell=info.fence in _SHELL_FENCES)
    code = _inline_code(info.text, col)
    return code is not None and _invoked(code, path)


def _quoted(line: str, col: int) -> bool:
    """Whether column `col` is inside a double-quoted passage of prose (quotes inside inline code not counted)."""
    prose = re.sub(r"`[^`\n]*`", lambda m: "x" * len(m.group(0)), line)
    return prose.count('"', 0, col) % 2 == 1 and '"' in prose[col:]


def is_pointer(lines: list[LineInfo], index: int, col: int, path: str) -> bool:
    """Whether the path at (line index, column) is an instruction to use that file."""
    info = lines[index]
    if info.fence is not None:
        return is_command(lines, index, col, path)
    code = _inline_code(info.text, col)
    before = _sentence_before(info.text, col)
    if code is not None and _invoked(code, path):
        # a command is an instruction unless it is the user's, or introduced as an example right before it
        # ("(e.g., `./scripts/deploy.sh`)"); "like"/"good" earlier in the sentence do not make it one
        tick = info.text.rfind("`", 0, col)
        return not _USERS.search(info.text) and not _EXAMPLE_RIGHT_BEFORE.search(info.text[:max(tick, 0)])
    # the verb must govern the path: not one inside inline code ("`cargo nextest run` in scripts/CI") or
    # closed off before it ("setup steps (clone, install, run), and available scripts/commands")
    near = re.split(r"[),]", re.sub(r"`[^`\n]*`", " ", before))[-1][-24:]
    if code is None and "." not in path.rsplit("/", 1)[-1] and not path.endswith("/") and not _VERB.search(near):
        return False  # a bare word pair in prose ("fetching assets/queue items", "curl/httpx"), not a file
    if code is None and _WORD_PAIR.fullmatch(path) and not _RUN_VERB.search(near):
        return False  # "Loads references/examples when needed": two things named in prose, read by a verb, not a file
    if _USERS.search(info.text[col:]) or _USERS.search(before):
        return False
    if _CREATE.search(re.sub(r"[`*]", "", before)):
        return False  # "Create `references/common-issues.md` with ...": a file to write, not one to read
    if _quoted(info.text, col):
        return False  # '✅ "To rotate a PDF, run `scripts/rotate_pdf.py`"': a quoted example of wording
    if _EXAMPLE.search(before):
        return False
    # a verb inside inline code is the code's, not the sentence's ("`can't open file 'scripts/x.py'`")
    prose = re.sub(r"`[^`\n]*`", " ", before)
    if _VERB.search((prose[:prose.rfind("`")] if code is not None and "`" in prose else prose)[-80:]):
        return True
    # A path alone on its line, right after "read the detailed guide before proceeding:".
    alone = re.fullmatch(r"[\s>*+\-\d.`]*" + re.escape(path) + r"[`\s.]*", info.text) is not None
    if alone:
        prev = next((ln.text for ln in reversed(lines[:index]) if ln.text.strip()), "")
        return prev.rstrip().endswith(":") and bool(_VERB.search(prev)) and not _EXAMPLE.search(prev)
    return False
