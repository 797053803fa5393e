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
always uses `jsonschema` for it). `generate` builds the same checks as Python source (faster per
value, dearer to build); `generate_source` is that source, which `hotschemas` also writes ahead
into a module. Stdlib only; imports nothing from skill_eval.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
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


def generate(schema: dict[str, Any]) -> Check | None:
    """`compile_schema`'s function as generated Python source: one plain function per distinct schema
    node, its keyword checks inlined, in `_Compiler`'s order with its short-circuits (Undecided where
    the closures raise it). ~2x faster per value but ~10x dearer to build: for schemas validated
    many times in one process (schemas.is_valid_fast switches after GENERATE_AFTER uses). The
    source is `generate_source`'s, run here as it runs in a module of factories built ahead."""
    try:
        source = generate_source(schema, "_check")
    except (Unsupported, re.error):
        return None
    ns: dict[str, Any] = {"re": re, "Any": Any, "Check": Check, "_scalar_equal": _scalar_equal, "_unique": _unique}
    exec(compile(source, "<fastschema>", "exec"), ns)  # noqa: S102 - our own generated source
    check: Check = ns["_check"]()
    return check


def generate_source(schema: dict[str, Any], name: str) -> str:
    """The source of `def name() -> Check`, a factory returning `generate(schema)`'s check: its
    constants as literals, then its functions, then their dispatch tables (closures over all
    three). It reads only `re`, `Any`, `Check`, `_scalar_equal` and `_unique`, so a module that
    imports those can hold it (schemas' hot checks, built ahead). Unsupported or re.error when
    `generate` would answer None."""
    return _Generator(schema).source(name)


_MAX_LITERAL_DEPTH = 100  # Python's parser refuses 200 nested brackets; schemas read by `strict` nest 64 at most


def _literal(v: Any, depth: int = 0) -> str:
    """Python source for a constant the generator binds: a JSON value (of the same types: 1 stays int,
    1.0 float) or a tuple/frozenset of them (a frozenset's members sorted: the text is stable)."""
    t, inner = type(v), depth + 1
    if depth > _MAX_LITERAL_DEPTH:
        raise Unsupported("constant nested too deeply")
    if t is int and v.bit_length() > 14_000:  # ~4200 digits: repr() refuses over 4300 (int_max_str_digits)
        raise Unsupported("integer too long")
    if v is None or t in (bool, int, str):
        return repr(v)
    if t is float:
        return repr(v) if math.isfinite(v) else f"float({repr(v)!r})"
    if t is list:
        return "[" + ", ".join(_literal(x, inner) for x in v) + "]"
    if t is dict:
        return "{" + ", ".join(f"{_literal(k, inner)}: {_literal(x, inner)}" for k, x in v.items()) + "}"
    if t is tuple:
        return _tuple(_literal(x, inner) for x in v)
    if t is frozenset:
        return "frozenset({" + ", ".join(sorted(_literal(x, inner) for x in v)) + "})" if v else "frozenset()"
    raise Unsupported(f"constant of type {t.__name__}")


