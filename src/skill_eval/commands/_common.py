"""Small helpers shared by command modules."""

from __future__ import annotations

import argparse

from skill_eval import config
from skill_eval.config import Config


def load_config(args: argparse.Namespace) -> Config:
    return config.load(getattr(args, "root", None))


def plural(n: int, word: str) -> str:
    if n == 1:
        return f"1 {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else f"{n} {word}s"
