"""The optional compiled fast paths (`_fastjson`, `_fastio`; compiled at install by hatch_build.py).

Each accelerates a Python path that is complete on its own and declines to it whatever is not its
plain case; `optional` gives the module, or None when it was not built or its switch turns it off
(`SKILL_EVAL_FASTJSON=0`, `SKILL_EVAL_FASTIO=0`: the reference runs)."""

from __future__ import annotations

import importlib
import os
import types


def optional(module: str, switch: str) -> types.ModuleType | None:
    """`skill_eval.<module>`, or None when it is absent or the environment sets `switch` to 0."""
    if os.environ.get(switch) == "0":
        return None
    try:
        return importlib.import_module(f"skill_eval.{module}")
    except ImportError:
        return None
