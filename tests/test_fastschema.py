"""The compiled validator agrees with jsonschema on every instance it answers.

Seeds are real valid documents from this repository (every bundle file, content file and
model script), then Hypothesis mutates them: drop/add keys, retype values, replace any
node with random JSON. `fastschema` may raise Undecided (schemas then asks jsonschema),
but when it answers, its answer must equal `Draft202012Validator.is_valid`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skill_eval import _hot_schemas, fastschema, schemagen, schemas

ROOT = Path(__file__).resolve().parents[1]
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


@pytest.mark.parametrize("name", NAMES)
def test_every_schema_compiles(name):
    assert schemas._fast(name) is not None


@pytest.mark.parametrize("name", NAMES)
def test_seeds_are_valid_fast(name):
    for doc in SEEDS[name]:
        assert schemas.is_valid_fast(doc, name), name


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fast_agrees_with_jsonschema(name, data):
    doc = data.draw(mutated(name))
    reference = jsonschema.Draft202012Validator(schemas.load_schema(name)).is_valid(doc)
    try:
        fast = schemas._fast(name)(doc)
    except fastschema.Undecided:
        return
    assert fast == reference, (name, doc)


def _outcome(check, doc):
    try:
        return check(doc)
    except fastschema.Undecided:
        return "undecided"


@pytest.mark.parametrize("name", NAMES)
def test_every_schema_generates(name):
    assert schemagen.generate(schemas.load_schema(name)) is not None


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_generated_code_answers_as_the_closures(name, data):
    """schemagen.generate's source against the closures (compile_schema): the same answer, and
    Undecided exactly where the closures raise it (same checks, same order, same short-circuits)."""
    doc = data.draw(mutated(name))
    schema = schemas.load_schema(name)
    assert _outcome(schemagen.generate(schema), doc) == _outcome(fastschema.compile_schema(schema), doc), (name, doc)


@pytest.mark.parametrize("name", NAMES)
def test_generated_code_on_seeds_and_bad_shapes(name):
    schema = schemas.load_schema(name)
    gen, ref = schemagen.generate(schema), fastschema.compile_schema(schema)
    for doc in [*SEEDS[name], None, 1, 1.5, True, "x", [], {}, [1, "a"], {"schema_version": 1}, {"extra": {}}]:
        assert _outcome(gen, doc) == _outcome(ref, doc), (name, doc)


@settings(max_examples=300, deadline=None)
@given(schema_value=JSON, doc=JSON)
def test_generated_keywords_match_closures_and_jsonschema(schema_value, doc):
    for schema in ({"const": schema_value}, {"enum": [schema_value, "a"]}, {"type": "array", "uniqueItems": True},
                   {"type": ["integer", "null"], "minimum": 1}, {"not": {"type": "number"}},
                   {"oneOf": [{"type": "string"}, {"const": schema_value}]}, {"anyOf": [{"type": "null"}, {"minLength": 2}]},
                   {"allOf": [{"maxItems": 2}, {"items": {"type": "integer"}}]},
                   {"if": {"type": "object", "required": ["a"]}, "then": {"maxProperties": 1}, "else": {"minProperties": 1}},
                   {"patternProperties": {"^k": {"type": "integer"}}, "additionalProperties": False,
                    "properties": {"a": {"type": "string"}}},
                   {"patternProperties": {"^k": True}, "additionalProperties": {"type": "null"}},
                   {"properties": {"a": False}}, {"additionalProperties": False}, {"propertyNames": {"maxLength": 1}},
                   {"exclusiveMinimum": 0, "exclusiveMaximum": 5, "maximum": 4.5}, {"pattern": "^a"},
                   {"$defs": {"n": {"anyOf": [{"type": "null"}, {"items": {"$ref": "#/$defs/n"}}]}}, "$ref": "#/$defs/n"}):
        gen, ref = schemagen.generate(schema), fastschema.compile_schema(schema)
        got = _outcome(gen, doc)
        assert got == _outcome(ref, doc), (schema, doc)
        if got != "undecided":
            assert got == jsonschema.Draft202012Validator(schema).is_valid(doc), (schema, doc)


def test_schemas_switch_to_generated_checks_with_the_same_answers(monkeypatch):
    """is_valid_fast moves a schema to its generated check after GENERATE_AFTER uses; the answers
    (and errors(), which falls back to jsonschema for anything not valid) stay the same."""
    monkeypatch.setattr(schemas, "GENERATE_AFTER", 3)
    monkeypatch.setattr(schemas, "_HOT", {})
    monkeypatch.setattr(schemas, "_USES", {})
    docs = [*SEEDS["meta"], {"kind": "x"}, None, {}]
    before = [(schemas.is_valid_fast(d, "meta"), schemas.errors(d, "meta")) for d in docs]
    assert "meta" in schemas._HOT
    after = [(schemas.is_valid_fast(d, "meta"), schemas.errors(d, "meta")) for d in docs]
    assert before == after


@settings(max_examples=300, deadline=None)
@given(schema_value=JSON, doc=JSON)
def test_const_enum_unique_semantics(schema_value, doc):
    for schema in ({"const": schema_value}, {"enum": [schema_value, "a"]}, {"type": "array", "uniqueItems": True},
                   {"type": ["integer", "null"], "minimum": 1}, {"not": {"type": "number"}}):
        check = fastschema.compile_schema(schema)
        try:
            fast = check(doc)
        except fastschema.Undecided:
            continue
        assert fast == jsonschema.Draft202012Validator(schema).is_valid(doc), (schema, doc)


def test_unknown_keyword_falls_back():
    assert fastschema.compile_schema({"type": "string", "format": "date"}) is None


def test_invalid_instance_messages_come_from_jsonschema():
    assert schemas.errors({"schema_version": 1}, "usage")  # non-empty, jsonschema-worded
    with pytest.raises(Exception, match=r"u\.json: \(top level\): Additional properties are not allowed") as err:
        schemas.validate({"schema_version": "x"}, "usage", "u.json")
    assert err.value.field == "(top level)" and err.value.fix == "see schemas/usage.schema.json"


@pytest.mark.parametrize(("text", "atom"), [
    ("(a or b)", True), ("_s1(v)", True), ("_scalar_equal(v, _k1)", True), ("any(_scalar_equal(v, o) for o in _k2)", True),
    ("(type(v) is str and v in _k3)", True), ("(a) or (b)", False), ("_s1(v) and _s2(v)", False), ("x", False),
    ("not (a)", False), ("(a)(b)", False), ("_s1(v) or (b)", False), ("", False),
])
def test_only_one_operand_is_inlined_under_not(text, atom):
    """The generator inlines a one-test body `if not X: return False` as `(X)` only when X is one
    operand; anything else is negated whole, `(not (...))`, which is always right."""
    assert schemagen._atom(text) is atom


@pytest.mark.parametrize(("expr", "negated"), [
    ("type(v) is str", "type(v) is not str"), ("(type(v) is str)", "type(v) is not str"), ("v is not None", "v is None"),
    ("not _s1(v)", "_s1(v)"), ("not (v == 1 and v)", "(v == 1 and v)"), ("v == 1 and v", "not (v == 1 and v)"),
    ("_s1(v)", "not _s1(v)"), ("(v is None or v == 1)", "not (v is None or v == 1)"), ("False", "not (False)"),
    ("not (v) or (v)", "not (not (v) or (v))"), ("type(v) is dict and v", "not (type(v) is dict and v)"),
])
def test_negated_is_not_and_as_a_linter_writes_it(expr, negated):
    """The generator's `not expr` (written so ruff has nothing to say of the module built ahead)."""
    assert schemagen._negated(expr) == negated
    for v in (None, 1, "x", {}, [], 0, True):
        scope = {"v": v, "_s1": bool}
        assert eval(negated, scope) == (not eval(expr, scope)), (expr, v)  # noqa: S307 - our own test expressions


@pytest.mark.parametrize("name", sorted(_hot_schemas.FACTORIES))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_checks_built_ahead_answer_as_generate(name, data):
    """_hot_schemas' factory (for the committed schema: tests/test_hotschemas.py) against generate()
    at run time: the same answer, Undecided in the same places."""
    doc = data.draw(mutated(name))
    ahead, now = _built(name)
    assert _outcome(ahead, doc) == _outcome(now, doc), (name, doc)


@functools.cache
def _built(name):
    return _hot_schemas.FACTORIES[name][1](), schemagen.generate(schemas.load_schema(name))
