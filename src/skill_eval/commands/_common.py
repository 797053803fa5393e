"""Small helpers shared by command modules."""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable

from skill_eval.content import config
from skill_eval.content.config import Config


def load_config(args: argparse.Namespace) -> Config:
    """The one way a command reads the host configuration (honours --root, and --base where declared)."""
    cfg = config.load(getattr(args, "root", None))
    base = getattr(args, "trust_base", None) or getattr(args, "base", None)  # trust_base: pr's steps
    return dataclasses.replace(cfg, base_ref=base) if isinstance(base, str) and base else cfg


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse `type` accepting integers in [low, high] (`run -k -1` is a usage error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range ({low}..{high})")
        return value

    return parse


def bounded_float(low: float, high: float, *, low_inclusive: bool = True) -> Callable[[str], float]:
    """An argparse `type` accepting finite numbers in [low, high] ((low, high] when not low_inclusive)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or value > high or value < low or (value == low and not low_inclusive):
            bound = "[" if low_inclusive else "("
            raise argparse.ArgumentTypeError(f"{text} is out of range ({bound}{low:g}, {high:g}])")
        return value

    return parse


def plural(n: int, word: str) -> str:
    if n == 1:
        return f"1 {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else f"{n} {word}s"
