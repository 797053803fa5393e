"""A compiled yes/no validator for the subset of JSON Schema 2020-12 our schemas use.

Why: re-grading thousands of bundles validated every meta.json, call and event line with
`jsonschema`, which walks the schema as data and builds error objects lazily — 60 % of the
evidence gate's time. Here a schema is compiled once into nested closures that answer only
"valid?"; nothing else. The contract with `schemas` is one-sided:

- `True` means valid, and must agree with `jsonschema` (property-tested in
  tests/test_fastschema.py against `Draft202012Validator.is_valid`);
- anything unusual (a keyword this compiler does not know, a uniqueItems/const over values
  whose JSON equality is subtle) raises `Undecided`, and so does every invalid instance's
  diagnosis: `schemas` then asks `jsonschema` itself, so error messages never change.

`compile_schema` returns None for a schema with an unsupported keyword (then `schemas`
always uses `jsonschema` for it). `schemagen` builds the same checks as Python source (faster per
value, dearer to build), which `hotschemas` also writes ahead into a module. Stdlib only; imports
nothing from skill_eval.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

# Keywords with no effect on validity.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default", "examples", "$defs",
                          "definitions", "deprecated", "readOnly", "writeOnly"})
_KNOWN = _ANNOTATIONS | frozenset({
    "type", "properties", "additionalProperties", "patternProperties", "required", "items", "$ref", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "const", "enum", "pattern", "minLength", "maxLength",
    "uniqueItems", "minItems", "maxItems", "minProperties", "maxProperties", "if", "then", "else", "oneOf", "anyOf",
    "allOf", "not", "propertyNames",
})


class Undecided(Exception):
    """The fast path cannot answer for this instance: ask jsonschema."""


class Unsupported(Exception):
    """The schema uses a keyword this compiler does not implement."""


def _is_number(v: Any) -> bool:
    return (type(v) is int) or (type(v) is float)


def _type_check(name: str) -> Check:
    if name == "object":
        return lambda v: type(v) is dict
    if name == "array":
        return lambda v: type(v) is list
    if name == "string":
        return lambda v: type(v) is str
    if name == "boolean":
        return lambda v: type(v) is bool
    if name == "null":
        return lambda v: v is None
    if name == "number":
        return _is_number
    if name == "integer":
        return lambda v: type(v) is int or (type(v) is float and v.is_integer())
    raise Unsupported(f"type {name!r}")


def _scalar_equal(a: Any, b: Any) -> bool:
    """JSON equality for scalars: booleans are not numbers, 1 == 1.0; containers are undecided."""
    ta, tb = type(a), type(b)
    if ta in (list, dict) or tb in (list, dict):
        raise Undecided
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if a is None or b is None:
        return a is b
    if ta is str or tb is str:
        return ta is tb and a == b
    return bool(a == b)


def _unique(items: list[Any]) -> bool:
    kinds = {type(v) for v in items}
    if kinds <= {str} or kinds <= {int, float}:
        return len(set(items)) == len(items)
    raise Undecided


def _resolve(root: dict[str, Any], pointer: str) -> Any:
    """The schema node a local `$ref` (`#/...`, JSON Pointer escapes) names; Unsupported otherwise."""
    if not pointer.startswith("#/"):
        raise Unsupported(f"$ref {pointer!r}")
    target: Any = root
    for part in pointer[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            raise Unsupported(f"$ref {pointer!r}")
        target = target[part]
    return target


def _supported(s: Any) -> None:
    """Both compilers' first step: a (non-boolean) schema must be an object of known keywords."""
    if not isinstance(s, dict):
        raise Unsupported("schema is not an object")
    unknown = set(s) - _KNOWN
    if unknown:
        raise Unsupported(f"keywords {sorted(unknown)}")


