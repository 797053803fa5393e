"""JSON Schema (2020-12) validation at every boundary.

Schemas live in the repository's top-level `schemas/` directory (one file per
format) and ship inside the wheel as `skill_eval/schemas/`. A validation failure
becomes one line naming the file, the field path and what was wrong.

Speed: a valid instance is recognised by a compiled yes/no check (`fastschema`, property-
tested against jsonschema; the bundle schemas' generated checks are built ahead, `hotschemas`);
only an invalid or undecidable one goes through `jsonschema`, which therefore still writes every
error message. `jsonschema` itself is imported only
then (it costs ~0.1 s of start-up that valid input never needs).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_eval import fastschema, strict
from skill_eval.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Iterable

    import jsonschema

_PACKAGED = Path(__file__).parent / "schemas"
_SOURCE_TREE = Path(__file__).resolve().parents[2] / "schemas"
# SKILL_EVAL_VALIDATOR=jsonschema turns the fast path off (reference runs in tests and bench.py).
FAST = os.environ.get("SKILL_EVAL_VALIDATOR", "fast") != "jsonschema"


def schema_dir() -> Path:
    """Where the schemas are: inside an installed wheel, or the source checkout."""
    return _PACKAGED if _PACKAGED.is_dir() else _SOURCE_TREE


@functools.cache
def schema_bytes(name: str) -> bytes:
    """The schema file as read, once per process: `load_schema` parses these very bytes, and a check
    built ahead is used only for the bytes it was generated from (`schema_digest`)."""
    return strict.read_bytes(schema_dir() / f"{name}.schema.json")


def schema_digest(name: str) -> str:
    import hashlib  # here: a command that never makes a check hot does not import it

    return hashlib.sha256(schema_bytes(name)).hexdigest()


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    path = schema_dir() / f"{name}.schema.json"
    schema: dict[str, Any] = strict.loads_json(strict.decode_utf8(schema_bytes(name), path), path)  # = load_json
    return schema


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    import jsonschema

    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


@functools.cache
def _fast(name: str) -> fastschema.Check | None:
    return fastschema.compile_schema(load_schema(name))


# After this many validations against one schema in a process, its check is rebuilt as generated
# source (schemagen.generate: ~2x faster per value, ~10x dearer to build), so a schema used a few
# times per run (config, content) never pays the build and bundle schemas over thousands do. The
# bundle schemas' generated checks are also built ahead (_hot_schemas, see `hotschemas`).
GENERATE_AFTER = 300
_HOT: dict[str, fastschema.Check] = {}
_USES: dict[str, int] = {}


def make_hot(names: Iterable[str]) -> None:
    """Generate these schemas' checks now (what GENERATE_AFTER uses would do). The evidence pass
    calls it before forking its workers with the bundle schemas: built once in the parent and
    inherited, instead of once per worker after 300 slower validations each."""
    for name in names:
        if name not in _HOT:
            check = _generated(name) or _fast(name)
            if check is not None:
                _HOT[name] = check


def _check_for(name: str) -> fastschema.Check | None:
    check = _fast(name)
    if check is None:
        return None
    uses = _USES[name] = _USES.get(name, 0) + 1
    if uses >= GENERATE_AFTER:
        _HOT[name] = _generated(name) or check
    return check


def _generated(name: str) -> fastschema.Check | None:
    """`schemagen.generate`'s check for this schema: the factory built ahead (_hot_schemas) when it
    was generated from exactly the bytes this process's schema is parsed from, else generated now."""
    from skill_eval import _hot_schemas

    ahead = _hot_schemas.FACTORIES.get(name)
    if ahead is not None and ahead[0] == schema_digest(name):
        return ahead[1]()
    from skill_eval import schemagen  # only where no factory was built ahead

    return schemagen.generate(load_schema(name))


def is_valid_fast(instance: Any, name: str) -> bool:
    """True only when the compiled check is sure the instance is valid."""
    if not FAST:
        return False
    check = _HOT.get(name) or _check_for(name)
    if check is None:
        return False
    try:
        return check(instance)
    except (fastschema.Undecided, RecursionError):
        return False


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
