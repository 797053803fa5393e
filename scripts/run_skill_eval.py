#!/usr/bin/env python3
"""Thin shell over `skill-eval run` (see `python scripts/run_skill_eval.py --help`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from skill_eval.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
