"""fastjsonschema (the yes/no hot path) and jsonschema (the authority) answer alike.

Seeds are real valid documents from this repository (every bundle file, content file and
model script), then Hypothesis mutates them: drop/add keys, retype values, replace any
node with random JSON. For every schema, fastjsonschema's check of `schemas.fast_form` must
accept exactly what `Draft202012Validator.is_valid` accepts: accepting more would let an
invalid file through unworded, accepting less only costs a jsonschema call, but either is a
disagreement this test names. The schemas stay within what both validators read alike
(draft-07 keywords: test_schemas_use_only_keywords_both_read); `fast_form` closes the two gaps
between the drafts that would let the hot path accept more (1 == true; a `$ref`'s siblings).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skill_eval.core import schemas

ROOT = Path(__file__).resolve().parents[2]
EVALS = ROOT / "agent-evals" / "skills"


def _jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _seeds() -> dict[str, list]:
    seeds: dict[str, list] = {n.name.split(".")[0]: [] for n in (ROOT / "schemas").glob("*.schema.json")}
    # evidence, golden and the local-model calibration (real model output: the least regular metas)
    for meta in (p for d in ("evidence", "golden", "calibration") for p in sorted((EVALS / d).rglob("meta.json"))[:20]):
        b = meta.parent
        seeds["meta"].append(json.loads(meta.read_text()))
        for name, schema in (("claim.json", "claim_file"), ("usage.json", "usage"), ("facts.json", "facts"),
                             ("judgments.json", "judgments")):
            if (b / name).is_file():
                seeds[schema].append(json.loads((b / name).read_text()))
        for name, schema in (("calls.jsonl", "call"), ("events.jsonl", "event")):
            if (b / name).is_file():
                seeds[schema] += _jsonl(b / name)[:6]
    seeds["ground_truth"].append(json.loads((EVALS / "ground_truth.json").read_text()))
    for name, schema in (("scenarios.yaml", "scenarios"), ("trigger_corpus.yaml", "trigger_corpus"), ("rubric.yaml", "rubric"),
                         ("evidence-pending.yaml", "evidence_pending")):
        if (EVALS / name).is_file():
            seeds[schema].append(yaml.safe_load((EVALS / name).read_text()))
    seeds["pack"].append(json.loads((EVALS / "skill-eval-pack.json").read_text()))
    seeds["cli_surface"].append(json.loads((EVALS / "surface" / "abicheck-cli.json").read_text()))
    for p in sorted((EVALS / "model-scripts").rglob("*.yaml"))[:5]:
        seeds["model_script"].append(yaml.safe_load(p.read_text()))
    for p in sorted((EVALS / "baselines").glob("*.json")):
        seeds["baseline"].append(json.loads(p.read_text()))
    for p in sorted((EVALS / "golden").glob("*/manifest.yaml"))[:5]:
        seeds["golden_manifest"].append(yaml.safe_load(p.read_text()))
    return seeds


SEEDS = _seeds()
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "a", "x" * 64, "0" * 64, "1", "../x", "/abs", "compare", "BREAKING", "skill:a-b", "surface",
                       "..\n", "a/..\n", "x\n", "seed.json\n", "0" * 64 + "\n", "complete\n",
                       "behavioral", "trigger", "complete", "-o", "json", "file", "captured/1.out"]),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(["a", "kind", "status", "path", "k", "x"]), kids, max_size=4),
    max_leaves=12,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@st.composite
def mutated(draw, name: str):
    seeds = SEEDS[name]
    doc = json.loads(json.dumps(draw(st.sampled_from(seeds)))) if seeds else draw(JSON)
    for _ in range(draw(st.integers(0, 3))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "delete", "add", "retype"]))
        if not path:
            if op == "replace":
                doc = draw(JSON)
            continue
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if op == "delete":
            del parent[last]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "status", "inputs", "zz"]))] = draw(JSON)
        elif op == "retype":
            old = parent[last]
            parent[last] = {bool: 1, int: float(old) if isinstance(old, int) else True, str: 7}.get(type(old), str(old))
        else:
            parent[last] = draw(JSON)
    return doc


NAMES = sorted(SEEDS)
# What fastjsonschema (draft-07) and jsonschema (2020-12) read alike; a schema using anything else
# (prefixItems, unevaluated*, dependent*, $dynamicRef, format, ...) must first be shown to agree here.
KEYWORDS = {
    "$schema", "$id", "$ref", "$defs", "$comment", "title", "description", "examples", "default",
    "type", "enum", "const", "properties", "patternProperties", "additionalProperties", "required",
    "propertyNames", "minProperties", "maxProperties", "items", "minItems", "maxItems", "uniqueItems",
    "contains", "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
}
_MAPS = ("properties", "patternProperties", "$defs")
_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "propertyNames", "contains")
_MANY = ("allOf", "anyOf", "oneOf")


def _subschemas(schema, where="#"):
    """Every (location, subschema) of a schema, by keyword (a property named like a keyword is data)."""
    yield where, schema
    if not isinstance(schema, dict):
        return
    for key in _ONE:
        if isinstance(schema.get(key), dict):
            yield from _subschemas(schema[key], f"{where}/{key}")
    for key in _MAPS:
        for name, sub in (schema.get(key) or {}).items():
            yield from _subschemas(sub, f"{where}/{key}/{name}")
    for key in _MANY:
        for i, sub in enumerate(schema.get(key) or ()):
            yield from _subschemas(sub, f"{where}/{key}/{i}")


@pytest.mark.parametrize("name", NAMES)
def test_schemas_use_only_keywords_both_read(name):
    for where, sub in _subschemas(schemas.load_schema(name)):
        if not isinstance(sub, dict):
            continue
        assert set(sub) <= KEYWORDS, (name, where, set(sub) - KEYWORDS)
        assert not isinstance(sub.get("items"), list), (name, where)  # tuple form: different meaning per draft


@pytest.mark.parametrize("name", NAMES)
def test_every_schema_compiles(name):
    assert schemas._fast(name) is not None


@pytest.mark.parametrize("name", NAMES)
def test_seeds_are_valid_fast(name):
    from skill_eval.core import formats

    for doc in SEEDS[name]:
        if name in formats.FORMATS and isinstance(doc, dict) and "schema_version" in doc:
            doc = formats.upgrade(doc, name, name)  # older committed records are migrated on read (golden judgments v1)
        assert schemas.is_valid_fast(doc, name), name


def _fast_accepts(name, doc) -> bool:
    before = json.dumps(doc, sort_keys=True)
    answer = schemas.is_valid_fast(doc, name)
    assert json.dumps(doc, sort_keys=True) == before  # the check never fills in defaults or edits
    return answer


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fast_agrees_with_jsonschema(name, data):
    doc = data.draw(mutated(name))
    reference = jsonschema.Draft202012Validator(schemas.load_schema(name)).is_valid(doc)
    assert _fast_accepts(name, doc) == reference, (name, doc)


@settings(max_examples=400, deadline=None)
@given(schema_value=JSON, doc=JSON)
def test_const_enum_unique_semantics(schema_value, doc):
    """The keywords where Python equality and JSON Schema's differ (1 == True == 1.0; [1] == [True])."""
    import fastjsonschema

    for schema in ({"const": schema_value}, {"enum": [schema_value, "a"]}, {"type": "array", "uniqueItems": True},
                   {"type": ["integer", "null"], "minimum": 1}, {"not": {"type": "number"}},
                   {"type": "object", "properties": {"const": {"const": schema_value}}, "required": ["const"]}):
        check = fastjsonschema.compile(schemas.fast_form(schema), use_default=False, use_formats=False,
                                       detailed_exceptions=False)
        try:
            check(doc)
            fast = True
        except fastjsonschema.JsonSchemaValueException:
            fast = False
        reference = jsonschema.Draft202012Validator(schema).is_valid(doc)
        assert not fast or reference, (schema, doc)  # never a false accept
        if not isinstance(schema_value, dict | list):  # scalars: decided alike (containers go to jsonschema)
            assert fast == reference, (schema, doc)


