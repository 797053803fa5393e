"""The compiled strict-JSON fast path (skill_eval._fastjson) never answers differently.

`_fastjson.loads` / `loads_lines` may decline (NotImplemented: strict.py then parses the careful way),
but whatever they accept must be exactly what the pure-Python path returns (same values, same types,
same key order), and they must decline whenever the Python path refuses. Held to it here against the
Python path with the module turned off: generated documents in varied formatting and escaping, the
same documents mutated (duplicate keys, NaN, 1e400, long integers, control characters, lone
surrogates, BOMs, trailing data, deep nesting, truncations, byte flips), JSON Lines, every bundle
file of this repository, and random bytes (which must never crash it).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skill_eval import strict
from skill_eval.errors import SkillEvalError

fastjson = pytest.importorskip("skill_eval._fastjson", reason="the C fast path is not built (hatch_build.py)")

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# -- the two paths -----------------------------------------------------------------------------------
@contextlib.contextmanager
def _python_only():
    saved = strict._fastjson
    strict._fastjson = None
    try:
        yield
    finally:
        strict._fastjson = saved


def _outcome(fn, text: str) -> tuple[str, object]:
    try:
        return ("ok", fn(text, "f.json"))
    except SkillEvalError as exc:
        return ("err", str(exc))


def _exact(a: object, b: object) -> bool:
    """Equal and of the same types all the way down, dict key order and the sign of -0.0 included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_exact(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_exact(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def _same_outcome(x: tuple[str, object], y: tuple[str, object]) -> bool:
    return x[0] == y[0] and (_exact(x[1], y[1]) if x[0] == "ok" else x[1] == y[1])


def agree(text: str) -> bool:
    """The C answer (if any) is the Python answer, a Python refusal is a C decline, and loads_json
    (C first) answers as the Python path alone. True when C accepted."""
    fast = fastjson.loads(text)
    with _python_only():
        ref = _outcome(strict.loads_json, text)
    if fast is NotImplemented:
        accepted = False
    else:
        assert ref[0] == "ok", (text, ref)
        assert _exact(fast, ref[1]), (text, fast, ref)
        accepted = True
    assert _same_outcome(_outcome(strict.loads_json, text), ref), text
    return accepted


def agree_lines(text: str) -> bool:
    fast = fastjson.loads_lines(text)
    with _python_only():
        ref = _outcome(strict.loads_jsonl, text)
        assert _same_outcome(ref, _outcome(strict._loads_lines, text)), text
    if fast is NotImplemented:
        accepted = False
    else:
        assert type(fast) is list
        assert ref[0] == "ok", (text, ref)
        assert _exact(fast, ref[1]), (text, fast, ref)
        accepted = True
    assert _same_outcome(_outcome(strict.loads_jsonl, text), ref), text
    return accepted


# -- generated documents -------------------------------------------------------------------------------
class Raw(str):
    """A number token written verbatim (any grammar-valid token: huge, tiny, long, overflowing)."""


_EDGE_FLOATS = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
                0.1, 1e16, 1e22, 1e23, 123456789.125, 9007199254740993.0, 1.5e-7]
_NUMBER_TOKEN = r"-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,4})?"

scalars = (st.none() | st.booleans()
           | st.integers(min_value=-(10**35), max_value=10**35) | st.integers(-1000, 1000)
           | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(_EDGE_FLOATS)
           | st.from_regex(_NUMBER_TOKEN, fullmatch=True).map(Raw)
           | st.text(max_size=12) | st.text(alphabet=st.characters(min_codepoint=0x10000), max_size=4)
           | st.text(alphabet='"\\/\b\f\n\r\t\x00\x1f\x7f é€\u2028\ufeff😀', max_size=8))
keys = st.text(max_size=6) | st.sampled_from(["a", "b", "é", "😀", "", "a\"b", "\\", "\n"])
values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=5) | st.dictionaries(keys, kids, max_size=5),
                      max_leaves=30)

_WS = ["", "", "", " ", "\n", "\t", "\r\n", "  "]
_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(ch: str, rng: random.Random) -> str:
    code = ord(ch)
    options = [] if ch in '"\\' or code < 0x20 else [ch, ch, ch]
    if ch in _SHORT:
        options.append(_SHORT[ch])
    if code < 0x10000:
        options += [f"\\u{code:04x}", f"\\u{code:04X}"]
    else:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        options += [f"\\u{high:04x}\\u{low:04x}", f"\\u{high:04X}\\u{low:04x}"]
    return rng.choice(options)


