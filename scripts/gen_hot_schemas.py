#!/usr/bin/env python3
"""Thin shell over skill_eval.hotschemas: `python scripts/gen_hot_schemas.py [--check]`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from skill_eval.hotschemas import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
