"""Stub of the compiled fast path (src/skill_eval/_fastjson.c, built by hatch_build.py)."""

from types import NotImplementedType
from typing import Any

DEPTH_LIMIT: int
MAX_INT_DIGITS: int

def loads(text: str, /) -> Any:
    """The value of `text` when it is plainly a valid strict JSON document, else NotImplemented."""

def loads_lines(text: str, /) -> list[Any] | NotImplementedType:
    """The values of `text` as strict JSON Lines, else NotImplemented."""
