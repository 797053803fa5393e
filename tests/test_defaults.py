"""Defaults come from one source. Where a value must still be written twice (a schema documents
it; a module is kept import-free on purpose), this test holds the copies equal."""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from skill_eval.content import config
from skill_eval.core import strict
from skill_eval.grading import bundle
from skill_eval.harness.adapters.base import LaunchContext
from skill_eval.harness.runner.execute import RunOptions
from skill_eval.reporting import lift
from skill_eval.reporting.release import report, stage

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
# "...; default: config.K_DEFAULT (3)": the constant that holds the default, and its value as documented
DOCUMENTED = re.compile(r"default: (?P<module>[a-z_.]+)\.(?P<name>[A-Z][A-Z0-9_]*) \((?P<value>[^)]*)\)")


def _descriptions(doc: Any, where: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(doc, dict):
        if isinstance(doc.get("description"), str):
            out.append((where, doc["description"]))
        for key, value in doc.items():
            out += _descriptions(value, f"{where}/{key}")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _descriptions(value, f"{where}/{i}")
    return out


def _documented_value(text: str) -> Any:
    """The value as a description writes it: JSON (3, true), `N MiB`, or a bare word."""
    if m := re.fullmatch(r"(\d+) MiB", text):
        return int(m[1]) * 1024 * 1024
    try:
        return json.loads(text)
    except ValueError:
        return text


def _documented() -> list[tuple[str, str, re.Match[str]]]:
    found = []
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        for where, text in _descriptions(json.loads(path.read_text(encoding="utf-8"))):
            found += [(path.name, where, m) for m in DOCUMENTED.finditer(text)]
    return found


def test_schema_documented_defaults_name_the_constant_and_its_value() -> None:
    found = _documented()
    assert {m["name"] for _, _, m in found} >= {"K_DEFAULT", "MAX_FILE_BYTES", "BODY_WARN_LINES_DEFAULT",
                                                 "TOOL_HARNESS_DEFAULT", "REAL_ENV_DEFAULT", "RUNNABLE_DEFAULT"}
    for schema, where, m in found:
        module = importlib.import_module(f"skill_eval.{m['module']}")
        assert hasattr(module, m["name"]), f"{schema}{where}: skill_eval.{m['module']} has no {m['name']}"
        actual = getattr(module, m["name"])
        assert _documented_value(m["value"]) == actual, f"{schema}{where}: documents {m['value']}, the code says {actual!r}"


def test_schemas_never_restate_a_default_as_a_value() -> None:
    """The JSON Schema `default` keyword would be a second source the code never reads."""
    names_maps = ("properties", "patternProperties", "$defs", "dependentSchemas")

    def keys(doc: Any) -> set[str]:
        """The keywords used anywhere in a schema (property names are data, not keywords)."""
        if isinstance(doc, list):
            return {k for v in doc for k in keys(v)}
        if not isinstance(doc, dict):
            return set()
        out = set(doc)
        for key, value in doc.items():
            children = value.values() if key in names_maps and isinstance(value, dict) else [value]
            out |= {k for child in children for k in keys(child)}
        return out

    for path in sorted(SCHEMAS.glob("*.schema.json")):
        assert "default" not in keys(json.loads(path.read_text(encoding="utf-8"))), path.name


def test_the_documented_value_check_rejects_a_drift() -> None:
    assert _documented_value("32 MiB") == strict.MAX_FILE_BYTES
    assert _documented_value("4") != config.K_DEFAULT


def test_file_size_cap_has_one_source() -> None:
    assert config.MAX_BUNDLE_FILE_BYTES_DEFAULT is strict.MAX_FILE_BYTES
    assert bundle.DEFAULT_MAX_BYTES is strict.MAX_FILE_BYTES


def _defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls)}


def test_stats_settings_equal_the_config_table() -> None:
    """skill_eval.reporting.lift imports nothing (the statistics stay a pure leaf), so [stats]'s defaults
    are written in config.Stats and lift.Settings: they must stay the same."""
    assert _defaults(config.Stats) == _defaults(lift.Settings)


def test_run_and_launch_budgets_default_to_the_agent_table() -> None:
    """The runner takes [agent]'s defaults by reference; the adapters (config-free: the built-in
    loop runs inside the sandbox) restate max_turns, held equal here."""
    agent = config.AgentDefaults()
    assert RunOptions(adapter="scripted").max_turns == agent.max_turns
    assert RunOptions(adapter="scripted").timeout == agent.timeout_seconds
    assert _defaults(LaunchContext)["max_turns"] == agent.max_turns


@pytest.mark.parametrize("schema", ["config"])
def test_k_bounds_agree_with_the_schema(schema: str) -> None:
    k = json.loads((SCHEMAS / f"{schema}.schema.json").read_text(encoding="utf-8"))["properties"]["evals"]["properties"]["k"]
    assert k["minimum"] <= config.K_DEFAULT <= k["maximum"] == config.K_MAX


def test_release_report_cap_is_the_stage_cap() -> None:
    assert report.MAX_REPORT_BYTES == stage.MAX_STAGE_BYTES
