"""Issue 35 item 5: `nox -s pr` composes the standalone scripts (noxfile.PR_STEPS, run by
scripts/pipeline.py) and `skill-eval pr` stays the one-process fast path; the two give the same
verdict — exit code and each step's status — on both hosts and on each failing fixture.

The composition runs here as the nox session runs it, minus the venv: scripts/pipeline.py's
`compose` with this interpreter (nox only installs the package and calls the same script).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git, git_commit_all

from skill_eval.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "towncrier-notes"


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


pipeline = _load("pipeline_script", REPO / "scripts" / "pipeline.py")


def nox_steps() -> list[str]:
    """PR_STEPS as the noxfile declares it (read, not imported: nox need not be installed here)."""
    tree = ast.parse((REPO / "noxfile.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PR_STEPS":
            return list(ast.literal_eval(node.value))
    raise AssertionError("noxfile.py declares no PR_STEPS")


def pr_verdict(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, str]]:
    """`skill-eval pr --json`: exit code and {pr step module: status}."""
    from skill_eval.commands.pr import STEPS

    module_of = {label: mod for label, mod, _ in STEPS}
    capsys.readouterr()
    rc = main(["pr", "--root", str(root), "--json", *extra])
    out = capsys.readouterr().out
    if rc == 2:
        return rc, {}
    return rc, {module_of[s["step"]]: s["status"] for s in json.loads(out)["steps"] if s["status"] != "skipped"}


def composed_verdict(root: Path, steps: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str]]:
    """scripts/pipeline.py's exit code (main: a config error is 2) and {pr step module: status}."""
    capsys.readouterr()
    rc = pipeline.main(["--root", str(root), "--json", *steps])
    out = capsys.readouterr().out
    if rc == 2:
        return rc, {}
    return rc, {pipeline.CHECKS[pipeline.parse_step(s["name"])[0]]: s["status"] for s in json.loads(out)["steps"]}


NO_SURFACE = [s for s in nox_steps() if s != "check_surface"]  # the surface step runs the subject ~14 times


def same_verdict(root: Path, capsys: pytest.CaptureFixture[str], *, surface: bool = False) -> tuple[int, dict[str, str]]:
    pr = pr_verdict(root, capsys, *([] if surface else ["--skip", "surface"]))
    composed = composed_verdict(root, nox_steps() if surface else NO_SURFACE, capsys)
    assert composed == pr
    return pr


def test_the_noxfile_steps_are_the_pr_profile_in_its_order():
    from skill_eval.commands.pr import STEPS

    steps = nox_steps()
    assert [pipeline.CHECKS[pipeline.parse_step(s)[0]] for s in steps] == [mod for _, mod, _ in STEPS]
    assert tuple(steps) == pipeline.PR_STEPS
    assert "gen_pack --check" in steps  # a pack step without --check would write the pack
    for step in steps:  # every step is a script that parses its arguments as the CLI does
        name, args = pipeline.parse_step(step)
        assert pipeline.run_script(name, [*args, "--help"]) == 0


