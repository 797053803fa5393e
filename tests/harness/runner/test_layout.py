"""The agent's fixed paths and the host paths behind them (runner/layout.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skill_eval.harness.runner import layout
from skill_eval.harness.runner.layout import Layout

ROOT = Path(__file__).resolve().parents[3]


def test_fixed_layout_maps_both_ways_and_leaves_other_paths_alone(tmp_path: Path):
    lay = Layout.of(tmp_path / "sandbox-1-abc", fixed=True)
    assert lay.visible(lay.work / "a" / "b.so") == "/work/a/b.so"
    assert lay.visible(lay.home / ".claude" / "skills") == "/home/agent/.claude/skills"
    assert lay.visible(lay.bin) == "/run/skill-eval/bin" and lay.visible(lay.sock / "recorder.sock") == "/run/skill-eval/sock/recorder.sock"
    assert lay.visible(str(lay.work) + "2/x") == str(lay.work) + "2/x"  # a sibling is not inside
    assert lay.host("/work/a/b.so") == lay.work / "a" / "b.so" and lay.host("/workspace") == Path("/workspace")
    assert lay.host("/home/agent") == lay.home and lay.host("/usr/bin/env") == Path("/usr/bin/env")
    ident = Layout.of(tmp_path / "s", fixed=False)
    assert ident.visible(ident.work / "x") == str(ident.work / "x") and ident.host(str(ident.work)) == ident.work


def test_the_agents_path_keeps_only_system_directories_when_fixed(tmp_path: Path):
    lay = Layout.of(tmp_path, fixed=True)
    base = os.pathsep.join([str(ROOT / ".venv" / "bin"), "/root/.pyenv/shims", "/usr/local/bin", "/usr/bin", "", "/bin"])
    assert lay.path_env(base) == os.pathsep.join(["/run/skill-eval/bin", "/usr/local/bin", "/usr/bin", "/bin"])
    assert Layout.of(tmp_path, fixed=False).path_env(base).split(os.pathsep)[1] == str(ROOT / ".venv" / "bin")


def test_mirror_links_without_compiled_files_and_keeps_relative_links(tmp_path: Path):
    src = tmp_path / "src"
    (src / "pkg" / "__pycache__").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("x = 1\n")
    (src / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(str(src).encode())  # embeds a host path
    (src / ".bin").mkdir()
    os.symlink("../pkg/a.py", src / ".bin" / "a")
    layout.mirror(src, tmp_path / "dest")
    dest = tmp_path / "dest"
    assert (dest / "pkg" / "a.py").read_text() == "x = 1\n" and not (dest / "pkg" / "__pycache__").exists()
    assert os.readlink(dest / ".bin" / "a") == "../pkg/a.py" and (dest / ".bin" / "a").read_text() == "x = 1\n"


def test_cli_root_is_the_folder_holding_node_modules_or_none_for_a_system_cli(tmp_path: Path):
    cli = tmp_path / "clis" / "node_modules" / "@x" / "cli" / "bin" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("")
    (tmp_path / "clis" / "node_modules" / ".bin").mkdir()
    os.symlink("../@x/cli/bin/cli.js", tmp_path / "clis" / "node_modules" / ".bin" / "cli")
    assert layout.cli_root(str(tmp_path / "clis" / "node_modules" / ".bin" / "cli")) == tmp_path / "clis"
    assert layout.cli_root("/usr/bin/env") is None


def test_the_loop_library_alone_runs_the_in_process_loop(tmp_path: Path):
    """The in-process loop imports only skill_eval and LOOP_PACKAGES: with the copied library and no
    site-packages (-I -S), it parses a committed YAML model script and validates it against its schema."""
    py, prefix = layout.sandbox_python()
    if prefix is not None:
        pytest.skip("no system interpreter of this Python version")
    lib = layout.loop_library(tmp_path / "lib")
    assert not list(lib.rglob("__pycache__")) and (lib / "skill_eval" / "schemas" / "model_script.schema.json").is_file()
    script = next((ROOT / "agent-evals" / "skills" / "model-scripts" / "careful").glob("*.yaml"))
    probe = ("import sys; sys.path.insert(0, sys.argv[1])\n"
             "import skill_eval.harness.adapters.agent_loop\n"
             "from skill_eval.harness.modelserver.script import load_script\n"
             "from pathlib import Path\n"
             "print(load_script(Path(sys.argv[2])).model_id)\n"
             "outside = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, '__file__', None)\n"
             "  and not m.__file__.startswith((sys.argv[1], sys.base_prefix, '/usr/lib'))})\n"
             "print(outside)\n")
    res = subprocess.run([py, "-I", "-S", "-c", probe, str(lib), str(script)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    model_id, outside = res.stdout.splitlines()
    assert model_id.startswith("scripted:") and outside == "[]"
    assert sys.prefix not in res.stdout