@pytest.mark.parametrize(("value", "doc", "valid"), [
    (1, True, False), (True, 1, False), (1, 1.0, True), (0, False, False), ([1], [True], False), ({"a": 1}, {"a": True}, False),
])
def test_true_is_not_one(value, doc, valid):
    """The one place Python's equality would let the hot path accept more than jsonschema: fixed by fast_form."""
    for schema in ({"const": value}, {"enum": [value]}):
        assert jsonschema.Draft202012Validator(schema).is_valid(doc) is valid
        import fastjsonschema

        check = fastjsonschema.compile(schemas.fast_form(schema), use_default=False, detailed_exceptions=False)
        try:
            check(doc)
            fast = True
        except fastjsonschema.JsonSchemaValueException:
            fast = False
        if not valid:
            assert not fast, (schema, doc)


def test_ref_siblings_apply():
    schema = {"$defs": {"n": {"type": "integer"}}, "type": "object",
              "properties": {"x": {"$ref": "#/$defs/n", "minimum": 1, "maximum": 3}}}
    import fastjsonschema

    check = fastjsonschema.compile(schemas.fast_form(schema), use_default=False, detailed_exceptions=False)
    check({"x": 2})
    for bad in ({"x": 0}, {"x": 9}, {"x": "a"}):
        with pytest.raises(fastjsonschema.JsonSchemaValueException):
            check(bad)
        assert not jsonschema.Draft202012Validator(schema).is_valid(bad)