def _string(text: str, rng: random.Random) -> str:
    return '"' + "".join(_escape_char(ch, rng) for ch in text) + '"'


def dump(value: object, rng: random.Random, *, ws: bool = True, dup: float = 0.0) -> str:
    """`value` as JSON with random whitespace between tokens and a random escape for each character;
    with `dup` > 0 an object may repeat one of its keys (escaped another way, maybe)."""
    pad = (lambda: rng.choice(_WS)) if ws else (lambda: "")
    if isinstance(value, Raw):
        return str(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return _string(value, rng)
    if isinstance(value, list):
        return "[" + pad() + ("," + pad()).join(dump(v, rng, ws=ws, dup=dup) + pad() for v in value) + "]"
    assert isinstance(value, dict)
    pairs = list(value.items())
    if pairs and rng.random() < dup:
        pairs.insert(rng.randrange(len(pairs) + 1), rng.choice(pairs))
    body = ("," + pad()).join(_string(k, rng) + pad() + ":" + pad() + dump(v, rng, ws=ws, dup=dup) + pad()
                              for k, v in pairs)
    return "{" + pad() + body + "}"


@SETTINGS
@given(values, st.randoms(use_true_random=False), st.booleans())
def test_generated_documents_agree(value, rng, outer_ws):
    text = dump(value, rng)
    if outer_ws:
        text = rng.choice(_WS) + text + rng.choice(_WS)
    agree(text)


@SETTINGS
@given(values, st.sampled_from([None, 0, 1, 2, "\t"]), st.sampled_from([None, (",", ":"), (", ", ": "), (" ,", " : ")]),
       st.booleans(), st.booleans())
def test_json_dumps_formatting_agrees(value, indent, separators, ensure_ascii, sort_keys):
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=ensure_ascii, sort_keys=sort_keys)
    accepted = agree(text)
    if _depth(value) < fastjson.DEPTH_LIMIT and not any(
            type(v) is int and abs(v) >= 10**30 for v in _containers(value)):
        assert accepted, text  # a plain document is never declined


def _containers(value: object):
    """Every node of a parsed document (containers and scalars)."""
    yield value
    for child in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        yield from _containers(child)


def _depth(value: object) -> int:
    if isinstance(value, dict | list):
        return 1 + max((_depth(c) for c in (value.values() if isinstance(value, dict) else value)), default=0)
    return 0


@SETTINGS
@given(values, st.randoms(use_true_random=False))
def test_duplicate_keys_at_any_depth_are_declined(value, rng):
    """Every non-empty object repeats one of its keys (maybe escaped another way)."""
    accepted = agree(dump(value, rng, dup=1.0))
    assert not (accepted and any(isinstance(c, dict) and c for c in _containers(value)))


_INSERTS = ["NaN", "-NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 31, "-" + "9" * 31, "1" * 30, "\x01", "\x1f",
            "\x00", "\\ud800", "\\udc00", "\\ud800\\u0041", "\\udbff\\udfff", "\\ud800\\ud800", "\ufeff", "x", ",", "]",
            "}", "[", "{", "\\", '"', "\\uZZZZ", "\\u12", "\\q", "\\U0041", " ", "\n", "-", "0", "01", "1.", ".5",
            "e5", "1e", "1e+", "tru", "nul", "\ud800", "\udc80", "/", "'", ":", '"a":1,', "\u00a0", "\u2028", "+1"]


@SETTINGS
@given(values, st.randoms(use_true_random=False), st.lists(st.sampled_from(_INSERTS), min_size=1, max_size=3))
def test_mutated_documents_agree(value, rng, inserts):
    text = dump(value, rng)
    for ins in inserts:
        at = rng.randrange(len(text) + 1)
        text = text[:at] + ins + text[at:]
    agree(text)


@SETTINGS
@given(values, st.randoms(use_true_random=False), st.integers(1, 4))
def test_byte_flips_agree(value, rng, flips):
    data = bytearray(dump(value, rng).encode())
    for _ in range(flips):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    agree(bytes(data).decode("utf-8", rng.choice(["surrogateescape", "replace"])))


