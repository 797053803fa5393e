"""Small helpers shared by command modules."""

from __future__ import annotations

import argparse

from skill_eval import config
from skill_eval.config import Config


def load_config(args: argparse.Namespace) -> Config:
    return config.load(getattr(args, "root", None))


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
