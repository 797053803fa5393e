"""Every source path a test names exists: a test that globs or reads a folder the code no longer has
passes by looking at nothing (a regroup once left `src/skill_eval/graders` behind in a test whose loop
then never ran). Paths are read from the tests' syntax: `... / "src" / "skill_eval" / "x"` chains and
string literals naming `src/skill_eval/...`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
LITERAL = re.compile(r"\bsrc/skill_eval(?:/[A-Za-z0-9_.*-]+)*")


def _operands(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _operands(node.left) + _operands(node.right)
    return [node]


def _chain(node: ast.BinOp) -> str | None:
    """'src/skill_eval/...' from a `/` chain of string constants that starts at "src", else None."""
    parts: list[str] = []
    for operand in _operands(node):
        value = operand.value if isinstance(operand, ast.Constant) and isinstance(operand.value, str) else None
        if parts and value is None:
            break
        if value == "src" or parts:
            parts.append(value or "")
    return "/".join(parts) if len(parts) > 1 and parts[1] == "skill_eval" else None


def named_paths(source: str) -> set[str]:
    tree = ast.parse(source)
    found: set[str] = set()
    inner = {id(n.left) for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            chain = None if id(node) in inner else _chain(node)
            if chain:
                found.add(chain)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(m.rstrip(".") for m in LITERAL.findall(node.value))
    return found


def _exists(rel: str) -> bool:
    if "*" in rel:
        return any(REPO.glob(rel))
    return (REPO / rel).exists()


def test_every_source_path_a_test_names_exists():
    missing = []
    checked = 0
    for path in sorted(TESTS.rglob("*.py")):
        if "data" in path.relative_to(TESTS).parts or path == Path(__file__).resolve():
            continue
        for rel in sorted(named_paths(path.read_text(encoding="utf-8"))):
            checked += 1
            if not _exists(rel):
                missing.append(f"{path.relative_to(REPO)}: {rel}")
    assert checked > 5, "the scan found no source path in the tests: the scanner itself is broken"
    assert not missing, "tests name source paths that do not exist:\n" + "\n".join(missing)


def test_the_scan_sees_a_stale_path():
    src = 'for p in (REPO / "src" / "skill_eval" / "graders").glob("*.py"): pass\nx = "src/skill_eval/nope.py"\n'
    assert named_paths(src) == {"src/skill_eval/graders", "src/skill_eval/nope.py"}
    assert not _exists("src/skill_eval/graders") and _exists("src/skill_eval/grading/graders")
