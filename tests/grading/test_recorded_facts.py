"""Every event kind and field the recorder writes has an entry in grading/readers.py saying which check reads
it, or why it is informational (issue 34 item 7). Fails when the recorder starts writing a new kind or field
without one — register it there (`grading.readers` docstring says how) — and when an entry names a fact
nothing writes any more.

What the recorder writes is enumerated from its two sources of truth: the schemas every bundle is validated
against (events, meta, calls, usage: closed shapes, recursively) and the harness's writers, read by their
source (every dict appended to an `events` list in harness/adapters and harness/runner; the keys of the meta
`extra` block in runner/execute.py and interop/harbor_import.py, which the meta schema leaves open)."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_eval.grading import readers

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
HARNESS = ROOT / "src" / "skill_eval" / "harness"
EXTRA_WRITERS = (HARNESS / "runner" / "execute.py", ROOT / "src" / "skill_eval" / "interop" / "harbor_import.py")


def _fields(schema: dict[str, Any], defs: dict[str, Any], prefix: str) -> Iterator[str]:
    """Every property path of a schema, through $ref, items, anyOf/oneOf and if/then."""
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/"):
        schema = defs[ref.rsplit("/", 1)[1]]
    for name, sub in (schema.get("properties") or {}).items():
        yield prefix + name
        yield from _fields(sub, defs, prefix + name + ".")
    if isinstance(schema.get("items"), dict):
        yield from _fields(schema["items"], defs, prefix)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            yield from _fields(sub.get("then", sub), defs, prefix)


def schema_facts(name: str, tag: str) -> set[str]:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return {f"{tag}:{f}" for f in _fields(schema, schema.get("$defs") or {}, "")}


def event_schema_facts() -> set[str]:
    schema = json.loads((SCHEMAS / "event.schema.json").read_text())
    out = set()
    for kind in schema["properties"]["type"]["enum"]:
        out.add(f"event:{kind}")
    for branch in schema["allOf"]:
        kind = branch["if"]["properties"]["type"]["const"]
        out |= {f"event:{kind}.{f}" for f in branch["then"]["properties"] if f != "type"}
    return out


def _str_keys(node: ast.Dict) -> Iterator[str]:
    """A dict literal's string keys, through `**({...} if c else {})` expansions."""
    for key, value in zip(node.keys, node.values, strict=True):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            yield key.value
        elif key is None:
            for sub in _expanded(value):
                yield from _str_keys(sub)


def _expanded(node: ast.AST) -> Iterator[ast.Dict]:
    if isinstance(node, ast.Dict):
        yield node
    elif isinstance(node, ast.IfExp):
        yield from _expanded(node.body)
        yield from _expanded(node.orelse)


def written_events() -> set[str]:
    """Every event dict the harness appends to an `events` list (or builds as `event = {...}`)."""
    out = set()
    for path in [*HARNESS.glob("adapters/*.py"), *HARNESS.glob("runner/*.py")]:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            literal = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" \
                    and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "events" and node.args:
                literal = node.args[0]
            elif isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["event"]:
                literal = node.value
            if not isinstance(literal, ast.Dict):
                continue
            fields = dict(zip([getattr(k, "value", None) for k in literal.keys], literal.values, strict=True))
            kind = fields.get("type")
            if isinstance(kind, ast.Constant) and isinstance(kind.value, str):
                out.add(f"event:{kind.value}")
                out |= {f"event:{kind.value}.{k}" for k in _str_keys(literal) if k != "type"}
    return out


def written_extra() -> set[str]:
    """The keys of every meta `extra` block the runner and the Harbor import write (top level of extra)."""
    out = set()
    for path in EXTRA_WRITERS:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "extra" and isinstance(value, ast.Dict):
                    out |= {f"meta:extra.{k}" for k in _str_keys(value)}
    return out


def recorded() -> set[str]:
    return (event_schema_facts() | written_events() | schema_facts("meta", "meta") | written_extra()
            | schema_facts("call", "call") | schema_facts("usage", "usage") | schema_facts("facts", "facts"))


def test_every_recorded_fact_has_a_reader_entry_and_every_entry_a_writer():
    facts = recorded()
    assert len(facts) > 100  # the enumeration itself works (events, meta, extra, calls, usage)
    unregistered = sorted(facts - set(readers.FACTS))
    assert not unregistered, ("the recorder writes facts grading/readers.py does not list: add an entry naming the "
                              f"check that reads each (or info(why) it is informational): {unregistered}")
    stale = sorted(set(readers.FACTS) - facts)
    assert not stale, f"grading/readers.py lists facts nothing writes any more (remove them): {stale}"


def test_the_harness_writes_only_event_kinds_the_schema_knows():
    """A kind written by the harness but missing from the schema would fail every bundle's validation;
    one in the schema but never written is dead: both sources must agree."""
    kinds = {f for f in written_events() if "." not in f}
    assert kinds == {f for f in event_schema_facts() if "." not in f}


def test_every_entry_names_known_checks_and_says_why():
    for name, reader in readers.FACTS.items():
        assert set(reader.checks) <= readers.CHECKS, (name, reader.checks)
        assert len(reader.why) > 15, name


@pytest.mark.parametrize("fact", ["event:run_error", "event:skill_activated", "event:skill_file_read",
                                  "meta:extra.installed_skills", "call:argv", "meta:status"])
def test_the_facts_issue_34_found_unread_are_read(fact):
    assert not readers.FACTS[fact].informational


def test_a_new_event_kind_or_field_without_an_entry_fails(monkeypatch):
    """The guard itself: a harness that starts writing `policy_violation` (or a new field) is caught."""
    monkeypatch.setattr(readers, "FACTS", {k: v for k, v in readers.FACTS.items() if k != "event:run_error.reason"})
    with pytest.raises(AssertionError, match="event:run_error.reason"):
        test_every_recorded_fact_has_a_reader_entry_and_every_entry_a_writer()
