"""Printing results for people (short lines) or machines (`--json`, one object)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

BATCH_CHARS = 1 << 13  # text lines are written ~8 KiB at a time (stdout's own buffer size)


def emit(args: Any, text_lines: Iterable[str], payload: dict[str, Any]) -> None:
    """`text_lines` may be a generator (printed as it goes: long outputs are never held whole)."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    else:
        write_lines(text_lines)


def write_lines(lines: Iterable[str]) -> None:
    """What `print(line)` for each line writes, joined into one write per ~8 KiB: print makes two
    writes per line, each a system call when stdout is unbuffered (PYTHONUNBUFFERED) or, per line,
    on a terminal."""
    out = sys.stdout
    batch: list[str] = []
    size = 0
    try:
        for line in lines:
            batch.append(line)
            size += len(line) + 1
            if size >= BATCH_CHARS:
                batch.append("")
                out.write("\n".join(batch))
                batch.clear()
                size = 0
    finally:  # lines made before a failure are written, as print wrote them as they came
        if batch:
            batch.append("")
            out.write("\n".join(batch))
