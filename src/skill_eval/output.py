"""Printing results for people (short lines) or machines (`--json`, one object)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any


def emit(args: Any, text_lines: Iterable[str], payload: dict[str, Any]) -> None:
    """`text_lines` may be a generator (printed as it goes: long outputs are never held whole)."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    else:
        for line in text_lines:
            print(line)
