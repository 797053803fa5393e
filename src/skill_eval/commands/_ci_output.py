"""The findings a command prints, in the form asked for: text (plus GitHub annotations when running under
GitHub Actions), JSON, SARIF 2.1.0 or JUnit XML (core.ci_formats). A command that offers SARIF and JUnit
declares `FORMATS = ci_formats.FORMATS` (cli then offers them on --format) and ends with `emit_findings`.

A finding is read from its JSON form (`as_dict()`: level, where, line, message, rule), the same for L0
and trigger findings, so `pr` converts the JSON its steps print without knowing each check's types.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from skill_eval.core.ci_formats import LEVELS, CiCheck, CiResult, github_annotations, to_junit, to_sarif
from skill_eval.core.output import emit


def result_of(finding: Mapping[str, Any]) -> CiResult:
    """A CiResult from one finding's JSON form (L0, triggers); an unknown level reads as an error."""
    level = finding.get("level")
    line = finding.get("line")
    column = finding.get("column")
    return CiResult(
        rule=str(finding.get("rule") or "skill-eval"),
        level=level if level in LEVELS else "error",
        message=str(finding.get("message", "")),
        path=str(finding.get("where", "")),
        line=line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else 0,
        fix=str(finding.get("fix", "")),
        column=column if isinstance(column, int) and not isinstance(column, bool) and column > 0 else 0,
    )


def results_of(payload: Mapping[str, Any] | None) -> list[CiResult]:
    """Every finding a check's JSON payload lists: `errors` and `warnings` (check-skills), `findings`
    (check-triggers); anything else is not a finding."""
    if not isinstance(payload, Mapping):
        return []
    out: list[CiResult] = []
    for key in ("errors", "warnings", "findings"):
        items = payload.get(key)
        if isinstance(items, list):
            out.extend(result_of(f) for f in items if isinstance(f, Mapping))
    return out


def ci_format(args: Any) -> str | None:
    """'sarif' or 'junit' when one was asked for, else None (text or JSON: the command's own output)."""
    fmt = getattr(args, "output_format", None)
    return fmt if fmt in ("sarif", "junit") else None


def emit_findings(args: Any, tool: str, results: Sequence[CiResult], text_lines: Iterable[str],
                  payload: dict[str, Any], checks: Iterable[CiCheck] = ()) -> None:
    """Print in the format asked for. Text under GitHub Actions (GITHUB_ACTIONS=true) is followed by one
    annotation per error and warning and a summary line, so the findings show on the pull request."""
    fmt = ci_format(args)
    if fmt == "sarif":
        from skill_eval import __version__
        from skill_eval.commands.explain import rule_pages

        log = to_sarif(results, tool=tool, version=__version__)
        pages = rule_pages()  # only a rule `explain` has a page for gets a pointer to it
        for rule in log["runs"][0]["tool"]["driver"]["rules"]:
            if rule["id"] in pages:
                rule["help"] = {"text": f"run `skill-eval explain {rule['id']}`"}
        sys.stdout.write(json.dumps(log, indent=2, sort_keys=True) + "\n")
    elif fmt == "junit":
        sys.stdout.write(to_junit(results, suite=tool, checks=checks))
    else:
        emit(args, text_lines, payload)
        if not getattr(args, "json", False) and os.environ.get("GITHUB_ACTIONS") == "true":
            sys.stdout.write("\n".join(github_annotations(results, tool=tool)) + "\n")
