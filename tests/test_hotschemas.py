"""The bundle schemas' checks built ahead (src/skill_eval/_hot_schemas.py, written by `hotschemas`).

The committed module must be exactly what the generator writes now (else it is stale); `schemas`
uses one of its factories only for the schema file bytes it was generated from, and generates at
run time for anything else, with that schema's answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skill_eval import _hot_schemas, fastschema, hotschemas, schemas

ROOT = Path(__file__).resolve().parents[1]
USAGE = {"turns": 3, "tool_calls": 2, "tokens_in": 300, "tokens_out": 60, "cost_usd": 0.003, "wall_clock_s": 2.6,
         "retries": 0, "stop_reason": "completed"}


@pytest.fixture
def fresh_schemas(monkeypatch):
    """Empty per-process caches (schema bytes, parsed schemas, checks, jsonschema validators) before and after."""
    monkeypatch.setattr(schemas, "_HOT", {})
    monkeypatch.setattr(schemas, "_USES", {})
    caches = (schemas.schema_bytes, schemas.load_schema, schemas._fast, schemas._validator)
    for cache in caches:
        cache.cache_clear()
    yield
    for cache in caches:
        cache.cache_clear()


def _schema_copy(tmp_path: Path, name: str, text: str) -> Path:
    """A schema directory: every packaged schema, `name`'s replaced by `text`."""
    for p in (ROOT / "schemas").glob("*.schema.json"):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    (tmp_path / f"{name}.schema.json").write_text(text, encoding="utf-8")
    return tmp_path


def test_the_committed_module_is_current():
    assert hotschemas.TARGET.read_text(encoding="utf-8") == hotschemas.source(), (
        f"{hotschemas.TARGET} is stale: run `{hotschemas.COMMAND}` and commit it")


def test_it_covers_every_bundle_schema():
    from skill_eval import bundle

    assert set(_hot_schemas.FACTORIES) == set(bundle.SCHEMAS.values()) == set(hotschemas.NAMES)
    assert all(digest == schemas.schema_digest(n) for n, (digest, _) in _hot_schemas.FACTORIES.items())


def test_main_writes_the_module_and_check_reports_staleness(tmp_path, monkeypatch, capsys):
    target = tmp_path / "_hot_schemas.py"
    monkeypatch.setattr(hotschemas, "TARGET", target)
    assert hotschemas.main(["--check"]) == 1 and not target.exists()
    assert "stale (run `python scripts/gen_hot_schemas.py`)" in capsys.readouterr().err
    assert hotschemas.main([]) == 0 and target.read_text(encoding="utf-8") == hotschemas.source()
    assert hotschemas.main(["--check"]) == 0
    target.write_text(target.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert hotschemas.main(["--check"]) == 1


def test_matching_bytes_use_the_module(fresh_schemas):
    for name in hotschemas.NAMES:
        check = schemas._generated(name)
        assert check is not None and check.__module__ == "skill_eval._hot_schemas", name
    schemas.make_hot(["usage"])
    assert schemas._HOT["usage"].__module__ == "skill_eval._hot_schemas"
    assert schemas.is_valid_fast(USAGE, "usage") and not schemas.is_valid_fast({**USAGE, "turns": -1}, "usage")


def test_other_bytes_of_the_same_schema_are_generated_at_run_time_with_the_same_answers(tmp_path, monkeypatch,
                                                                                        fresh_schemas):
    ahead = _hot_schemas.FACTORIES["usage"][1]()
    text = json.dumps(json.loads((ROOT / "schemas" / "usage.schema.json").read_text(encoding="utf-8")), indent=4)
    monkeypatch.setattr(schemas, "schema_dir", lambda: _schema_copy(tmp_path, "usage", text))
    assert schemas.schema_digest("usage") != _hot_schemas.FACTORIES["usage"][0]
    schemas.make_hot(["usage"])
    check = schemas._HOT["usage"]
    assert check.__module__ != "skill_eval._hot_schemas"  # generated here, from the bytes read
    docs = [USAGE, {**USAGE, "turns": -1}, {**USAGE, "turns": 1.0}, {**USAGE, "turns": True}, {**USAGE, "extra": 1},
            {k: v for k, v in USAGE.items() if k != "retries"}, {**USAGE, "cost_usd": None}, None, [], "x", {}]
    assert [check(d) for d in docs] == [ahead(d) for d in docs] == [
        True, False, True, False, False, False, True, False, False, False, False]


def test_a_changed_schema_gets_its_own_answers(tmp_path, monkeypatch, fresh_schemas):
    schema = json.loads((ROOT / "schemas" / "usage.schema.json").read_text(encoding="utf-8"))
    schema["properties"]["turns"]["minimum"] = 5
    monkeypatch.setattr(schemas, "schema_dir", lambda: _schema_copy(tmp_path, "usage", json.dumps(schema)))
    schemas.make_hot(["usage"])
    assert schemas._HOT["usage"].__module__ != "skill_eval._hot_schemas"
    assert _hot_schemas.FACTORIES["usage"][1]()(USAGE)  # the module's check, for the committed schema, says valid
    assert not schemas.is_valid_fast(USAGE, "usage")  # turns 3 < 5: the loaded schema's answer
    assert schemas.errors(USAGE, "usage") == ["turns: 3 is less than the minimum of 5"]


def test_the_reference_mode_never_answers_fast(monkeypatch, fresh_schemas):
    monkeypatch.setattr(schemas, "FAST", False)
    schemas.make_hot(["usage"])
    assert not schemas.is_valid_fast(USAGE, "usage")
    assert schemas.errors(USAGE, "usage") == []  # jsonschema's own verdict
    assert schemas.errors({**USAGE, "turns": -1}, "usage") == ["turns: -1 is less than the minimum of 0"]


def test_the_module_reads_only_what_generate_gives_its_source():
    """generate() runs the factory source in a namespace of re, Any, Check, _scalar_equal and _unique;
    the module imports exactly those (a factory reading anything else would fail in one of them)."""
    assert {"re", "Any", "Check", "_scalar_equal", "_unique"} <= set(vars(_hot_schemas))
    assert _hot_schemas._scalar_equal is fastschema._scalar_equal and _hot_schemas._unique is fastschema._unique
