"""Modules by role: no import cycle, and no upward import across the declared layers.

Why a test and not a convention: the graders judge what the runner and the agent produced, so a
grader that imports the runner (or an adapter) could start trusting what it should be checking;
the core readers are imported by everything, so one upward import there drags half the package
into every start-up and makes cycles easy. The table below is the rule; docs/ARCHITECTURE.md
shows the same table (a test keeps them equal).

Every `import` and `from ... import` statement counts, at any depth (function-level imports
included: a lazy import is still a dependency). Imports under `if TYPE_CHECKING:` count for
layers but not for cycles (they never execute). Dynamic imports (`importlib.import_module`)
are not seen: the command table in cli.py is the one deliberate use.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "skill_eval"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md"

# (rank, layer, module patterns relative to the package; "x.*" = x and everything below it;
# "__init__" = the package itself). A module may import modules of a lower rank, or of its own
# layer. Two layers of the same rank are independent: neither imports the other.
LAYERS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (0, "core", ("__init__", "core.*")),
    (1, "content", ("content.*",)),
    (2, "checks", ("checks.*",)),
    (2, "grading", ("grading.*",)),
    (2, "harness", ("harness.*",)),
    (2, "interop", ("interop.*",)),
    (3, "reporting", ("reporting.*",)),
    (3, "local", ("local.*",)),
    (3, "improve", ("improve.*",)),
    (4, "commands", ("commands.*",)),
    (5, "entry", ("cli", "__main__")),
)
ENTRY_POINTS = {"__init__", "__main__", "cli"}  # the only modules directly in src/skill_eval/

# Known exceptions, each with its reason. The test fails if one is no longer needed (delete it then).
KNOWN_CYCLES: dict[frozenset[str], str] = {}
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Edge:
    source: str  # importing module, relative to the package ("__init__" = the package)
    target: str
    line: int
    type_only: bool  # under `if TYPE_CHECKING:`


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` under `root`, by name relative to the package."""
    out: dict[str, Path] = {}
    base = root / package
    for path in sorted(base.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts) or "__init__"] = path
    return out


def _absolute(name: str, package: str) -> str:
    return package if name == "__init__" else f"{package}.{name}"


def _relative(dotted: str, package: str) -> str:
    return "__init__" if dotted == package else dotted.removeprefix(package + ".")


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Line numbers of statements inside `if TYPE_CHECKING:` (any object of that name)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                for stmt in node.body:
                    lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def imports_of(name: str, path: Path, modules: dict[str, Path], package: str) -> list[Edge]:
    """The package-internal imports of one module (every statement, at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    type_only = _type_checking_lines(tree)
    known = {_absolute(m, package) for m in modules}
    here = _absolute(name, package)
    is_package = path.name == "__init__.py"
    edges: list[Edge] = []

    def add(dotted: str, line: int) -> None:
        while dotted and dotted not in known:  # `import pkg.mod.attr`-style: the longest module prefix
            dotted = dotted.rpartition(".")[0]
        if dotted and dotted != here:
            edges.append(Edge(name, _relative(dotted, package), line, line in type_only))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == package or alias.name.startswith(package + "."):
                    add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".") if is_package else here.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            if not (origin == package or origin.startswith(package + ".")):
                continue
            for alias in node.names:
                sub = f"{origin}.{alias.name}"
                add(sub if sub in known else origin, node.lineno)  # a submodule, else a name from `origin`
    return edges


def all_edges(root: Path, package: str) -> list[Edge]:
    modules = module_names(root, package)
    return [e for name, path in modules.items() for e in imports_of(name, path, modules, package)]


def cycles(edges: list[Edge]) -> list[list[str]]:
    """Every import cycle (strongly connected set of 2+ modules, or a module importing itself), each
    reported as a path a -> b -> ... -> a through it. TYPE_CHECKING-only imports never run: skipped."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if not e.type_only:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan; depth is bounded by the package's import depth
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(_path_through(sorted(members), graph))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _path_through(members: list[str], graph: dict[str, set[str]]) -> list[str]:
    """The shortest closed walk from the first member back to it, inside the cycle's members (BFS)."""
    inside, start = set(members), members[0]
    parent: dict[str, str] = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & inside):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [*reversed(path), start]
            if w not in parent:
                parent[w] = v
                queue.append(w)
    raise AssertionError(f"no cycle through {members}")  # a strongly connected set always has one


