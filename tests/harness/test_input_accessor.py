"""The runner and shim read and write files only through designated helpers.

Freshness's completeness check trusts `observed_inputs`, which the InputRecorder builds. If
runner code opened repository files any other way, a run could depend on an input no digest
covers. Each module under runner/ (and shim.py) may touch files only inside the functions it
lists in FILE_IO_HELPERS (which handle sandbox-private paths); everything else must go
through skill_eval.content.inputs.InputRecorder or the bundle writer.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "skill_eval"
MODULES = sorted((SRC / "harness" / "runner").glob("*.py")) + [SRC / "harness" / "shim.py"]
FILE_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "load_json", "load_yaml", "load_toml",
              "read_json", "fdopen", "walk_tree", "tree_digest", "copyfile", "copy2", "copytree", "load_script"}
# Methods of objects that are themselves accessors or sandbox-private (recorder, writer, box)
ALLOWED_RECEIVERS = {"recorder", "writer", "self", "box", "fh", "fo", "fe", "out", "capture"}


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    helpers: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "FILE_IO_HELPERS" for t in node.targets):
            helpers = set(ast.literal_eval(node.value))
    found = []

    def visit(node: ast.AST, func: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            name = func
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = child.name
            if isinstance(child, ast.Call):
                f = child.func
                called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                receiver = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
                if called in FILE_CALLS and name not in helpers and receiver not in ALLOWED_RECEIVERS:
                    found.append(f"{path.name}:{child.lineno} {called}() in {name or '<module>'}")
            visit(child, name)

    visit(tree, None)
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_file_access_only_through_helpers(path):
    assert _violations(path) == []


def test_scanner_catches_a_direct_open(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("FILE_IO_HELPERS = ('_ok',)\ndef _ok(p):\n    return open(p).read()\ndef sneaky(p):\n    return p.read_text()\n")
    assert _violations(bad) == ["bad.py:5 read_text() in sneaky"]