_SAMPLE = ('{"name": "caf\\u00e9 \\ud83d\\ude00 é", "n": [0, -1, 1.5e3, -0.0, 123456789012345678901234567890],\n'
           ' "ok": true, "no": false, "x": null, "esc": "\\"\\\\\\/\\b\\f\\n\\r\\t", "deep": {"a": [{"b": {}}]}, "😀": []}\n')


def test_every_truncation_and_extension_of_a_sample_agrees():
    assert agree(_SAMPLE)
    for i in range(len(_SAMPLE)):
        agree(_SAMPLE[:i])
        agree(_SAMPLE[i:])
        agree(_SAMPLE[:i] + _SAMPLE[i + 1:])
    for junk in ["x", "1", "{}", "]", "\x00", "\ufeff", "// c", ",", "\u00a0"]:
        assert not agree(_SAMPLE + junk)
    assert not agree("\ufeff" + _SAMPLE)


@pytest.mark.parametrize("depth", [1, 46, 47, 48, 49, 63, 64, 65, 200, 5000])
def test_deep_nesting_declined_before_the_limit(depth):
    lists = "[" * depth + "]" * depth
    objects = '{"a":' * depth + "1" + "}" * depth
    mixed = "".join('[{"k":' if i % 2 else "[" for i in range(depth)) + "0" + "".join(
        "}]" if i % 2 else "]" for i in reversed(range(depth)))
    for text in (lists, objects, mixed):
        containers = text.count("[") + text.count("{")  # all nested in one another
        assert agree(text) == (containers < fastjson.DEPTH_LIMIT), containers
    assert fastjson.DEPTH_LIMIT <= strict.MAX_DEPTH


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}', '{"a": 1, "\\u0061": 2}', '[{"k": 1}, {"k": 2, "k": 3}]', '{"b": {"c": 1, "c": 1}}',
    "NaN", "[Infinity]", "[-Infinity]", "1e400", "-1e400", "[1e309]", "9" * 31, "-" + "9" * 31, "0" + "9" * 30,
    '"\x01"', '"a\x1fb"', '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\ud800x"', '"\\ud800\\ue000"', '"\\udbff\\uFFFF"', '"\\ud800\\"', '{"\\udfff": 1}',
    "\ufeff{}", "{} x", "[1]]", "1 2", "", " ", "[1,]", '{"a":1,}', "{,}", "[01]", "[1.]", "[.5]", "[1e]", "[-]",
    "[+1]", "tru", "True", "nul", "'a'", '"\\x41"', '"\\u00zz"', '"abc', '{"a" 1}', '{1: 2}', "\u00a0[]", "[]\u00a0",
    "\x0b1", "1\x0c", '"\ud800"', "[\"\udc80\"]",
])
def test_refused_documents_are_declined(text):
    with _python_only():
        assert _outcome(strict.loads_json, text)[0] == "err", text
    assert fastjson.loads(text) is NotImplemented
    agree(text)


@pytest.mark.parametrize("text", [
    "0", "-0", "-0.0", "0.0", "1E5", "1e-5", "1E+5", "2.5e-400", "1" * 30, "-" + "1" * 30, "9" * 18, "9" * 19,
    "-" + "9" * 19, "1" * 60 + ".5", "9" * 31 + "e1", "0." + "0" * 50 + "1", "1.7976931348623157e308",
    "4.9e-324", '"\\ud83d\\ude00"', '"\\uD83D\\uDE00"', '"\\u0000"', '"\\/"', '"\x7f"', '"\u2028"', '"\ufeff"',
    '{"": ""}', "[[], {}, [[]], {\"a\": {}}]", " \t\r\n[1] \t\r\n", '"' + "é" * 300 + '\\n"', '"' + "x" * 1000 + '"',
    "true", "false", "null", '{"b": 1, "a": 2}',
])
def test_valid_documents_are_accepted_exactly(text):
    assert agree(text), text


