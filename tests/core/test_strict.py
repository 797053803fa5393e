from pathlib import Path

import pytest

from skill_eval.core import strict
from skill_eval.core.errors import InputError


@pytest.mark.parametrize(
    "text,needle",
    [
        ('{"a": 1, "a": 2}', "duplicate JSON key 'a'"),
        ('{"x": {"b": 1, "b": 1}}', "duplicate JSON key 'b'"),
        ('[{"k": 1, "k": 2}]', "duplicate JSON key 'k'"),
        ('{"a": NaN}', "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ('{"a": 1e999}', "not finite"),
        ('{"a": 1} {"b": 2}', "Extra data"),
        ('{"a": 1', "line 1"),
        ("", "invalid JSON"),
        ("\ufeff{}", "byte-order mark"),
    ],
)
def test_json_rejects(text, needle):
    with pytest.raises(InputError, match=needle.replace("(", r"\(")):
        strict.loads_json(text, "x.json")


def test_json_accepts_plain():
    assert strict.loads_json('{"a": [1, 2.5, null, true]}', "x") == {"a": [1, 2.5, None, True]}


def test_bad_utf8_and_bom(tmp_path: Path):
    p = tmp_path / "f.json"
    p.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(InputError, match="invalid UTF-8 at byte 7"):
        strict.load_json(p)
    p.write_bytes(b'\xef\xbb\xbf{}')
    with pytest.raises(InputError, match="byte-order mark"):
        strict.load_json(p)


def test_symlink_refused(tmp_path: Path):
    (tmp_path / "real").write_text("{}")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(InputError, match="symlink"):
        strict.read_bytes(tmp_path / "link")


def test_size_cap(tmp_path: Path):
    p = tmp_path / "big"
    p.write_bytes(b"x" * 100)
    with pytest.raises(InputError, match="cap"):
        strict.read_bytes(p, max_bytes=10)


@pytest.mark.parametrize(
    "text,needle",
    [
        ("a: 1\na: 2\n", "duplicate key 'a'"),
        ("x:\n  b: 1\n  b: 2\n", "duplicate key 'b'"),
        ("a: [1, 2\n", "invalid YAML at line"),
        ("a: 1\n---\nb: 2\n", "exactly one YAML document"),
        ("a: !!python/object:os.system {}\n", "invalid YAML"),
    ],
)
def test_yaml_rejects(text, needle):
    with pytest.raises(InputError, match=needle):
        strict.loads_yaml(text, "x.yaml")


def test_toml_duplicate(tmp_path: Path):
    p = tmp_path / "c.toml"
    p.write_text("a = 1\na = 2\n")
    with pytest.raises(InputError, match="invalid TOML"):
        strict.load_toml(p)


def test_dumps_is_stable():
    assert strict.dumps_json({"b": 1, "a": "é"}) == '{\n  "a": "é",\n  "b": 1\n}\n'


# -- limits: every refusal is an InputError naming the source (never a crash, never unbounded) ----

import math  # noqa: E402
import time  # noqa: E402

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True))