def _tuple(items: Iterable[str]) -> str:
    parts = list(items)
    return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def _atom(text: str) -> bool:
    """Is `text` one operand: a parenthesised expression or a call (`name(...)`) whose first
    bracket closes at its very end? (Then `not text` negates all of it.) Strings in the generator's
    lines are constants' names, never literals, so brackets can be counted."""
    head = text[:text.index("(")] if "(" in text else None
    if head is None or not (head == "" or head.isidentifier()) or not text.endswith(")"):
        return False
    depth = 0
    for i in range(len(head), len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return i == len(text) - 1
    return False


def _negated(expr: str) -> str:
    """`not expr`, as a linter would write it (the same bytecode): `a is not b` for `a is b` and back,
    `X` for `not X` when X is one operand, an operand's own brackets not doubled."""
    inner = expr[1:-1] if expr.startswith("(") and _atom(expr) else expr
    if _IS.fullmatch(inner):
        return inner.replace(" is not ", " is ") if " is not " in inner else inner.replace(" is ", " is not ")
    if expr.startswith("not ") and _atom(expr[len("not "):]):
        return expr[len("not "):]
    return f"not {expr}" if _atom(expr) else f"not ({expr})"


_IS = re.compile(r"(?:type\(v\)|v) is (?:not )?\w+")  # one identity test: its negation is `is not`
_CALL_ONLY = re.compile(r"if not _[rs]\d+\(v\): return False")  # a body that only calls another check
_TYPE_TESTS = {
    "object": "type(v) is dict", "array": "type(v) is list", "string": "type(v) is str", "boolean": "type(v) is bool",
    "null": "v is None", "number": "(type(v) is int or type(v) is float)",
    "integer": "(type(v) is int or (type(v) is float and v.is_integer()))",
}


class _Generator:
    """`_Compiler`'s checks as source: every keyword test in `_Compiler.compile`'s order, each failing
    test returning False at once (the closures' short-circuit), Undecided raised where they raise it."""

    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.consts: list[str] = []  # `_kN: Any = <literal>`, first in the factory
        self.lines: list[str] = []  # the functions' definitions
        self.tables: list[str] = []  # `_tN = {...}`: dicts/tuples of generated functions, bound after them
        self.refs: dict[str, str] = {}
        self.bodies: dict[str, str] = {}  # generated body -> its function's name
        self.values: dict[str, str] = {}  # a constant's source -> its name

    def source(self, name: str) -> str:
        top = self.compile(self.root)
        inner = [*self.consts, *self.lines, *self.tables, f"return {top}"]
        return "\n".join([f"def {name}() -> Check:", *("    " + line for line in inner)]) + "\n"

    def value(self, v: Any) -> str:
        return self._constant(_literal(v))

    def _constant(self, text: str) -> str:
        name = self.values.get(text)
        if name is None:
            name = self.values[text] = f"_k{len(self.values)}"
            self.consts.append(f"{name}: Any = {text}")
        return name

    def search(self, pattern: str) -> str:
        re.compile(pattern)  # a bad pattern: re.error now, not when the factory runs
        return self._constant(f"re.compile({pattern!r}).search")

    def ref(self, pointer: str) -> str:
        if pointer not in self.refs:
            target = _resolve(self.root, pointer)
            name = self.refs[pointer] = f"_r{len(self.refs)}"  # named before its body: recursion-safe
            self.define(name, self.body(target))
        return self.refs[pointer]

    def compile(self, s: Any) -> str:
        """The name of a function checking `s`; one function per distinct body (most leaves repeat).
        A body that only calls another function (a bare $ref) is that function: no wrapper."""
        return self._named(self.body(s))

    def _named(self, body: list[str]) -> str:
        if len(body) == 1 and _CALL_ONLY.fullmatch(body[0]):
            return body[0][len("if not "):-len("(v): return False")]
        key = "\n".join(body)
        name = self.bodies.get(key)
        if name is None:
            name = self.bodies[key] = f"_s{len(self.bodies)}"
            self.define(name, body)
        return name

    def test(self, s: Any) -> str:
        """An expression in `v` answering what calling compile(s)'s function on v answers (same checks,
        same order, same Undecided): a one-test body inlined, anything else a call."""
        body = self.body(s)
        if not body:
            return "True"
        if body == ["return False"]:
            return "False"
        if len(body) == 1 and body[0].startswith("if ") and body[0].endswith(": return False"):
            positive = _negated(body[0][len("if "):-len(": return False")])
            return positive if _atom(positive) else f"({positive})"
        return f"{self._named(body)}(v)"  # the body built once (building it again doubled per nesting level)

    def define(self, name: str, body: list[str]) -> None:
        self.lines.append(f"def {name}(v: Any) -> bool:")
        for line in body:
            if line.endswith(": return False"):  # written on two lines (PEP 8; the same bytecode)
                indent = line[:len(line) - len(line.lstrip())]
                self.lines += ["    " + line[:-len(" return False")], "    " + indent + "    return False"]
            else:
                self.lines.append("    " + line)
        self.lines.append("    return True")

    def body(self, s: Any) -> list[str]:  # noqa: C901 - one branch per keyword, as in _Compiler.compile
        if s is True:
            return []
        if s is False:
            return ["return False"]
        _supported(s)
        out: list[str] = []
        if "type" in s:
            names = s["type"] if isinstance(s["type"], list) else [s["type"]]
            tests = []
            for n in names:
                if not isinstance(n, str) or n not in _TYPE_TESTS:
                    raise Unsupported(f"type {n!r}")
                tests.append(_TYPE_TESTS[n])
            if not tests:
                raise Unsupported("type []")
            out.append(f"if {_negated(tests[0] if len(tests) == 1 else '(' + ' or '.join(tests) + ')')}: return False")
        if "const" in s:
            c = self.value(s["const"])
            out.append(f"if not (type(v) is str and v == {c}): return False" if type(s["const"]) is str
                       else f"if not _scalar_equal(v, {c}): return False")
        if "enum" in s:
            options = tuple(s["enum"])
            if options and all(type(o) is str for o in options):
                out.append(f"if not (type(v) is str and v in {self.value(frozenset(options))}): return False")
            else:
                out.append(f"if not any(_scalar_equal(v, o) for o in {self.value(options)}): return False")
        out += self._strings(s) + self._numbers(s) + self._arrays(s) + self._objects(s) + self._logic(s)
        if "$ref" in s:
            out.append(f"if not {self.ref(s['$ref'])}(v): return False")
        return out

    def _strings(self, s: dict[str, Any]) -> list[str]:
        out = []
        if "pattern" in s:
            out.append(f"if type(v) is str and {self.search(s['pattern'])}(v) is None: return False")
        if "minLength" in s:
            out.append(f"if type(v) is str and not (len(v) >= {self.value(s['minLength'])}): return False")
        if "maxLength" in s:
            out.append(f"if type(v) is str and not (len(v) <= {self.value(s['maxLength'])}): return False")
        return out

    def _numbers(self, s: dict[str, Any]) -> list[str]:
        out = []
        for key, op in (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")):
            if key in s:
                out.append(f"if (type(v) is int or type(v) is float) and not (v {op} {self.value(s[key])}): return False")
        return out

    def _arrays(self, s: dict[str, Any]) -> list[str]:
        out = []
        if "items" in s:
            item = self.compile(s["items"])
            out += ["if type(v) is list:", "    for x in v:", f"        if not {item}(x): return False"]
        if "minItems" in s:
            out.append(f"if type(v) is list and not (len(v) >= {self.value(s['minItems'])}): return False")
        if "maxItems" in s:
            out.append(f"if type(v) is list and not (len(v) <= {self.value(s['maxItems'])}): return False")
        if s.get("uniqueItems") is True:
            out.append("if type(v) is list and not _unique(v): return False")
        return out

    def _objects(self, s: dict[str, Any]) -> list[str]:
        out = []
        if "required" in s:
            out += ["if type(v) is dict:", f"    for k in {self.value(tuple(s['required']))}:",
                    "        if k not in v: return False"]
        if "minProperties" in s:
            out.append(f"if type(v) is dict and not (len(v) >= {self.value(s['minProperties'])}): return False")
        if "maxProperties" in s:
            out.append(f"if type(v) is dict and not (len(v) <= {self.value(s['maxProperties'])}): return False")
        if "propertyNames" in s:
            names_ok = self.compile(s["propertyNames"])
            out += ["if type(v) is dict:", "    for k in v:", f"        if not {names_ok}(k): return False"]
        props = {k: self.compile(sub) for k, sub in (s.get("properties") or {}).items()}
        patterns = [(self.search(p), self.compile(sub)) for p, sub in (s.get("patternProperties") or {}).items()]
        extra = s.get("additionalProperties", True)
        extra_fn = None if extra is True or extra is False else self.compile(extra)
        if not (props or patterns or extra is not True):
            return out
        if len(props) == 1 and not patterns and extra is True:  # one known key: looked up, not looped for
            (key, check), = props.items()
            k = self.value(key)
            out.append(f"if type(v) is dict and {k} in v and not {check}(v[{k}]): return False")
            return out
        table = f"_t{len(self.tables)}"
        self.tables.append(f"{table}: dict[str, Check] = {{{', '.join(f'{_literal(k)}: {f}' for k, f in props.items())}}}")
        out += ["if type(v) is dict:", "    for k, x in v.items():", f"        p = {table}.get(k)"]
        if not patterns:  # _Compiler's obj_plain
            if extra is True:
                out.append("        if p is not None and not p(x): return False")
            else:
                out += ["        if p is not None:", "            if not p(x): return False",
                        "        else: return False" if extra is False else f"        elif not {extra_fn}(x): return False"]
            return out
        pat = f"_t{len(self.tables)}"
        self.tables.append(f"{pat} = {_tuple(f'({search}, {check})' for search, check in patterns)}")
        out += ["        known = p is not None", "        if p is not None and not p(x): return False",
                f"        for search, check in {pat}:", "            if search(k) is not None:",
                "                known = True", "                if not check(x): return False"]
        if extra is False:
            out.append("        if not known: return False")
        elif extra is not True:
            out.append(f"        if not known and not {extra_fn}(x): return False")
        return out

    def _logic(self, s: dict[str, Any]) -> list[str]:
        out = []
        if "allOf" in s:
            subs = [self.test(x) for x in s["allOf"]]
            if subs:
                out.append(f"if {_negated(' and '.join(subs))}: return False")
        if "anyOf" in s:
            subs = [self.test(x) for x in s["anyOf"]]
            out.append(f"if {_negated(' or '.join(subs) or 'False')}: return False")
        if "oneOf" in s:
            subs = [self.test(x) for x in s["oneOf"]]  # every branch evaluated, as sum() over them did
            out.append(f"if ({' + '.join(f'(1 if {t} else 0)' for t in subs) or '0'}) != 1: return False")
        if "not" in s:
            out.append(f"if {self.test(s['not'])}: return False")
        if "if" in s:
            cond, then, other = self.test(s["if"]), self.test(s.get("then", True)), self.test(s.get("else", True))
            out.append(f"if not ({then} if {cond} else {other}): return False")
        return out