def layer_of(module: str, layers: tuple[tuple[int, str, tuple[str, ...]], ...]) -> tuple[int, str] | None:
    for rank, layer, patterns in layers:
        for p in patterns:
            if module == p or (p.endswith(".*") and (module == p[:-2] or module.startswith(p[:-1]))):
                return rank, layer
    return None


def upward(edges: list[Edge], modules: list[str], layers: tuple[tuple[int, str, tuple[str, ...]], ...]) -> list[str]:
    """Problems: a module in no layer; an import of a higher layer or of another layer of the same rank."""
    problems = [f"{m}: in no layer of the table (add it where its role is)" for m in sorted(modules)
                if layer_of(m, layers) is None]
    for e in edges:
        src, dst = layer_of(e.source, layers), layer_of(e.target, layers)
        if src is None or dst is None or src[1] == dst[1] or dst[0] < src[0]:
            continue
        kind = "an independent layer" if dst[0] == src[0] else "a higher layer"
        problems.append(f"{e.source} (line {e.line}, {src[1]}) imports {e.target} ({dst[1]}): {kind}")
    return problems


# -- the rules on skill_eval ------------------------------------------------------------------


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return all_edges(SRC, PACKAGE)


def test_no_import_cycle(edges: list[Edge]) -> None:
    found = cycles(edges)
    unexpected = [c for c in found if frozenset(c) not in KNOWN_CYCLES]
    assert not unexpected, "import cycles: " + "; ".join(" -> ".join(c) for c in unexpected)
    stale = set(KNOWN_CYCLES) - {frozenset(c) for c in found}
    assert not stale, f"KNOWN_CYCLES entries no longer needed (delete them): {sorted(map(sorted, stale))}"


def test_no_upward_import(edges: list[Edge]) -> None:
    checked = [e for e in edges if (e.source, e.target) not in KNOWN_UPWARD]
    problems = upward(checked, list(module_names(SRC, PACKAGE)), LAYERS)
    assert not problems, "\n".join(problems)
    stale = set(KNOWN_UPWARD) - {(e.source, e.target) for e in edges}
    assert not stale, f"KNOWN_UPWARD entries no longer needed (delete them): {sorted(stale)}"


def test_graders_never_import_the_harness_or_the_front_end(edges: list[Edge]) -> None:
    """Stated on its own (the layer table implies it): graders judge the runner's records."""
    banned = ("harness", "commands", "cli")
    bad = [f"{e.source} line {e.line} imports {e.target}" for e in edges
           if e.source.startswith("grading.")
           and any(e.target == b or e.target.startswith(b + ".") for b in banned)]
    assert not bad, bad


def test_the_grading_path_reads_one_way(edges: list[Edge]) -> None:
    """gate (evidence) -> pass (regrade) -> graders -> bundle: nothing lower imports anything higher."""
    order = ["grading.evidence", "grading.regrade", "grading.graders", "grading.bundle"]
    rank = {m: i for i, m in enumerate(order)}

    def step(module: str) -> int | None:
        for m, i in rank.items():
            if module == m or module.startswith(m + "."):
                return i
        return None

    bad = [f"{e.source} line {e.line} imports {e.target}" for e in edges
           if (s := step(e.source)) is not None and (t := step(e.target)) is not None and t < s]
    assert not bad, bad


