"""CLI surface extraction: one-process click walk, --help fallback, and the installation cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skill_eval.checks import surface

ROOT = Path(__file__).resolve().parents[2]
ABICHECK = Path(sys.executable).parent / "abicheck"
needs_abicheck = pytest.mark.skipif(not ABICHECK.is_file(), reason="abicheck not installed beside the interpreter")


@pytest.mark.slow
@needs_abicheck
def test_click_walk_equals_help_parsing_on_abicheck():
    walked = surface.walk_click(ABICHECK)
    parsed = surface.extract_by_help(ABICHECK)
    assert walked is not None
    assert walked == parsed
    committed = json.loads((ROOT / "agent-evals/skills/surface/abicheck-cli.json").read_text())
    assert walked == committed


def _fake_tool(tmp_path: Path, body: str, *, click_cli: bool = True) -> Path:
    """A console script + dist-info in a fake prefix, run by the current interpreter."""
    prefix = tmp_path / "env"
    site = prefix / "lib" / "python3.11" / "site-packages"
    pkg = site / "faketool"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(body)
    info = site / "faketool-1.2.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[console_scripts]\nfaketool = faketool:main\n")
    (info / "RECORD").write_text("faketool/__init__.py,,\nfaketool-1.2.dist-info/RECORD,,\n")
    bin_dir = prefix / "bin"
    bin_dir.mkdir()
    # the wrapper's interpreter must see click (installed in this venv) and the fake package
    py = bin_dir / "python"
    py.write_text(f"#!/bin/sh\nPYTHONPATH={site}:{os.pathsep.join(sys.path[1:])} exec {sys.executable} \"$@\"\n")
    py.chmod(0o755)
    tool = bin_dir / "faketool"
    tool.write_text(f"#!{py}\nimport sys\nfrom faketool import main\nsys.exit(main())\n")
    tool.chmod(0o755)
    return tool


CLICK_TOOL = '''
import click

@click.group()
@click.version_option(version="1.2", prog_name="faketool")
def main():
    """Fake."""

@main.command()
@click.option("-o", "--output")
@click.option("--secret", hidden=True)
@click.option("--color/--no-color")
def run(output, secret, color):
    """Run."""

@main.command(hidden=True)
def internal():
    pass
'''


def test_walk_reads_options_commands_and_version(tmp_path):
    tool = _fake_tool(tmp_path, CLICK_TOOL)
    ref = surface.walk_click(tool)
    assert ref == {"schema_version": 1, "tool": "faketool", "version": "1.2", "commands": {
        "": {"options": ["--help", "--version"]},
        "run": {"options": ["--color", "--help", "--no-color", "--output", "--secret", "-o"]}}}


def test_non_click_tool_falls_back_to_help(tmp_path):
    tool = _fake_tool(tmp_path, "def main():\n    print('not click')\n")
    assert surface.walk_click(tool) is None
    script = tmp_path / "plain.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    assert surface.walk_click(script) is None  # not a python console script at all


def test_cache_hit_runs_nothing_and_an_edit_moves_the_key(tmp_path, monkeypatch):
    tool = _fake_tool(tmp_path, CLICK_TOOL)
    cache_root = tmp_path / "repo"
    first = surface.extract(tool, cache_root=cache_root)
    assert list((cache_root / surface.CACHE_DIR).glob("*.json"))
    key = surface.cache_key(tool)

    def boom(*a, **k):
        raise AssertionError("the subject was run despite an unchanged installation")
    monkeypatch.setattr(subprocess, "run", boom)
    assert surface.extract(tool, cache_root=cache_root) == first
    monkeypatch.undo()

    pkg = tool.parent.parent / "lib/python3.11/site-packages/faketool/__init__.py"
    pkg.write_text(CLICK_TOOL.replace('"--output"', '"--out"'))
    os.utime(pkg, ns=(1, 1))  # different mtime and size
    assert surface.cache_key(tool) != key
    changed = surface.extract(tool, cache_root=cache_root)
    assert "--out" in changed["commands"]["run"]["options"]


def test_corrupt_cache_entry_is_recomputed(tmp_path):
    tool = _fake_tool(tmp_path, CLICK_TOOL)
    cache_root = tmp_path / "repo"
    first = surface.extract(tool, cache_root=cache_root)
    (entry,) = (cache_root / surface.CACHE_DIR).glob("*.json")
    entry.write_text('{"schema_version": 1, "schema_version": 1}')
    assert surface.extract(tool, cache_root=cache_root) == first
