#!/usr/bin/env python3
"""Thin shell over `skill-eval surface` (see `python scripts/check_surface.py --help`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

try:
    import skill_eval.commands.surface  # noqa: F401 - its dependencies too, so a missing one gets the hint
    from skill_eval.cli import main
except ImportError as exc:  # skill-eval (or a dependency of it) is not installed for this Python
    sys.exit(f"{Path(__file__).name}: skill-eval is not installed for {sys.executable} ({exc}); install it: "
             "pip install /path/to/skill-eval-checkout (or pipx install git+<skill-eval repository URL>)")

if __name__ == "__main__":
    sys.exit(main(["surface", *sys.argv[1:]]))