def test_folders_are_the_layers() -> None:
    """Only entry points sit at the top; every folder is one layer's package (or below one), and
    says in its docstring what lives there."""
    top = {p.stem for p in (SRC / PACKAGE).glob("*.py")}
    assert top == ENTRY_POINTS, top - ENTRY_POINTS
    layer_packages = {pattern.removesuffix(".*") for _, _, patterns in LAYERS for pattern in patterns
                      if pattern.endswith(".*")}
    folders = {p.name for p in (SRC / PACKAGE).iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert folders == layer_packages, folders ^ layer_packages
    for name in sorted(folders):
        doc = ast.get_docstring(ast.parse((SRC / PACKAGE / name / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 40, f"{name}/__init__.py: say what lives here and what it may import"


def test_only_the_front_end_imports_commands(edges: list[Edge]) -> None:
    bad = [f"{e.source} line {e.line} imports {e.target}" for e in edges
           if e.target.startswith("commands") and not (e.source in ("cli", "__main__") or e.source.startswith("commands"))]
    assert not bad, bad


def test_core_modules_import_only_core(edges: list[Edge]) -> None:
    def core(m: str) -> bool:
        return m == "__init__" or m.startswith("core.")

    bad = [f"{e.source} line {e.line} imports {e.target}" for e in edges if core(e.source) and not core(e.target)]
    assert not bad, bad


def render_table(layers: tuple[tuple[int, str, tuple[str, ...]], ...] = LAYERS) -> str:
    rows = ["| rank | layer | modules (`skill_eval.`; `x.*` = x and below; `__init__` = the package) |", "|---|---|---|"]
    rows += [f"| {rank} | {layer} | {', '.join(f'`{p}`' for p in patterns)} |" for rank, layer, patterns in layers]
    return "\n".join(rows)


def test_architecture_doc_shows_this_table() -> None:
    table = render_table()
    assert table in DOCS.read_text(encoding="utf-8"), f"docs/ARCHITECTURE.md must contain the layer table:\n{table}"


# -- the checker itself, on a synthetic package -----------------------------------------------

TOY_LAYERS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (0, "core", ("__init__", "base", "util")),
    (1, "grading", ("graders.*",)),
    (1, "harness", ("runner.*",)),
    (2, "commands", ("commands.*",)),
)


def _toy(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "toy" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


CLEAN = {
    "__init__.py": "",
    "base.py": "",
    "util.py": "from toy import base\n",
    "graders/__init__.py": "from toy.graders import rules\n",
    "graders/rules.py": "from .. import util\nfrom toy.base import something\n",
    "runner/__init__.py": "",
    "runner/run.py": "import toy.util\n",
    "commands/go.py": "from toy.graders import rules\nfrom toy.runner import run\n",
}


def test_checker_accepts_a_clean_package(tmp_path: Path) -> None:
    root = _toy(tmp_path, CLEAN)
    found = all_edges(root, "toy")
    assert {(e.source, e.target) for e in found} == {
        ("util", "base"), ("graders", "graders.rules"), ("graders.rules", "util"), ("graders.rules", "base"),
        ("runner.run", "util"), ("commands.go", "graders.rules"), ("commands.go", "runner.run")}
    assert cycles(found) == []
    assert upward(found, list(module_names(root, "toy")), TOY_LAYERS) == []


def test_checker_reports_a_function_level_cycle(tmp_path: Path) -> None:
    root = _toy(tmp_path, {**CLEAN, "base.py": """
        def later():
            from toy import util
            return util
        """})
    assert cycles(all_edges(root, "toy")) == [["base", "util", "base"]]


def test_checker_ignores_type_checking_imports_for_cycles_not_for_layers(tmp_path: Path) -> None:
    root = _toy(tmp_path, {**CLEAN, "base.py": """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from toy.graders import rules
        """})
    found = all_edges(root, "toy")
    assert cycles(found) == []  # base -> rules -> base only on paper
    assert upward(found, list(module_names(root, "toy")), TOY_LAYERS) == [
        "base (line 4, core) imports graders.rules (grading): a higher layer"]


def test_checker_reports_upward_and_sideways_imports(tmp_path: Path) -> None:
    root = _toy(tmp_path, {**CLEAN,
                           "util.py": "def f():\n    import toy.commands.go\n",
                           "graders/rules.py": "from toy.runner.run import x\n"})
    problems = upward(all_edges(root, "toy"), list(module_names(root, "toy")), TOY_LAYERS)
    assert sorted(problems) == ["graders.rules (line 1, grading) imports runner.run (harness): an independent layer",
                                "util (line 2, core) imports commands.go (commands): a higher layer"]


def test_checker_reports_a_module_outside_the_table(tmp_path: Path) -> None:
    root = _toy(tmp_path, {**CLEAN, "stray.py": ""})
    assert upward(all_edges(root, "toy"), list(module_names(root, "toy")), TOY_LAYERS) == [
        "stray: in no layer of the table (add it where its role is)"]


def test_no_module_over_600_lines() -> None:
    """One concept per module: past ~600 lines a module holds two (split it along its concepts)."""
    long = {name: n for name, path in module_names(SRC, PACKAGE).items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, long


def test_no_compiled_or_generated_source() -> None:
    """A pure-Python package: no C source, no build hook, no module generated from another file."""
    found = [p.relative_to(SRC).as_posix() for p in (SRC / PACKAGE).rglob("*")
             if p.suffix in (".c", ".h", ".pyx", ".so", ".pyi") and "__pycache__" not in p.parts]
    assert not found, found
    assert not (SRC.parent / "hatch_build.py").exists()
    generated = [name for name, path in module_names(SRC, PACKAGE).items()
                 if "GENERATED" in path.read_text(encoding="utf-8")[:400]]
    assert not generated, generated