def _noxfile(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """noxfile.py executed against a stand-in nox: its sessions by name."""
    import types

    sessions: dict[str, Any] = {}

    def session(fn: Any = None, **kw: Any) -> Any:
        if fn is None:
            return lambda f: sessions.setdefault(kw.get("name", f.__name__), f)
        return sessions.setdefault(fn.__name__, fn)

    fake = types.ModuleType("nox")
    fake.Session = _Session  # type: ignore[attr-defined]
    fake.session = session  # type: ignore[attr-defined]
    fake.options = types.SimpleNamespace()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nox", fake)
    exec(compile((REPO / "noxfile.py").read_text(encoding="utf-8"), "noxfile.py", "exec"), {"__name__": "noxfile"})
    return sessions


@pytest.mark.parametrize(("posargs", "argv"), [
    ([], ["python", "scripts/pipeline.py", *pipeline.PR_STEPS]),
    (["--json"], ["python", "scripts/pipeline.py", "--json", *pipeline.PR_STEPS]),
    (["check_evidence", "--json"], ["python", "scripts/pipeline.py", "--json", "check_evidence"]),
])
def test_the_nox_sessions_run_the_composition(monkeypatch, posargs, argv):
    sessions = _noxfile(monkeypatch)
    for name, extra in (("pr", []), ("pr-example", ["--root", "examples/towncrier-notes"])):
        session = _Session()
        session.posargs = posargs
        sessions[name](session)
        assert session.runs == [argv + extra]


def test_both_hosts_untouched_pass_alike(repo_copy, tmp_path, capsys):
    rc, steps = same_verdict(repo_copy, capsys, surface=True)
    assert rc == 0 and set(steps.values()) == {"ok"} and len(steps) == 8
    example = tmp_path / "towncrier-notes"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    git(example, "init", "-q")  # the trust policy is read from git: outside a repository nothing verifies as signed
    git_commit_all(example, "copy")
    rc, steps = same_verdict(example, capsys, surface=True)
    assert rc == 0 and steps["golden"] == "not_applicable" and steps["evidence"] == "ok"


def _edit(path: Path, fn: Any) -> None:
    path.write_text(fn(path.read_text()))


def _stale_pack(root: Path) -> None:
    pack = root / "agent-evals/skills/skill-eval-pack.json"
    doc = json.loads(pack.read_text())
    doc["entries"]["skill:abi-compat-review"]["digest"] = "f" * 64
    pack.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _broken_link(root: Path) -> None:
    _edit(root / "skills-src/abi-compat-review/SKILL.md", lambda t: t + "\nSee [gone](references/gone.md).\n")
    assert main(["generate", "--root", str(root)]) == 0


def _stale_evidence(root: Path) -> None:  # a skill edited (pack regenerated): its bundles are stale
    _edit(root / "skills-src/abi-release-matrix/SKILL.md", lambda t: t + "\nOne more line.\n")
    assert main(["generate", "--root", str(root)]) == 0 and main(["pack", "--root", str(root)]) == 0


def _missing_bundle(root: Path) -> None:
    metas = sorted((root / "agent-evals/skills/evidence").rglob("meta.json"))
    shutil.rmtree(metas[0].parent)


def _local_path(root: Path) -> None:  # (the edit also breaks the bundle's seal: the evidence step fails too)
    final = sorted((root / "agent-evals/skills/evidence").rglob("final.md"))[0]
    final.write_text(final.read_text() + "\nI worked in /tmp/sandbox-ab12cd34/work.\n")


def _broken_config(root: Path) -> None:
    _edit(root / "skill-eval.toml", lambda t: t + "\n[unknown-table]\nx = 1\n")


FIXTURES = {"stale pack": (_stale_pack, {"pack"}), "broken link": (_broken_link, {"check_skills"}),
            "stale evidence": (_stale_evidence, {"freshness", "evidence"}),
            "missing bundle": (_missing_bundle, {"evidence"}), "local path": (_local_path, {"local_paths"}),
            "broken config": (_broken_config, None)}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_each_failing_fixture_fails_alike(repo_copy, capsys, name):
    mutate, failing = FIXTURES[name]
    mutate(repo_copy)
    rc, steps = same_verdict(repo_copy, capsys)
    if failing is None:
        assert rc == 2 and steps == {}
        return
    assert rc == 1 and failing <= {m for m, s in steps.items() if s == "fail"}, steps


def test_a_failing_fixture_of_the_example_host_fails_alike(tmp_path, capsys):
    example = tmp_path / "towncrier-notes"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    _missing_bundle(example)
    rc, steps = same_verdict(example, capsys)
    assert rc == 1 and steps["evidence"] == "fail"


def test_a_host_drops_and_reorders_steps(repo_copy, capsys):
    _stale_pack(repo_copy)
    capsys.readouterr()
    rc = pipeline.main(["--root", str(repo_copy), "check_local_paths", "gen_pack --check", "check_skills"])
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith("== ")]
    assert headers == ["== check_local_paths", "== gen_pack --check", "== check_skills"]
    assert rc == 1 and "gen_pack --check fail" in out.splitlines()[-1]
    rc = pipeline.main(["--root", str(repo_copy), "check_skills", "check_local_paths"])  # the failing step dropped
    assert rc == 0, capsys.readouterr().out


