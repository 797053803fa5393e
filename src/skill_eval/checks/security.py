"""L0 security rules, kept as data: what a skill's files must not tell or make an agent do.

The rules live in `security_rules.yaml` beside this module (schema: schemas/security_rules.schema.json),
read by one strict reader (`load_rules`): each rule has an id, a severity, a message, a fix, a why (its
`explain` page), its regular expressions and examples it must flag and must not flag (tests run them).
Every text file of every skill (and every shared fragment a skill cites) is scanned; a match is a
RuleFinding with file, line and column. Cheap by design: a rule's `needles` are literals every match
contains (a rule must keep that true: a needle-less match goes unseen), searched in the file's bytes, and
only the lines holding one are decoded and matched; a rule without needles runs on text that is not all
ASCII. Data files (.xsd, .csv ...) are read only by `files: all` rules (the hidden characters). What the
needles cannot see (a homoglyph for a Latin letter, a command split across lines) is out of reach, as it
is for every pattern scanner. A rule may name `unless` expressions: a match whose line
also matches one is not a finding (a near miss the rule exists to let through). A rule with
`quoted: warning` reports a match written inside quotes or backticks (a phrase mentioned, e.g. in a
guide to prompt injection) as a warning instead of an error: still shown, never silent, since an agent
reads quoted text too.

Error-level findings fail `check-skills` (and so `pr`) and the release's `security` gate.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from skill_eval.checks.rules import RuleFinding
from skill_eval.content.config import Config
from skill_eval.content.skills import Skill
from skill_eval.core import formats, schemas, strict
from skill_eval.core.errors import InputError

RULES_FILE = Path(__file__).with_name("security_rules.yaml")
MARKDOWN = (".md", ".mdx", ".markdown", ".txt", ".rst")
# data a script reads, not text an agent is told or a command it runs: only rules with `files: all` (the
# hidden-character rules) look at these (Office schemas alone are ~5 MB in anthropics/skills)
DATA = (".xsd", ".xml", ".csv", ".tsv", ".svg", ".map", ".min.js", ".min.css", ".lock", ".ttf", ".otf")
_SUBJECT_MAX = 40
_QUOTES = (('"', '"'), ("'", "'"), ("`", "`"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))


@dataclass(frozen=True)
class Rule:
    """One security rule, compiled."""

    id: str
    severity: str  # error | warning
    files: str  # all (every text file) | text (all but data files) | markdown
    message: str
    fix: str
    why: str
    pattern: re.Pattern[str]
    unless: re.Pattern[str] | None
    quoted: str  # severity of a quoted match: "" (same as the rule)| warning
    needles: tuple[bytes, ...]  # lowercase literals (UTF-8): only lines holding one can match (empty: any non-ASCII text)
    ascii_needles: tuple[bytes, ...]  # those an all-ASCII text can hold
    flag: tuple[str, ...]
    passes: tuple[str, ...]


def _compile(expressions: Iterable[str], ignore_case: bool, source: Path, field: str) -> re.Pattern[str]:
    items = list(expressions)
    text = items[0] if len(items) == 1 else "|".join(f"(?:{e})" for e in items)
    try:
        return re.compile(text, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
    except re.error as exc:
        raise InputError(f"invalid regular expression: {exc}", source=source, field=field,
                         fix="fix the expression (Python `re` syntax)") from None


@functools.cache
def load_rules(path: Path = RULES_FILE) -> tuple[Rule, ...]:
    """The rules of a rules file, validated (version, schema, unique ids, regexes) and compiled."""
    data = formats.upgrade(strict.load_yaml(path), "security_rules", path)
    schemas.validate(data, "security_rules", path)
    out: list[Rule] = []
    seen: set[str] = set()
    for i, r in enumerate(data["rules"]):
        if r["id"] in seen:
            raise InputError(f"rule id {r['id']!r} is used twice", source=path, field=f"rules.{i}.id",
                             fix="give every rule its own id")
        seen.add(r["id"])
        case = bool(r.get("ignore_case", False))
        needles = tuple(n.lower().encode() for n in r.get("needles", ()))
        out.append(Rule(
            r["id"], r["severity"], r.get("files", "text"), r["message"], r["fix"], r["why"],
            _compile(r["patterns"], case, path, f"rules.{i}.patterns"),
            _compile(r["unless"], case, path, f"rules.{i}.unless") if r.get("unless") else None,
            r.get("quoted", ""), needles, tuple(n for n in needles if n.isascii()),
            tuple(r["examples"]["flag"]), tuple(r["examples"]["pass"])))
    return tuple(out)


def is_security(rule: str) -> bool:
    """Whether a finding's rule is one of the security rules (their ids start with `security-`, as the
    schema requires)."""
    return rule.startswith("security-")


def _quoted(line: str, start: int, end: int) -> bool:
    """Whether line[start:end] sits inside a pair of quotes or backticks on its line."""
    for left, right in _QUOTES:
        before = line.rfind(left, 0, start)
        if before < 0:
            continue
        if left == right and line.count(left, 0, before) % 2:
            continue  # that quote closes an earlier pair
        if line.find(right, end) >= 0:
            return True
    return False


def _needle_lines(low: bytes, needle: bytes) -> set[int]:
    """The start offsets of the lines of `low` that hold the needle."""
    found: set[int] = set()
    pos = low.find(needle)
    while pos >= 0:
        found.add(low.rfind(b"\n", 0, pos) + 1)
        nl = low.find(b"\n", pos)
        pos = low.find(needle, nl + 1) if nl >= 0 else -1
    return found


def scan_bytes(data: bytes, where: str, rules: tuple[Rule, ...], markdown: bool, is_data: bool = False) -> list[RuleFinding]:
    """Every rule match in one file's UTF-8 bytes (one finding per rule and line).

    Cheap by construction: the needles are searched in the bytes, lowered once (ASCII only, so offsets
    stay put; bytes.find is the fast search), and a rule runs only on the lines holding one of its
    needles, each decoded on its own; a rule without needles runs on the decoded text, and only when it
    is not all ASCII. Line numbers are counted only for a finding."""
    out: list[RuleFinding] = []
    low: bytes | None = None
    lines: dict[bytes, set[int]] = {}  # needle -> its lines (a needle several rules share is searched once)
    ascii = data.isascii()
    text: str | None = None
    for rule in rules:
        if (rule.files == "markdown" and not markdown) or (is_data and rule.files != "all"):
            continue
        if rule.needles:
            needles = rule.ascii_needles if ascii else rule.needles
            if not needles:
                continue  # what this rule looks for cannot be in ASCII text
            low = data.lower() if low is None else low
            starts: set[int] = set()
            for needle in needles:
                if needle not in lines:
                    lines[needle] = _needle_lines(low, needle)
                starts |= lines[needle]
            for start in sorted(starts):
                end = data.find(b"\n", start)
                line = data[start:len(data) if end < 0 else end].decode("utf-8", errors="replace")
                found = _line_finding(rule, where, line)
                if found is not None:
                    out.append(found.at(data.count(b"\n", 0, start) + 1))
        elif not ascii:
            text = data.decode("utf-8", errors="replace") if text is None else text
            for start in sorted({text.rfind("\n", 0, m.start()) + 1 for m in rule.pattern.finditer(text)}):
                end = text.find("\n", start)
                found = _line_finding(rule, where, text[start:len(text) if end < 0 else end])
                if found is not None:
                    out.append(found.at(text.count("\n", 0, start) + 1))
    return out


def _line_finding(rule: Rule, where: str, line: str) -> RuleFinding | None:
    """The rule's finding on one line (its first match; line number 0 until `at`), or None."""
    m = rule.pattern.search(line)
    if m is None or (rule.unless is not None and rule.unless.search(line)):
        return None
    col = m.start()
    level, message = rule.severity, rule.message
    if rule.quoted and _quoted(line, col, m.end()):
        level, message = rule.quoted, message + " (quoted: if it is an example, suppress it with the reason)"
    return RuleFinding(level, where, message, rule.id, _subject(m.group(0)), 0, col + 1, rule.fix)


