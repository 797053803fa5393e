from pathlib import Path

import pytest

from skill_eval import strict
from skill_eval.errors import InputError


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
