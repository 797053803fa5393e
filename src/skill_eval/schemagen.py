"""`fastschema`'s checks as generated Python source: one plain function per distinct schema node.

Why: a compiled closure tree (`fastschema.compile_schema`) is cheap to build, but for schemas
validated thousands of times in one process a generated function, its keyword tests inlined,
is ~2x faster per value (and ~10x dearer to build). `generate` builds and runs the source here;
`generate_source` is that source, which `hotschemas` writes ahead into `_hot_schemas.py`.
The contract is `fastschema`'s: True agrees with `jsonschema`, anything unusual is Undecided
(property-tested in tests/test_fastschema.py). Stdlib and `fastschema` only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from skill_eval.fastschema import Check, Unsupported, _resolve, _scalar_equal, _supported, _unique


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
    exec(compile(source, "<schemagen>", "exec"), ns)  # noqa: S102 - our own generated source
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