def _subject(matched: str) -> str:
    """A stable, printable name of what matched (the finding id's last part)."""
    visible = "".join(c if c.isprintable() and not c.isspace() else (" " if c.isspace() else f"U+{ord(c):04X}")
                      for c in matched)
    return " ".join(visible.split())[:_SUBJECT_MAX]


def is_text(data: bytes) -> bool:
    return b"\0" not in data[:8192]


def scan_files(files: Iterable[tuple[str, bytes]], rules: tuple[Rule, ...] | None = None) -> list[RuleFinding]:
    """Scan (repository-relative path, bytes) pairs; binary files are skipped."""
    rules = rules if rules is not None else load_rules()
    out: list[RuleFinding] = []
    for where, data in files:
        if not is_text(data):
            continue
        data = data.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n")  # a BOM is the encoding check's
        lower = where.lower()
        out += scan_bytes(data, where, rules, lower.endswith(MARKDOWN), lower.endswith(DATA))
    return out


def check(cfg: Config, skills: Mapping[str, Skill]) -> list[RuleFinding]:
    """Every security finding in the skills' own files and in the shared fragments they cite (each file once)."""
    files: dict[str, bytes] = {}
    for skill in skills.values():
        for entry in skill.files:
            files[f"{skill.dir}/{entry.path}"] = entry.data
        for frag in skill.cites:
            path = cfg.root / frag
            if frag not in files and path.is_file():
                files[frag] = strict.read_bytes(path)
    return scan_files(sorted(files.items()))
