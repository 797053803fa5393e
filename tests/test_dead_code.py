"""The dead-code check of `make lint` (vulture with [tool.vulture] in pyproject.toml) passes on the source
and fails on a function nothing calls: the check can fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def vulture(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vulture"], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_source_has_no_dead_code():
    done = vulture(REPO)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_planted_dead_function_is_found(tmp_path):
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests").mkdir()
    shutil.copy2(REPO / "tests" / "vulture_whitelist.py", tmp_path / "tests")
    shutil.copy2(REPO / "pyproject.toml", tmp_path)
    with (tmp_path / "src/skill_eval/core/hashing.py").open("a", encoding="utf-8") as fh:
        fh.write("\n\ndef nobody_calls_this() -> int:\n    return 1\n")
    done = vulture(tmp_path)
    assert done.returncode != 0 and "nobody_calls_this" in done.stdout, done.stdout + done.stderr