@pytest.mark.parametrize("text,needle", [
    ("a: &x [1]\nb: *x\n", "anchors and aliases"),
    ("a: &x 1\n", "anchors and aliases"),
    ("base: &b {a: 1}\nx:\n  <<: *b\n", "anchors and aliases"),
    ("a: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 64"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 64"),
    ("a: " + "9" * 31 + "\n", "more than 30 digits"),
    ("a: " + "9" * 5000 + "\n", "more than 30 digits"),
    ("a: 0x" + "f" * 40 + "\n", "more than 30 digits"),
    ("a: .nan\n", "not finite"),
    ("a: -.inf\n", "not finite"),
    ('a: "\\ud800"\n', "lone surrogate"),
    ("a: !!binary aGVsbG8=\n", "not allowed"),
    ("a: !!set {x, y}\n", "not allowed"),
    ("a: !!omap [{x: 1}]\n", "not allowed"),
    ("? [a, b]\n: 1\n", "unhashable"),
])
def test_yaml_limits(text, needle):
    with pytest.raises(InputError, match=needle) as exc:
        strict.loads_yaml(text, "x.yaml")
    assert exc.value.source == "x.yaml" and "\n" not in exc.value.render()


def test_yaml_alias_bomb_is_refused_at_once():
    started = time.monotonic()
    with pytest.raises(InputError, match="anchors and aliases"):
        strict.loads_yaml(BOMB, "scenarios.yaml")
    assert time.monotonic() - started < 1.0


def test_yaml_dates_stay_strings():
    """An impossible date is a string for the schema to judge, not a crash in the loader."""
    assert strict.loads_yaml("a: 2020-02-31\nb: 2020-01-01T00:00:00Z\n", "x") == {"a": "2020-02-31", "b": "2020-01-01T00:00:00Z"}


@pytest.mark.parametrize("text,needle", [
    ('{"a": "\\ud800"}', "lone surrogate"),
    ('{"\\udfff": 1}', "lone surrogate"),
    ("[" * 65 + "]" * 65, "nested deeper than 64"),
    ("[" * 100000 + "]" * 100000, "nested deeper than 64"),
    ('{"a": ' + "1" * 31 + "}", "more than 30 digits"),
    ('{"a": -' + "1" * 5000 + "}", "more than 30 digits"),
])
def test_json_limits(text, needle):
    with pytest.raises(InputError, match=needle):
        strict.loads_json(text, "x.json")


def test_json_limit_names_the_field():
    with pytest.raises(InputError) as exc:
        strict.loads_json('{"a": {"b": ["\\ud800"]}}', "x.json")
    assert exc.value.field == "a.b.0"


@pytest.mark.parametrize("text,needle", [
    ("a = nan\n", "not finite"),
    ("a = -inf\n", "not finite"),
    ("a = " + "9" * 31 + "\n", "more than 30 digits"),
    ("a = " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 64"),
    ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 64"),
    ('a = "\\ud800"\n', "invalid TOML"),
    ("a = 2020-02-31\n", "invalid TOML"),
])
def test_toml_limits(text, needle):
    with pytest.raises(InputError, match=needle):
        strict.loads_toml(text, "c.toml")


def test_toml_finite_numbers_pass():
    assert strict.loads_toml("a = 1.5\nb = 3\n", "c.toml") == {"a": 1.5, "b": 3}


@pytest.mark.parametrize("text,needle", [
    ('{"a": 1}\n\n{"a": 2}\n', "line 2 is blank"),
    ('\n{"a": 1}\n', "line 1 is blank"),
    ('{"a": 1}\n\n', "line 2 is blank"),
    ('{"a": 1}\n   \n', "line 2 is blank"),
    ('{"a": 1}\n{"a": NaN}\n', "line 2"),
])
def test_jsonl_refuses_blank_and_bad_lines(text, needle):
    with pytest.raises(InputError, match=needle):
        strict.loads_jsonl(text, "calls.jsonl")


def test_jsonl_accepts_records():
    assert strict.loads_jsonl('{"a": 1}\n{"a": 2}\n', "x") == [{"a": 1}, {"a": 2}]
    assert strict.loads_jsonl('{"a": 1}', "x") == [{"a": 1}]
    assert strict.loads_jsonl("", "x") == []


def test_default_size_cap(tmp_path: Path):
    p = tmp_path / "huge.json"
    with p.open("wb") as fh:
        fh.truncate(strict.MAX_FILE_BYTES + 1)
    with pytest.raises(InputError, match="cap"):
        strict.read_bytes(p)


def test_over_long_path_is_an_input_error(tmp_path: Path):
    with pytest.raises(InputError, match="cannot be read") as exc:
        strict.read_bytes(tmp_path / ("x" * 5000))
    assert len(exc.value.render()) < 500


def test_check_value_accepts_finite_values():
    value = {"a": [1, 2.5, "é", None, True, {"b": -(10 ** 29)}]}
    assert strict.check_value(value, "x") is value
    with pytest.raises(InputError):
        strict.check_value({"a": math.inf}, "x")


# -- config: bounded, finite, defaults from one source ----------------------------------------------

import json as _json  # noqa: E402

from skill_eval.content import config  # noqa: E402
from skill_eval.core import schemas  # noqa: E402

CONFIG_SCHEMA = _json.loads((Path(__file__).resolve().parents[2] / "schemas/config.schema.json").read_text())


def test_config_schema_bounds_are_the_config_constants():
    props = CONFIG_SCHEMA["properties"]
    assert props["evals"]["properties"]["k"]["maximum"] == config.K_MAX
    assert props["agent"]["properties"]["max_turns"]["maximum"] == config.MAX_TURNS_MAX
    assert props["agent"]["properties"]["timeout_seconds"]["maximum"] == config.TIMEOUT_MAX
    assert props["agent"]["properties"]["max_cost_usd"]["maximum"] == config.COST_MAX


def test_config_defaults_live_only_in_config_py():
    text = _json.dumps(CONFIG_SCHEMA)
    assert '"default"' not in text
    assert config.MAX_BUNDLE_FILE_BYTES_DEFAULT == strict.MAX_FILE_BYTES
    from skill_eval.grading import bundle

    assert bundle.DEFAULT_MAX_BYTES == strict.MAX_FILE_BYTES


def test_config_default_k(mini_repo):
    path = mini_repo / "skill-eval.toml"
    path.write_text(path.read_text().replace("k = 3\n", ""))
    assert config.load(mini_repo).k == config.K_DEFAULT


@pytest.mark.parametrize("line,needle", [
    ("trigger_min_recall = nan", "not finite"),
    ("trigger_min_recall = inf", "not finite"),
    ("bootstrap_samples = 1000000000000000", "bootstrap_samples"),
])
def test_config_refuses_non_finite_and_unbounded(mini_repo, line, needle):
    path = mini_repo / "skill-eval.toml"
    path.write_text(path.read_text().replace("[thresholds]\n", f"[thresholds]\n{line}\n"))
    with pytest.raises(InputError, match=needle) as exc:
        config.load(mini_repo)
    assert exc.value.source == str(path)


@pytest.mark.parametrize("value", [math.nan, -math.inf, math.inf])
def test_config_schema_itself_refuses_non_finite(value):
    """Defence in depth: even a record that bypassed the TOML loader cannot carry NaN or inf."""
    errs = schemas.errors({"agent": {"timeout_seconds": value}}, "config")
    assert any(e.startswith("agent.timeout_seconds") for e in errs), errs


@pytest.mark.parametrize("key,value", [("k", 0), ("k", 10 ** 12), ("max_bundle_file_bytes", 10 ** 15)])
def test_config_integers_are_bounded(mini_repo, key, value):
    path = mini_repo / "skill-eval.toml"
    path.write_text(path.read_text().replace("[evals]\n", f"[evals]\n{key} = {value}\n").replace("k = 3\n", "", 1 if key == "k" else 0))
    with pytest.raises(InputError, match=key):
        config.load(mini_repo)


def test_json_integer_limit_holds_on_the_fast_path_and_words_the_same_refusal():
    """loads_json skips the per-integer hook only when no digit run is long enough to be refused."""
    from skill_eval.core import strict as strict_mod

    assert strict_mod.loads_json('{"a": [' + "9" * 30 + "]}", "x") == {"a": [int("9" * 30)]}
    assert strict_mod.loads_json('{"a": "' + "9" * 40 + '"}', "x") == {"a": "9" * 40}  # digits in a string: fine
    for text in ('{"a": [1, {"b": ' + "9" * 31 + "}]}", '[-' + "9" * 31 + "]", "9" * 31):
        with pytest.raises(InputError, match="integer has more than 30 digits"):
            strict_mod.loads_json(text, "x")


def test_yaml_is_imported_by_the_first_yaml_read_only():
    """PyYAML (~7 ms of import) is not paid by loading the TOML config; the first YAML read imports it
    and builds the strict loaders, which strict._StrictLoader / _CStrictLoader also reach from outside."""
    import subprocess
    import sys

    code = ("import sys; import skill_eval.content.config; assert 'yaml' not in sys.modules, 'yaml imported by config'; "
            "from skill_eval.core import strict; assert strict.loads_yaml('a: [1]', 'x.yaml') == {'a': [1]}; "
            "assert 'yaml' in sys.modules and strict._StrictLoader.__name__ == 'StrictLoader'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        strict.no_such_name  # the module __getattr__ answers only for the two loaders
