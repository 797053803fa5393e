"""One agent launch (issue 37 item 2): every path that starts an agent goes through runner/launch.py,
and no private name crosses a package boundary."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "skill_eval"


def _modules() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(SRC).as_posix(), ast.parse(p.read_text(), filename=str(p))) for p in sorted(SRC.rglob("*.py"))]


def _package(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def test_no_private_name_is_imported_across_packages():
    crossing = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("skill_eval"):
                target = node.module.removeprefix("skill_eval").lstrip(".").replace(".", "/")
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and not (target == _package(rel) or target.rsplit("/", 1)[0] == _package(rel)):
                        crossing.append(f"{rel}: from {node.module} import {alias.name}")
    assert crossing == []


def test_only_the_launch_wraps_and_spawns_an_agent():
    """isolation.wrap (the agent's sandbox argv) and the agent's spawn appear in runner/launch.py alone:
    run_item, the release's recording and propose all call AgentLaunch."""
    callers = set()
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                owner = node.func.value.id if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) else None
                if (owner == "isolation" and name == "wrap") or name in ("spawn", "AgentLaunch"):
                    callers.add((rel, name))
    wraps = {rel for rel, name in callers if name in ("wrap", "spawn")}
    assert wraps == {"harness/runner/launch.py"}
    assert {rel for rel, name in callers if name == "AgentLaunch"} == {"harness/runner/execute.py", "improve/sandbox.py"}
    session = (SRC / "harness/runner/session.py").read_text()
    assert "run_item(" in session  # the release's recording runs the ordinary run_item
