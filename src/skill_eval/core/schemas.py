"""JSON Schema (2020-12) validation at every boundary.

Schemas live in the repository's top-level `schemas/` directory (one file per
format) and ship inside the wheel as `skill_eval/schemas/`. A validation failure
becomes one line naming the file, the field path and what was wrong.

Speed: a valid instance is recognised by fastjsonschema (each schema compiled once per process,
on first use, from `fast_form`: a copy that closes every gap where its draft-07 semantics would
accept more than 2020-12); anything it does not accept goes through `jsonschema`, the authority,
which writes every error message (and may still accept it). tests/core/test_schemas.py holds the two equal on generated and mutated
instances. `jsonschema` itself is imported only then (it costs ~0.1 s of start-up that valid
input never needs).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_eval.core import strict
from skill_eval.core.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import jsonschema

_PACKAGED = Path(__file__).resolve().parents[1] / "schemas"  # skill_eval/schemas in a wheel
_SOURCE_TREE = Path(__file__).resolve().parents[3] / "schemas"  # the checkout's schemas/
# SKILL_EVAL_VALIDATOR=jsonschema turns the fast path off (reference runs in tests and bench.py).
FAST = os.environ.get("SKILL_EVAL_VALIDATOR", "fast") != "jsonschema"


def schema_dir() -> Path:
    """Where the schemas are: inside an installed wheel, or the source checkout."""
    return _PACKAGED if _PACKAGED.is_dir() else _SOURCE_TREE


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    path = schema_dir() / f"{name}.schema.json"
    schema: dict[str, Any] = strict.load_json(path)
    return schema


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    import jsonschema

    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


@functools.cache
def _fast(name: str) -> Callable[[Any], Any] | None:
    """fastjsonschema's compiled check of this schema, or None when it cannot compile it (then every
    instance goes to jsonschema)."""
    import fastjsonschema

    try:
        return fastjsonschema.compile(fast_form(load_schema(name)), use_default=False, use_formats=False,
                                      detailed_exceptions=False)
    except Exception:  # noqa: BLE001 - any schema it cannot compile (a definition error, a regex re refuses): jsonschema alone
        return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


_SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "propertyNames", "contains")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_OUTER = ("$id", "$schema", "$defs", "definitions")  # stay where a $ref resolves them


def fast_form(schema: Any) -> Any:
    """A copy of `schema` for fastjsonschema (draft-07 semantics) that accepts nothing jsonschema
    (2020-12) refuses; accepting less only sends an instance to jsonschema. Three gaps are closed:

    - `const` becomes a one-value `enum`, and every `enum` also demands the JSON types of its values
      (Python's 1 == True == 1.0 would let `true` pass `const: 1`), in an `allOf` beside it so no
      keyword it had is replaced; an `enum` holding a container, or both booleans and numbers, is
      left to jsonschema (`{"not": {}}`: the hot path never decides it);
    - a `$ref` with siblings becomes an `allOf` of the two (draft-07 ignores the siblings);
    - every `pattern`'s `$` is written out as what Python's `$` means, `(?=\\n?\\Z)`: fastjsonschema
      turns a bare `$` into `\\Z`, which under a negation (`(?!...$)`, `not`, `oneOf`) accepts more.

    tests/core/test_schemas.py holds the two validators equal on generated and mutated instances."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SUBSCHEMA:
        if key in out:
            out[key] = fast_form(out[key])
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {k: fast_form(v) for k, v in out[key].items()}
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [fast_form(v) for v in out[key]]
    if isinstance(out.get("pattern"), str):
        out["pattern"] = python_dollar(out["pattern"])
    if "const" in out:  # the same rule as a one-value enum (and fastjsonschema's const cannot be compiled terse)
        const = out.pop("const")
        if "enum" in out:
            out["allOf"] = [*out.get("allOf", []), fast_form({"enum": [const]})]
        else:
            out["enum"] = [const]
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(values, list) and values:
        types = {_json_type(v) for v in values}
        if types & {"object", "array"} or {"boolean", "number"} <= types:
            out["allOf"] = [*out.get("allOf", []), {"not": {}}]
        else:
            out["allOf"] = [*out.get("allOf", []), {"type": sorted(types)}]
    if "$ref" in out and len(out) > 1:  # draft-07 would ignore a $ref's siblings; 2020-12 applies them
        outer = {k: out.pop(k) for k in _OUTER if k in out}
        ref = out.pop("$ref")
        return {**outer, "allOf": [{"$ref": ref}, out]} if out else {**outer, "$ref": ref}
    return out


def python_dollar(pattern: str) -> str:
    """`pattern` with every `$` that is an anchor written as `(?=\\n?\\Z)` (Python's `$`: the end, or
    before a final newline) and every `$` inside a character class escaped, so fastjsonschema's own
    rewrite (each unescaped `$` to `\\Z`) finds nothing to change."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            out.append("\\$" if c == "$" else c)
        elif c == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
            out.append(c)
        else:
            out.append("(?=\n?\\Z)" if c == "$" else c)
        i += 1
    return "".join(out)


def prepare(names: Iterable[str]) -> None:
    """Compile these schemas' checks now (the evidence pass does, before forking its workers)."""
    for name in names:
        _fast(name)


def is_valid_fast(instance: Any, name: str) -> bool:
    """True only when the compiled check accepts the instance."""
    if not FAST:
        return False
    check = _fast(name)
    if check is None:
        return False
    try:
        check(instance)
    except Exception:  # noqa: BLE001 - a refusal, or anything it cannot decide: jsonschema answers
        return False
    return True


def field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def errors(instance: Any, name: str) -> list[str]:
    """All validation problems as 'field: message' strings, sorted for stable output."""
    if is_valid_fast(instance, name):
        return []
    found = []
    for err in _validator(name).iter_errors(instance):
        found.append(f"{field_path(err)}: {_short(err)}")
    return sorted(found)


def validate(instance: Any, name: str, source: object) -> Any:
    """Validate or raise InputError naming the first (most relevant) problem."""
    if is_valid_fast(instance, name):
        return instance
    import jsonschema

    err = jsonschema.exceptions.best_match(_validator(name).iter_errors(instance))
    if err is not None:
        raise InputError(_short(err), source=source, field=field_path(err), fix=f"see schemas/{name}.schema.json")
    return instance


def _short(err: jsonschema.ValidationError) -> str:
    message = err.message
    if len(message) > 200:
        message = message[:197] + "..."
    return message