SEED_DOC = {"schema_version": 1, "commands": [["git", "init"]],
            "files": [{"path": "x", "sha256": "0" * 64, "role": "decoy"}]}


@pytest.mark.parametrize(("name", "path", "value"), [
    ("seed", ("files", 0, "path"), "seed.json\n"),
    ("seed", ("files", 0, "path"), "a/..\n"),
    ("call", ("cwd",), "a/..\n"),
    ("call", ("cwd",), "..\n"),
])
def test_a_final_newline_is_judged_as_python_judges_it(name, path, value):
    """`$` matches before a final newline in Python (jsonschema); fastjsonschema's own `\\Z` does not, which
    under a negative lookahead accepted what jsonschema refuses (review finding): fast_form writes `$` out."""
    doc = json.loads(json.dumps(SEED_DOC if name == "seed" else SEEDS[name][0]))
    assert schemas.is_valid_fast(doc, name)  # the document before the edit is valid
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    reference = jsonschema.Draft202012Validator(schemas.load_schema(name)).is_valid(doc)
    assert not reference
    assert schemas.is_valid_fast(doc, name) is False, (name, doc)


PATTERN = st.text(alphabet="a$^[]\\\n()?!|.*/", max_size=12)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # re warns of possible nested sets in random patterns
@settings(max_examples=600, deadline=None)
@given(pattern=PATTERN, texts=st.lists(st.text(alphabet="a$]\\\n/.", max_size=5), min_size=1, max_size=6))
def test_python_dollar_means_what_python_means(pattern, texts):
    import re

    from fastjsonschema.draft04 import DOLLAR_FINDER

    try:
        original = re.compile(pattern)
    except re.error:
        return
    written = schemas.python_dollar(pattern)
    assert DOLLAR_FINDER.sub(r"\\Z", written) == written  # fastjsonschema's rewrite finds nothing to change
    rewritten = re.compile(written)
    for text in texts:
        assert bool(original.search(text)) == bool(rewritten.search(text)), (pattern, written, text)


@pytest.mark.parametrize(("schema", "doc"), [
    ({"enum": [True, 2]}, 1), ({"const": {"a": 1}}, {"a": True}), ({"enum": [[1]]}, [True]),
    ({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "minimum": 0}, -1),
    ({"not": {"pattern": "^a$"}}, "a\n"), ({"pattern": "[$]"}, "x"),
])
def test_shapes_left_to_jsonschema_are_never_accepted_more(schema, doc):
    """Shapes the hot path must not decide alone (review findings): the answer is jsonschema's or stricter."""
    import fastjsonschema

    reference = jsonschema.Draft202012Validator(schema).is_valid(doc)
    try:
        check = fastjsonschema.compile(schemas.fast_form(schema), use_default=False, use_formats=False,
                                       detailed_exceptions=False)
        check(doc)
        fast = True
    except Exception:  # noqa: BLE001 - refused, or not compiled: jsonschema answers
        fast = False
    assert not fast or reference, (schema, doc)


def test_fast_path_off_asks_jsonschema(monkeypatch):
    monkeypatch.setattr(schemas, "FAST", False)
    assert not schemas.is_valid_fast({}, "usage")
    assert schemas.errors({"schema_version": "x"}, "usage")


def test_invalid_instance_messages_come_from_jsonschema():
    assert schemas.errors({"schema_version": 1}, "usage")  # non-empty, jsonschema-worded
    with pytest.raises(Exception, match=r"u\.json: \(top level\): Additional properties are not allowed") as err:
        schemas.validate({"schema_version": "x"}, "usage", "u.json")
    assert err.value.field == "(top level)" and err.value.fix == "see schemas/usage.schema.json"
