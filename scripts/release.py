#!/usr/bin/env python3
"""Thin shell over `skill-eval release stage|resume|verify` (see `python scripts/release.py --help`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from skill_eval import cli  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli.main(["release", *sys.argv[1:]]))
