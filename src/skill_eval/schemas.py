"""JSON Schema (2020-12) validation at every boundary.

Schemas live in the repository's top-level `schemas/` directory (one file per
format) and ship inside the wheel as `skill_eval/schemas/`. A validation failure
becomes one line naming the file, the field path and what was wrong.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema

from skill_eval import strict
from skill_eval.errors import InputError

_PACKAGED = Path(__file__).parent / "schemas"
_SOURCE_TREE = Path(__file__).resolve().parents[2] / "schemas"


def schema_dir() -> Path:
    """Where the schemas are: inside an installed wheel, or the source checkout."""
    return _PACKAGED if _PACKAGED.is_dir() else _SOURCE_TREE


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    path = schema_dir() / f"{name}.schema.json"
    schema = strict.load_json(path)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema(name), format_checker=jsonschema.FormatChecker())


def field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def errors(instance: Any, name: str) -> list[str]:
    """All validation problems as 'field: message' strings, sorted for stable output."""
    found = []
    for err in _validator(name).iter_errors(instance):
        found.append(f"{field_path(err)}: {_short(err)}")
    return sorted(found)


def validate(instance: Any, name: str, source: object) -> Any:
    """Validate or raise InputError naming the first (most relevant) problem."""
    err = jsonschema.exceptions.best_match(_validator(name).iter_errors(instance))
    if err is not None:
        raise InputError(_short(err), source=source, field=field_path(err), fix=f"see schemas/{name}.schema.json")
    return instance


def _short(err: jsonschema.ValidationError) -> str:
    message = err.message
    if len(message) > 200:
        message = message[:197] + "..."
    return message
