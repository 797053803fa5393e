"""Every `skill-eval ...` command line the project documents or runs parses with today's CLI.

The lines come from README.md, docs/*.md, the Makefile, the init templates, the pre-commit hooks, the
workflows (.github/workflows/*.yml) and the noxfile. Each is parsed as `skill-eval` would parse it
(cli.build_parser, the default verb included): a renamed flag, a flag moved to another verb or a verb
that lost its arguments fails here, naming the file and line. Nothing is run.

Placeholders a reader replaces are given a value of the right shape (PLACEHOLDERS, VARIABLES);
`[--opt X]` is read as given, a `...` standing for "more arguments" is dropped.
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from pathlib import Path

import pytest

from skill_eval import cli
from skill_eval.core.errors import SkillEvalError

ROOT = Path(__file__).resolve().parents[2]
# a placeholder word -> a value of the shape its flag takes (anything else is a fine string value)
PLACEHOLDERS = {"N": "2", "I/N": "1/2", "T": "0.7", "S": "1"}
# shell and make variables in the lines -> what they hold when the line runs
VARIABLES = {"SKILL_EVAL_SHARD": "1/2", "SHARD": "1/2", "SUITE": "risk", "SHARDS": "2", "RUNNER_TEMP": "/tmp/runner",
             "EDITOR": "vi"}
PREFIXES = re.compile(r"\$\(CURDIR\)/\$\(VENV\)/bin/skill-eval|\$\(VENV\)/bin/skill-eval|\$\(SKILL_EVAL\)")
# where a shell command starts: a line's start (after a prompt), after &&, ||, |, ; or (, or
# as a YAML `entry:` (pre-commit) or `run:` (workflow step) value
START = re.compile(r"(?:^\s*(?:\$\s+)?|(?:&&|\|\||[|;(])\s*|\b(?:entry|run):\s*)skill-eval\s+(?=[a-z-])")
SPAN = re.compile(r"`skill-eval\s+([a-z][^`]*)`")  # a code span in prose or in a comment
PROSE_KEYS = re.compile(r"^\s*-?\s*(?:name|description):")  # YAML labels, not commands
END = re.compile(r"\s(?:&&|\|\||\||>|2>)\s|;|`")


def _make_expressions(text: str) -> str:
    """Each `$(...)` of make (balanced) becomes MAKE_EXPR."""
    out, i = [], 0
    while i < len(text):
        j = text.find("$(", i)
        if j < 0:
            out.append(text[i:])
            break
        start = j - 1 if j > 0 and text[j - 1] == "$" else j
        out.append(text[i:start])
        depth, k = 0, j + 1
        while k < len(text):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            if depth == 0:
                break
            k += 1
        out.append("MAKE_EXPR")
        i = k + 1
    return "".join(out)


def _shell_line(segment: str) -> list[str]:
    segment = re.sub(r'"\$\{args\[@\]\}"', " ", segment)  # the workflow's array of already-checked flags
    segment = re.sub(r"<[^<>]*>", "PLACEHOLDER", segment)
    for name, value in VARIABLES.items():
        segment = re.sub(r"\$\{?" + name + r"\}?(?!\w)", value, segment)
    assert "$" not in segment.replace("MAKE_EXPR", ""), f"unknown variable in {segment!r}: add it to VARIABLES"
    tokens = shlex.split(segment, comments=True)
    out: list[str] = []
    for t in tokens:
        t = t.strip("[]")
        if t in ("...", ""):
            continue
        if t == "MAKE_EXPR" and not (out and out[-1].startswith("--")):
            continue  # a make expression that adds optional arguments (EVAL_ARGS)
        out.append(PLACEHOLDERS.get(t.removesuffix("..."), t.removesuffix("...")))
    return out


def _lines_of_text(path: Path) -> list[tuple[str, list[str]]]:
    found = []
    text = PREFIXES.sub("skill-eval", path.read_text(encoding="utf-8"))
    markdown = path.suffix == ".md"
    fence = False
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line, where = lines[i], f"{path.relative_to(ROOT)}:{i + 1}"
        while line.endswith("\\") and i + 1 < len(lines):  # a continued shell line
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        i += 1
        if markdown and line.lstrip().startswith("```"):
            fence = not fence
            continue
        if markdown and not fence:  # prose: only `skill-eval ...` code spans are command lines
            found += [(f"{where} (span)", _shell_line(m.group(1))) for m in SPAN.finditer(line)]
            continue
        if not markdown:  # a comment, a YAML label and a code span in a message are prose
            code, _, comment = line.partition("#") if not line.lstrip().startswith("#") else ("", "", line)
            found += [(f"{where} (span)", _shell_line(m.group(1))) for m in SPAN.finditer(comment + code)]
            line = "" if PROSE_KEYS.match(code) else SPAN.sub("", code)
        line = _make_expressions(line) if path.name == "Makefile" or path.suffix == ".mk" else line
        for m in START.finditer(line):
            rest = line[m.end():]
            cut = END.search(rest)
            found.append((where, _shell_line(rest[:cut.start()] if cut else rest)))
    return found


# the noxfile's `*name` arguments -> what they hold when given (`resume` is run only with a worksheet)
STARRED = {"resume": ["--worksheet", "W"]}


def _lines_of_noxfile(path: Path) -> list[tuple[str, list[str]]]:
    """`session.run("skill-eval", ...)`: a constant as it is, any other value as VALUE, `*name` as STARRED says."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value == "skill-eval":
            argv: list[str] = []
            for a in node.args[1:]:
                if isinstance(a, ast.Starred):
                    argv += STARRED.get(getattr(a.value, "id", ""), [])
                else:
                    argv.append(a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else "VALUE")
            found.append((f"{path.relative_to(ROOT)}:{node.lineno}", argv))
    return found