# -- JSON Lines ----------------------------------------------------------------------------------------
_LINE_ATOMS = ['{"a":1}', '{"a":1,"a":2}', "[1,2]", '"x"', "1", "-0.5", "NaN", "1e999", '{"a":', "1}", ' {"b":2}',
               '{"c":3} ', "", '{"d":"\\u00e9"}', '{"e":"\\ud800"}', '{"p":"\\ud83d\\ude00"}', "\ufeff{}", '{"q":"\ufeff"}',
               '{"f":' + "[" * 70 + "]" * 70 + "}", '{"f":' + "[" * 47 + "]" * 47 + "}", "1" * 40, '{"g":\r1}',
               '{"h":1}\r', "true", "null", '{"i":[{"j":{}}]}', "[", "]", ",", '{"k":"a\\nb"}', '{"l":"é"}', "{}",
               "[]", '{"x":[1', "2]}", '{"y":{"z":1}', '{"w":2}}', "\t1", "1\t", "\x00", '"\x01"', "\u00a0", "\u2028"]


@pytest.mark.parametrize("seed", range(4))
def test_jsonl_from_atoms_agrees(seed):
    rng = random.Random(seed)
    taken = 0
    for _ in range(800):
        lines = [rng.choice(_LINE_ATOMS) for _ in range(rng.randint(0, 5))]
        text = "\n".join(lines) + rng.choice(["", "\n", "\n\n", "\r\n"])
        taken += agree_lines(text)
    assert taken > 50  # the C path is really taken, not always declined