def test_an_unknown_step_is_a_usage_error_before_any_step_runs(repo_copy, capsys):
    capsys.readouterr()
    rc = pipeline.main(["--root", str(repo_copy), "check_skills", "check_nothing"])
    captured = capsys.readouterr()
    assert rc == 2 and "no script scripts/check_nothing.py" in captured.err and "== " not in captured.out


def test_a_mistyped_step_argument_is_a_usage_error_before_any_step_runs(repo_copy, capsys):
    capsys.readouterr()
    rc = pipeline.main(["--root", str(repo_copy), "check_skills", "gen_pack --chek"])
    captured = capsys.readouterr()
    assert rc == 2 and "pipeline: step 'gen_pack --chek'" in captured.err and "--chek" in captured.err
    assert "== " not in captured.out


def test_the_evidence_is_read_once_for_freshness_and_evidence(repo_copy, capsys, monkeypatch):
    from skill_eval.grading import regrade

    passes: list[Path] = []
    real = regrade.run

    def counting(cfg: Any, root: Path, *a: Any, **kw: Any) -> Any:
        passes.append(root)
        return real(cfg, root, *a, **kw)

    monkeypatch.setattr(regrade, "run", counting)
    assert pipeline.main(["--root", str(repo_copy), "check_freshness", "check_evidence"]) == 0
    assert len(passes) == 1, passes
    passes.clear()  # a step that may write ends the sharing: the next step reads the evidence afresh
    assert pipeline.main(["--root", str(repo_copy), "check_freshness", "gen_pack", "check_evidence"]) == 0
    assert len(passes) == 2, passes


class _Session:
    """What the init noxfile's sessions ask of nox: the command lines they would run."""

    def __init__(self) -> None:
        self.runs: list[list[str]] = []
        self.posargs: list[str] = ["--base", "main"]

    def install(self, *args: str) -> None:
        pass

    def error(self, message: str) -> None:
        raise AssertionError(message)

    def run(self, *args: str) -> None:
        self.runs.append(list(args))


def _init_sessions(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import types

    from skill_eval.commands import init

    sessions: dict[str, Any] = {}
    fake = types.ModuleType("nox")
    fake.Session = _Session  # type: ignore[attr-defined]
    fake.session = lambda name: (lambda fn: sessions.setdefault(name, fn))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nox", fake)
    monkeypatch.setenv("SKILL_EVAL_SPEC", "skill-eval")
    namespace: dict[str, Any] = {}
    exec(init.render_snippets(["skills"], [], (None, "a test"))["noxfile_snippet.txt"], namespace)
    assert [line.replace("-", "_") for line in namespace["SKILL_EVAL_PR_STEPS"]] == [m for m in pipeline.CHECKS.values()]
    return sessions


def test_the_init_noxfile_lists_every_step_and_its_pr_runs_them_all(monkeypatch, tmp_path, capsys):
    sessions = _init_sessions(monkeypatch)
    session = _Session()
    sessions["skill-eval-pr"](session)
    (argv,) = session.runs
    assert argv[:2] == ["skill-eval", "pr"] and len(argv) == 10
    example = tmp_path / "towncrier-notes"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    _missing_bundle(example)
    listed = pr_verdict(example, capsys, *argv[2:])
    assert listed == pr_verdict(example, capsys) and listed[0] == 1  # every step listed runs: nothing skipped
    dropped = pr_verdict(example, capsys, *[a for a in argv[2:] if a != "--only=evidence"])
    assert dropped[0] == 0 and "evidence" not in dropped[1]  # a host drops the failing step by deleting its line


def test_the_init_noxfile_records_the_risk_suite(monkeypatch):
    session = _Session()
    _init_sessions(monkeypatch)["skill-eval-risk"](session)
    assert session.runs == [["skill-eval", "run", "--suite", "risk", "--base", "main"], ["skill-eval", "evidence", "compact"]]