class _Compiler:
    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, pointer: str) -> Check:
        if pointer not in self.refs:
            target = _resolve(self.root, pointer)
            slot: list[Check] = []
            self.refs[pointer] = lambda v: slot[0](v)  # recursion-safe forward reference
            slot.append(self.compile(target))
        return self.refs[pointer]

    def compile(self, s: Any) -> Check:  # noqa: C901 - one branch per keyword is the clearest form
        if s is True:
            return lambda v: True
        if s is False:
            return lambda v: False
        _supported(s)
        checks: list[Check] = []
        if "type" in s:
            names = s["type"] if isinstance(s["type"], list) else [s["type"]]
            tests = [_type_check(n) for n in names]
            checks.append(tests[0] if len(tests) == 1 else (lambda v, ts=tuple(tests): any(t(v) for t in ts)))  # type: ignore[misc]  # mypy cannot type a lambda with a binding default
        if "const" in s:
            c = s["const"]
            checks.append((lambda v: type(v) is str and v == c) if type(c) is str else (lambda v: _scalar_equal(v, c)))
        if "enum" in s:
            options = tuple(s["enum"])
            if options and all(type(o) is str for o in options):  # _scalar_equal over strings, as one set lookup
                names_set = frozenset(options)
                checks.append(lambda v: type(v) is str and v in names_set)
            else:
                checks.append(lambda v: any(_scalar_equal(v, o) for o in options))
        checks += self._strings(s) + self._numbers(s) + self._arrays(s) + self._objects(s) + self._logic(s)
        if "$ref" in s:
            checks.append(self.ref(s["$ref"]))
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        return _conj(tuple(checks))

    def _strings(self, s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "pattern" in s:
            search = re.compile(s["pattern"]).search
            out.append(lambda v: type(v) is not str or search(v) is not None)
        if "minLength" in s:
            n = s["minLength"]
            out.append(lambda v, n=n: type(v) is not str or len(v) >= n)  # type: ignore[misc]  # mypy cannot type a lambda with a binding default
        if "maxLength" in s:
            n = s["maxLength"]
            out.append(lambda v, n=n: type(v) is not str or len(v) <= n)  # type: ignore[misc]  # mypy cannot type a lambda with a binding default
        return out

    def _numbers(self, s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        for key, ok in (("minimum", lambda v, b: v >= b), ("maximum", lambda v, b: v <= b),
                        ("exclusiveMinimum", lambda v, b: v > b), ("exclusiveMaximum", lambda v, b: v < b)):
            if key in s:
                bound = s[key]
                out.append(lambda v, b=bound, ok=ok: not _is_number(v) or ok(v, b))  # type: ignore[misc]  # mypy cannot type a lambda with a binding default
        return out

    def _arrays(self, s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "items" in s:
            item = self.compile(s["items"])

            def items(v: Any) -> bool:
                if type(v) is list:
                    for x in v:
                        if not item(x):
                            return False
                return True
            out.append(items)
        if "minItems" in s:
            n = s["minItems"]
            out.append(lambda v, n=n: type(v) is not list or len(v) >= n)  # type: ignore[misc]  # mypy cannot type a lambda with a binding default
        if "maxItems" in s:
            n = s["maxItems"]
            out.append(lambda v, n=n: type(v) is not list or len(v) <= n)  # type: ignore[misc]  # mypy cannot type a lambda with a binding default
        if s.get("uniqueItems") is True:
            out.append(lambda v: type(v) is not list or _unique(v))
        return out

    def _objects(self, s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "required" in s:
            req = tuple(s["required"])

            def required(v: Any) -> bool:
                if type(v) is dict:
                    for k in req:
                        if k not in v:
                            return False
                return True
            out.append(required)
        if "minProperties" in s:
            n = s["minProperties"]
            out.append(lambda v, n=n: type(v) is not dict or len(v) >= n)  # type: ignore[misc]  # mypy cannot type a lambda with a binding default
        if "maxProperties" in s:
            n = s["maxProperties"]
            out.append(lambda v, n=n: type(v) is not dict or len(v) <= n)  # type: ignore[misc]  # mypy cannot type a lambda with a binding default
        if "propertyNames" in s:
            name_ok = self.compile(s["propertyNames"])
            out.append(lambda v: type(v) is not dict or all(name_ok(k) for k in v))
        props = {k: self.compile(sub) for k, sub in (s.get("properties") or {}).items()}
        patterns = tuple((re.compile(p).search, self.compile(sub)) for p, sub in (s.get("patternProperties") or {}).items())
        extra = s.get("additionalProperties", True)
        extra_check = None if extra is True else self.compile(extra)
        if (props or extra_check is not None) and not patterns:
            def obj_plain(v: Any) -> bool:  # the common shape: properties (+ additionalProperties), no patterns
                if type(v) is not dict:
                    return True
                for k, x in v.items():
                    p = props.get(k)
                    if p is not None:
                        if not p(x):
                            return False
                    elif extra_check is not None and not extra_check(x):
                        return False
                return True
            out.append(obj_plain)
        elif props or patterns or extra_check is not None:
            def obj(v: Any) -> bool:
                if type(v) is not dict:
                    return True
                for k, x in v.items():
                    known = False
                    p = props.get(k)
                    if p is not None:
                        known = True
                        if not p(x):
                            return False
                    for search, check in patterns:
                        if search(k) is not None:
                            known = True
                            if not check(x):
                                return False
                    if not known and extra_check is not None and not extra_check(x):
                        return False
                return True
            out.append(obj)
        return out

    def _logic(self, s: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "allOf" in s:
            subs = tuple(self.compile(x) for x in s["allOf"])
            out.append(lambda v: all(c(v) for c in subs))
        if "anyOf" in s:
            subs_any = tuple(self.compile(x) for x in s["anyOf"])

            def any_of(v: Any) -> bool:
                for c in subs_any:
                    if c(v):
                        return True
                return False
            out.append(any_of)
        if "oneOf" in s:
            subs_one = tuple(self.compile(x) for x in s["oneOf"])
            out.append(lambda v: sum(1 for c in subs_one if c(v)) == 1)
        if "not" in s:
            negated = self.compile(s["not"])
            out.append(lambda v: not negated(v))
        if "if" in s:
            cond = self.compile(s["if"])
            then = self.compile(s.get("then", True))
            other = self.compile(s.get("else", True))
            out.append(lambda v: then(v) if cond(v) else other(v))
        return out


def _conj(checks: tuple[Check, ...]) -> Check:
    """All of `checks` (a plain loop: cheaper than all() over a generator on this hot path)."""
    if len(checks) == 2:
        a, b = checks
        return lambda v: a(v) and b(v)
    if len(checks) == 3:
        a, b, c = checks
        return lambda v: a(v) and b(v) and c(v)

    def conj(v: Any) -> bool:
        for c in checks:
            if not c(v):
                return False
        return True
    return conj


def compile_schema(schema: dict[str, Any]) -> Check | None:
    """A `valid?` function for `schema` (nested closures: cheap to build), or None when it uses a
    keyword not implemented here."""
    try:
        return _Compiler(schema).compile(schema)
    except (Unsupported, re.error):
        return None