@SETTINGS
@given(st.lists(values, max_size=6), st.randoms(use_true_random=False), st.booleans(), st.integers(0, 5))
def test_generated_jsonl_agrees(records, rng, final_newline, mutate):
    lines = [dump(v, rng, ws=rng.random() < 0.3, dup=0.1) for v in records]
    for _ in range(mutate if lines else 0):
        i = rng.randrange(len(lines))
        lines[i] = rng.choice([lambda s: "", lambda s: " " + s, lambda s: s + " ", lambda s: s + "\r",
                               lambda s: "\ufeff" + s, lambda s: s.replace(",", ",\n", 1), lambda s: s + s,
                               lambda s: s[: len(s) // 2], lambda s: s + "\n", lambda s: s])(lines[i])
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    agree_lines(text)


@pytest.mark.parametrize("text", ["", "1", "1\n", "1\n2", "1\n2\n", '{"a":1}\n[2]\n"x"\n'])
def test_jsonl_plain_cases_accepted(text):
    assert agree_lines(text)


@pytest.mark.parametrize("text", ["\n", "1\n\n", "\n1", "1\n\n2", " 1", "1 ", "1\r\n", "[1,\n2]", '{"a":\n1}',
                                  '{"a":1,"a":2}\n', "\ufeff1\n", "1\n\ufeff2", "NaN\n", "1\n2 3\n"])
def test_jsonl_unusual_cases_declined(text):
    assert fastjson.loads_lines(text) is NotImplemented
    agree_lines(text)


# -- real files ----------------------------------------------------------------------------------------
def test_every_bundle_file_parses_identically():
    files = sorted(p for d in ("evidence", "golden") for p in (ROOT / "agent-evals" / "skills" / d).rglob("*")
                   if p.suffix in (".json", ".jsonl") and p.is_file())
    assert len(files) > 100
    taken = 0
    for path in files:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        taken += agree_lines(text) if path.suffix == ".jsonl" else agree(text)
    assert taken >= 0.9 * len(files)


# -- robustness ----------------------------------------------------------------------------------------
_FUZZ_ALPHABET = (b'{}[]",:\\/u0123456789abcdefABCDEF-+.eEtrunlsfaINy \n\t\r\x00\x1f\x7f'
                  b"\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80\xef\xbb\xbf\xff")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.sampled_from(["surrogateescape", "replace"]))
def test_random_bytes_never_crash_and_agree(data, errors):
    text = data.decode("utf-8", errors)
    agree(text)
    agree_lines(text)


def test_random_json_alphabet_never_crashes():
    """Many texts from JSON's own alphabet (C only: it must return or decline, never crash)."""
    rng = random.Random(1)
    answered = 0
    for _ in range(20000):
        data = bytes(rng.choice(_FUZZ_ALPHABET) for _ in range(rng.randint(0, 40)))
        text = data.decode("utf-8", rng.choice(["surrogateescape", "replace"]))
        for fn in (fastjson.loads, fastjson.loads_lines):
            got = fn(text)
            answered += got is not NotImplemented
    assert answered > 0


def test_not_a_str_is_declined():
    for arg in (b"{}", None, 1, ["[]"], bytearray(b"1")):
        assert fastjson.loads(arg) is NotImplemented
        assert fastjson.loads_lines(arg) is NotImplemented

    class S(str):
        pass

    assert fastjson.loads(S('{"a": [1]}')) == {"a": [1]}


def test_long_documents_and_strings():
    big = {f"k{i}": ["x" * 300, "é\\n" * 100, i, i * 0.5] for i in range(2000)}
    text = json.dumps(big)
    assert agree(text)
    assert agree(json.dumps(big, ensure_ascii=False, indent=2))
    assert agree_lines("\n".join(json.dumps({"i": i, "s": "\\u" + "a" * i}) for i in range(500)) + "\n")


# -- switch and build ----------------------------------------------------------------------------------
def test_env_switch_turns_the_fast_path_off():
    code = "from skill_eval import strict; print(strict._fastjson is None)"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(env, SKILL_EVAL_FASTJSON="0"))
    assert (on.stdout.strip(), off.stdout.strip()) == ("False", "True")


def test_module_in_place_is_built_from_the_current_source():
    """An editable install compiles the module in place once; after an edit of the C source it is stale
    (rebuild: `python hatch_build.py` or `pip install -e .`)."""
    built = Path(fastjson.__file__)
    source = built.with_name("_fastjson.c")
    if source.is_file():
        assert built.stat().st_mtime >= source.stat().st_mtime, "stale: run `python hatch_build.py`"


def test_build_hook_compiles_without_warnings(tmp_path):
    """hatch_build.compile_extension (editable installs and wheels use it) builds the module warning-free
    (-Werror on top of -Wall -Wextra) and what it builds works; with no compiler it raises, and the
    hook then builds without the module."""
    pytest.importorskip("hatchling")
    sys.path.insert(0, str(ROOT))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(ROOT))
    built = hatch_build.compile_extension(ROOT / hatch_build.PACKAGE / "_fastjson.c", tmp_path, extra_flags=("-Werror",))
    assert built.name == hatch_build.extension_name("_fastjson") and sorted(p.name for p in tmp_path.iterdir()) == [built.name]
    spec = importlib.util.spec_from_file_location("skill_eval._fastjson", built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.loads('{"a": [1, 2.5, "\\u00e9"]}') == {"a": [1, 2.5, "é"]}

    import sysconfig

    real = sysconfig.get_config_var
    try:
        sysconfig.get_config_var = lambda name: "/nonexistent/cc" if name == "CC" else real(name)
        with pytest.raises(OSError):
            hatch_build.compile_extension(ROOT / hatch_build.PACKAGE / "_fastjson.c", tmp_path / "none")
    finally:
        sysconfig.get_config_var = real
    assert not list((tmp_path / "none").glob("*"))


def test_build_hook_tags_the_wheel_or_warns_and_builds_without(tmp_path, capsys, monkeypatch):
    pytest.importorskip("hatchling")
    monkeypatch.syspath_prepend(str(ROOT))
    import sysconfig

    import hatch_build

    def hook():
        return hatch_build.FastPathsHook(str(ROOT), {}, None, None, str(tmp_path), "wheel")

    data = {"force_include": {}, "pure_python": True, "infer_tag": False}
    wheel = hook()
    wheel.initialize("standard", data)
    assert sorted(data["force_include"].values()) == sorted(f"skill_eval/{hatch_build.extension_name(m)}"
                                                            for m in hatch_build.MODULES)
    assert all(Path(built).is_file() for built in data["force_include"])
    assert (data["pure_python"], data["infer_tag"]) == (False, True)
    wheel.finalize("standard", data, str(tmp_path / "x.whl"))
    assert not any(Path(built).exists() for built in data["force_include"])

    real = sysconfig.get_config_var
    monkeypatch.setattr(sysconfig, "get_config_var", lambda name: "/nonexistent/cc" if name == "CC" else real(name))
    data = {"force_include": {}, "pure_python": True, "infer_tag": False}
    broken = hook()
    broken.initialize("standard", data)
    broken.finalize("standard", data, str(tmp_path / "x.whl"))
    assert data == {"force_include": {}, "pure_python": True, "infer_tag": False}
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == len(hatch_build.MODULES) and all("building without the C fast path" in w for w in warning)
    sdist = {"force_include": {}}
    hatch_build.FastPathsHook(str(ROOT), {}, None, None, str(tmp_path), "sdist").initialize("standard", sdist)
    assert sdist == {"force_include": {}}
