#!/usr/bin/env python3
"""Thin shell over `skill-eval evidence` (see `python scripts/check_evidence.py --help`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from skill_eval import cli  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli.main(["evidence", *sys.argv[1:]]))