def documented() -> list[tuple[str, list[str]]]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "Makefile",
             *sorted((ROOT / "src/skill_eval/templates/init").glob("*.mk")), ROOT / ".pre-commit-hooks.yaml",
             *sorted((ROOT / "src/skill_eval/templates/init").glob("*.yaml")),
             *sorted((ROOT / ".github/workflows").glob("*.yml"))]
    return [x for f in files for x in _lines_of_text(f)] + _lines_of_noxfile(ROOT / "noxfile.py")


LINES = documented()


def test_the_documented_lines_are_found():
    """The extraction itself: it finds the lines it exists for (a broken pattern finds none)."""
    seen = {" ".join(argv[:2]) for _, argv in LINES}
    assert len(LINES) > 100 and sum(not w.endswith("(span)") for w, _ in LINES) > 50
    assert {"evidence compact", "evidence merge", "release stage", "release resume", "release verify",
            "baseline update", "import harbor", "export harbor", "run --suite"} <= seen
    where = {w.split(":")[0] for w, _ in LINES}
    assert {"README.md", "Makefile", "noxfile.py", ".github/workflows/record-evidence.yml",
            "src/skill_eval/templates/init/skill-eval.mk", ".pre-commit-hooks.yaml"} <= where


def _relaxed(parser: argparse.ArgumentParser) -> None:
    """No argument required (a verb, a positional, a required option), everything else as strict."""
    parser.has_verbs = False  # type: ignore[attr-defined]  # (_options.missing_verb: a verb may be left out)
    for action in parser._actions:
        action.required = False
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _relaxed(sub)


@pytest.mark.parametrize(("where", "argv"), LINES, ids=[f"{w} {' '.join(a)[:60]}" for w, a in LINES])
def test_documented_command_line_parses(where, argv):
    """A command line in a code block, a recipe or a workflow parses as it is. A `skill-eval ...`
    code span in prose may name a command or a verb without its required arguments (`skill-eval
    grade`, `skill-eval evidence merge`), but every command, verb, flag and value it gives must be
    right."""
    assert argv and argv[0] in cli.COMMANDS, f"{where}: `skill-eval {' '.join(argv)}` names no command"
    parser = cli.build_parser(argv[0])
    if where.endswith("(span)"):
        _relaxed(parser)
    try:
        args, extras = parser.parse_known_args(argv)
    except SkillEvalError as exc:
        pytest.fail(f"{where}: `skill-eval {' '.join(argv)}` does not parse: {exc}")
    assert not extras, f"{where}: `skill-eval {' '.join(argv)}`: unrecognized arguments {extras}"
    assert callable(args._run)
