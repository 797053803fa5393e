"""Strict readers for every file format skill-eval consumes.

Evidence is checked, never trusted, so a reader must refuse anything ambiguous:
duplicate keys (which value would a grader see?), a BOM, invalid UTF-8, NaN,
trailing data, truncated documents. Each refusal is an InputError naming the file.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any

import yaml

from skill_eval.errors import InputError

_BOM = b"\xef\xbb\xbf"


def decode_utf8(data: bytes, source: object) -> str:
    """Decode bytes as UTF-8, refusing a BOM and invalid sequences."""
    if data.startswith(_BOM):
        raise InputError("starts with a UTF-8 byte-order mark", source=source, fix="save the file as UTF-8 without BOM")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"invalid UTF-8 at byte {exc.start}", source=source, fix="save the file as UTF-8"
        ) from None


def read_bytes(path: Path, *, max_bytes: int | None = None) -> bytes:
    """Read a regular file, refusing symlinks, directories and oversized files."""
    try:
        if path.is_symlink():
            raise InputError("is a symlink; symlinks are refused", source=path, fix="replace it with a regular file")
        if not path.is_file():
            raise InputError("missing or not a regular file", source=path)
        if max_bytes is not None and path.stat().st_size > max_bytes:
            raise InputError(f"larger than the {max_bytes}-byte cap", source=path)
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", source=path) from None


def read_text(path: Path, *, max_bytes: int | None = None) -> str:
    return decode_utf8(read_bytes(path, max_bytes=max_bytes), path)


def _reject_duplicates(source: object):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise InputError(f"duplicate JSON key {key!r}", source=source, fix="keep exactly one entry per key")
            out[key] = value
        return out

    return hook


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def loads_json(text: str, source: object) -> Any:
    """Parse one strict JSON document (no duplicates at any depth, no NaN, no trailing data)."""
    if text.startswith("\ufeff"):
        raise InputError("starts with a byte-order mark", source=source, fix="remove the BOM")
    try:
        value = json.loads(
            text,
            object_pairs_hook=_reject_duplicates(source),
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except InputError:
        raise
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=source
        ) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"invalid JSON: {exc}", source=source) from None
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is not finite")
    return value


def load_json(path: Path, *, max_bytes: int | None = None) -> Any:
    return loads_json(read_text(path, max_bytes=max_bytes), path)


def dumps_json(value: Any) -> str:
    """The project's one JSON writer: sorted keys, 2-space indent, trailing newline."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "unhashable mapping key", key_node.start_mark
            ) from None
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def loads_yaml(text: str, source: object) -> Any:
    """Parse exactly one YAML document with safe types and no duplicate keys."""
    try:
        docs = list(yaml.load_all(text, Loader=_StrictLoader))  # noqa: S506 - strict SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML{where}: {problem}", source=source) from None
    if len(docs) != 1:
        raise InputError(f"expected exactly one YAML document, found {len(docs)}", source=source)
    return docs[0]


def load_yaml(path: Path) -> Any:
    return loads_yaml(read_text(path), path)


def load_toml(path: Path) -> dict[str, Any]:
    text = read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", source=path) from None
