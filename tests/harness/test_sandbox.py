"""The per-run sandbox: fixture copy through the input recorder, isolation, shim, tree/git facts, secrets."""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest

from skill_eval.content.inputs import InputRecorder
from skill_eval.core import hashing, schemas
from skill_eval.harness.runner import sandbox as sandbox_mod
from skill_eval.harness.runner.sandbox import (
    TIMEOUT_EXIT,
    Sandbox,
    SandboxError,
    SecretLeak,
    assert_no_secrets,
    redact,
    secret_values,
)

ROOT = Path(__file__).resolve().parents[2]
RUNNER_MODULES = [ROOT / "src" / "skill_eval" / "harness" / "runner" / n for n in ("sandbox.py", "bundle_writer.py")]


def profile() -> SimpleNamespace:
    return SimpleNamespace(name="tool", real_env="SKILL_EVAL_REAL", format_dest_options=("-o",), path_options=(),
                           directory_options=(), stdout_token="-")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A host repository with one fixture case and a fake real tool outside it."""
    repo = tmp_path / "repo"
    case = repo / "fixtures" / "case"
    (case / "old").mkdir(parents=True)
    (case / "old" / "lib.txt").write_text("old side\n")
    (case / "new.txt").write_text("new side\n")
    (case / "run.sh").write_text("#!/bin/sh\necho run\n")
    (case / "run.sh").chmod(0o755)
    real = tmp_path / "real-tool"
    real.write_text(
        "#!/bin/sh\n"
        "# fake subject: `tool -o json=FILE` writes FILE; always touches a marker in the cwd\n"
        'touch ran-real-tool\nif [ "$1" = "-o" ]; then echo "{\\"verdict\\": \\"NO_CHANGE\\"}" > "${2#json=}"; fi\n'
    )
    real.chmod(0o755)
    return repo


def make(tmp_path: Path, repo: Path, **kw) -> Sandbox:
    kw.setdefault("profile", profile())
    kw.setdefault("real", tmp_path / "real-tool")
    return Sandbox.create(tmp_path / "runs", InputRecorder(repo), "fixtures/case", **kw)


def agent(box: Sandbox, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), cwd=box.work, env=box.env, capture_output=True, timeout=60)


def test_fixture_is_copied_through_the_input_recorder(tmp_path: Path, repo: Path):
    rec = InputRecorder(repo)
    box = Sandbox.create(tmp_path / "runs", rec, "fixtures/case", profile=profile(), real=tmp_path / "real-tool")
    assert [o["path"] for o in rec.observed()] == ["fixtures/case/new.txt", "fixtures/case/old/lib.txt",
                                                   "fixtures/case/run.sh"]
    assert hashing.tree_digest(box.work) == hashing.tree_digest(repo / "fixtures" / "case")
    assert os.stat(box.work / "run.sh").st_mode & stat.S_IXUSR, "the executable bit survives the copy"
    assert box.initial is not None and box.initial.digest == hashing.tree_digest(box.work)


def test_home_caches_and_shim_are_isolated_outside_the_work_tree(tmp_path: Path, repo: Path):
    box = make(tmp_path, repo)
    for var in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TMPDIR"):
        p = Path(box.env[var])
        assert p.is_dir() and p.is_relative_to(box.root) and not p.is_relative_to(box.work), var
        assert not p.is_relative_to(Path.home()), var
    assert box.env["PATH"].split(os.pathsep)[0] == str(box.bin)
    assert not any(str(box.record) in v or str(tmp_path / "real-tool") in v for v in box.env.values()), \
        "nothing in the agent's environment names the record store or the real tool"
    assert not box.record.is_relative_to(box.work)
    res = agent(box, "tool", "-o", "json=report.json")
    assert res.returncode == 0, res.stderr
    (call,) = box.calls()
    assert call["cwd"] == "." and call["outputs"][0]["snapshot"] == "captured/1.out.d/0/report.json"
    # the tool ran on its own snapshot: its declared output is copied back, an undeclared write is not
    assert (box.work / "report.json").exists() and not (box.work / "ran-real-tool").exists()
    assert sorted(p.name for p in box.work.iterdir()) == ["new.txt", "old", "report.json", "run.sh"]


def test_setup_runs_in_the_sandbox_before_the_before_state(tmp_path: Path, repo: Path):
    box = make(tmp_path, repo, setup=[["sh", "-c", "echo made > setup.txt && echo $HOME > home.txt"]])
    assert (box.work / "setup.txt").read_text() == "made\n"
    assert (box.work / "home.txt").read_text().strip() == str(box.home)
    assert "setup.txt" in box.initial.files
    assert box.calls() == []


def test_failing_setup_is_an_error_and_leaves_nothing(tmp_path: Path, repo: Path):
    with pytest.raises(SandboxError, match="setup command 0"):
        make(tmp_path, repo, setup=[["sh", "-c", "echo broken >&2; exit 3"]])
    assert list((tmp_path / "runs").iterdir()) == []


def test_missing_fixture_is_a_sandbox_error(tmp_path: Path, repo: Path):
    with pytest.raises(SandboxError, match="cannot be copied"):
        Sandbox.create(tmp_path / "runs", InputRecorder(repo), "fixtures/nope")


def test_finish_reports_before_after_and_changed_paths(tmp_path: Path, repo: Path):
    box = make(tmp_path, repo)
    (box.work / "new.txt").write_text("edited\n")
    (box.work / "old" / "lib.txt").unlink()
    (box.work / "added.txt").write_text("x")
    (box.work / "run.sh").chmod(0o644)
    meta = box.finish()
    assert meta["before"] == box.initial.digest and meta["after"] == hashing.tree_digest(box.work)
    assert meta["changed"] == ["added.txt", "new.txt", "old/lib.txt", "run.sh"]
    jsonschema.validate(meta, schemas.load_schema("meta")["properties"]["sandbox"])


def test_actions_record_facts_that_validate(tmp_path: Path, repo: Path):
    setup = [["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "fixture"]]
    box = make(tmp_path, repo, setup=setup)
    (box.work / "new.txt").write_text("agent edit\n")  # the agent's change
    actions = [
        ["git", "status", "--short"],
        ["sh", "-c", "echo more >> new.txt"],
        ["sh", "-c", 'echo \'{"passed": true, "detail": 1}\''],
        ["tool", "-o", "json=out.json"],
    ]
    result = box.run_actions(actions, watch=["new.txt", "out.json", "missing.txt"])
    assert schemas.errors(result.facts, "facts") == []
    a0, a1, a2, a3 = result.facts["actions"]
    assert a0["argv"] == actions[0] and a0["exit_code"] == 0
    assert a0["git_before"] == a0["git_after"] and a0["tree_before"] == a0["tree_after"]
    assert a0["changed_paths"] == ["new.txt"], "changed paths compare with the sandbox the agent received"
    assert a1["git_before"] != a1["git_after"], "a second edit of a modified file moves the git digest"
    assert a1["tree_before"] != a1["tree_after"]
    assert a2["validation"] == {"passed": True} and a0["validation"] is None
    assert a3["exit_code"] == 0 and "out.json" in a3["files"] and "missing.txt" not in a3["files"]
    assert result.blobs[a3["files"]["out.json"]] == (box.work / "out.json").read_bytes()
    assert result.blobs[a1["files"]["new.txt"]] == b"agent edit\nmore\n"
    assert box.calls() == [], "runner actions bypass the shim: they are not the agent's calls"
    assert hashing.sha256_bytes(result.streams[0][0]) == a0["stdout_sha256"]


def test_action_timeout_kills_the_process_group(tmp_path: Path, repo: Path):
    box = make(tmp_path, repo)
    result = box.run_actions([["sh", "-c", "sleep 30 & sleep 30"]], timeout=0.5)
    assert result.facts["actions"][0]["exit_code"] == TIMEOUT_EXIT


def test_trigger_sandbox_needs_no_shim(tmp_path: Path, repo: Path):
    box = Sandbox.create(tmp_path / "runs", InputRecorder(repo), "fixtures/case")
    assert not (box.bin / "tool").exists() and box.calls() == [] and box.recorder is None
    box.cleanup()
    assert not box.root.exists()


# ---------------------------------------------------------------- secrets


def test_secret_values_pick_credential_variables():
    env = {"ANTHROPIC_API_KEY": "sk-ant-aaaaaaaaaaaa", "GITHUB_TOKEN": "ghp_bbbbbbbbbbbb", "MY_SECRET": "cccccccccc",
           "DB_PASSWORD": "dddddddddd", "SHORT_TOKEN": "abc", "PATH": "/usr/bin:/bin", "HOME": "/root",
           "openai_api_key": "sk-eeeeeeeeeeee", "CUSTOM": "ffffffffffff"}
    assert sorted(secret_values(env, extra_names=["CUSTOM"])) == [
        "ANTHROPIC_API_KEY", "CUSTOM", "DB_PASSWORD", "GITHUB_TOKEN", "MY_SECRET", "openai_api_key"]


def test_redact_covers_raw_and_json_escaped_forms():
    secrets = {"API_KEY": 'sk-"quoted"/é-value'}
    raw = 'sk-"quoted"/é-value'
    escaped = json.dumps(raw)[1:-1]
    ascii_escaped = json.dumps(raw, ensure_ascii=True)[1:-1]
    for form in (raw, escaped, ascii_escaped):
        assert redact(f"x {form} y", secrets) == "x [REDACTED:API_KEY] y"
        assert redact(f"x {form} y".encode(), secrets) == b"x [REDACTED:API_KEY] y"
    assert redact({"k": [raw, 1, None], raw: "v"}, secrets) == {
        "k": ["[REDACTED:API_KEY]", 1, None], "[REDACTED:API_KEY]": "v"}


def test_assert_no_secrets_names_file_and_variable_never_the_value(tmp_path: Path):
    secrets = {"OPENAI_API_KEY": "sk-live-0123456789"}
    (tmp_path / "raw").mkdir()
    (tmp_path / "final.md").write_text("clean")
    assert_no_secrets(tmp_path, secrets)
    (tmp_path / "raw" / "stream.jsonl").write_text(json.dumps({"k": "sk-live-0123456789"}))
    with pytest.raises(SecretLeak) as err:
        assert_no_secrets(tmp_path, secrets)
    assert "raw/stream.jsonl" in str(err.value) and "OPENAI_API_KEY" in str(err.value)
    assert "sk-live-0123456789" not in str(err.value)


def test_sandbox_secrets_include_passthrough_credentials(tmp_path: Path, repo: Path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-passthrough-123")
    box = make(tmp_path, repo, passthrough=["ANTHROPIC_API_KEY"])
    assert box.env["ANTHROPIC_API_KEY"] == "sk-ant-passthrough-123"
    assert box.secrets()["ANTHROPIC_API_KEY"] == "sk-ant-passthrough-123"


# ---------------------------------------------------------------- file access discipline


@pytest.mark.parametrize("module", RUNNER_MODULES, ids=lambda p: p.name)
def test_runner_modules_open_files_only_in_named_helpers(module: Path):
    tree = ast.parse(module.read_text())
    helpers = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                   and any(getattr(t, "id", None) == "FILE_IO_HELPERS" for t in n.targets))
    banned = {"open", "read_bytes", "read_text", "write_bytes", "write_text"}
    offenders = []

    def visit(node: ast.AST, func: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, ast.FunctionDef) else func
            if isinstance(child, ast.Call):
                f = child.func
                called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if called in banned and name not in helpers:
                    offenders.append((name, called, child.lineno))
            visit(child, name)

    visit(tree, None)
    assert offenders == []


def test_sandbox_module_is_importable_without_side_effects():
    out = subprocess.run([sys.executable, "-c", "import skill_eval.harness.runner.sandbox, skill_eval.harness.runner.bundle_writer"],
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, capture_output=True)
    assert out.returncode == 0, out.stderr
    assert sandbox_mod.FILE_IO_HELPERS


# ---------------------------------------------------------------- end to end with the real subject


@pytest.mark.slow
def test_real_fixture_real_abicheck_bundle_is_readable_by_the_graders(tmp_path: Path):
    """Fixture copy -> shim -> real abicheck -> atomic bundle -> bundle.load + graders.artifacts agree."""
    from skill_eval.content import config
    from skill_eval.grading import bundle
    from skill_eval.grading.graders import artifacts
    from skill_eval.harness.runner.bundle_writer import BundleWriter

    fixture = ROOT / "agent-evals" / "skills" / "fixtures" / "removed-export"
    real = Path(sys.executable).parent / "abicheck"
    if not (fixture / "old" / "libdemo.so.1").is_file() or not real.exists():
        pytest.skip("needs the committed removed-export fixture and abicheck next to this interpreter")
    cfg = config.load(ROOT)
    rec = InputRecorder(ROOT)
    box = Sandbox.create(tmp_path / "runs", rec, "agent-evals/skills/fixtures/removed-export",
                         profile=cfg.subject, real=real)
    try:
        argv = ["abicheck", "compare", "old/libdemo.so.1", "new/libdemo.so.1", "-o", "json=report.json"]
        first = agent(box, *argv)
        second = agent(box, *argv[:2], "old/libdemo.so.1", "old/libdemo.so.1", "-o", "json=report.json")
        assert (first.returncode, second.returncode) == (4, 0), first.stderr.decode()[-400:]
        assert not any(p.is_relative_to(box.work / ".cache") for p in box.work.rglob("*")), "cache went to XDG"
        # abicheck's cache is the subject's own (in the runner's store), never the agent's XDG_CACHE_HOME,
        # where the agent could copy one cached snapshot over another (issue 24: cache poisoning)
        assert not any(Path(box.env["XDG_CACHE_HOME"]).rglob("*")), "the subject wrote into the agent's cache"
        assert any((box.record / "subject" / "home" / ".cache").rglob("*")), "abicheck used its own cache"
        meta = box.finish()
        assert meta["changed"] == ["report.json"]
        dest = tmp_path / "evidence" / "abi-compat-review" / "skill-agent" / "run" / "review-removed-export" / "0"
        with BundleWriter(dest, box.secrets()) as w:
            w.add_jsonl("calls.jsonl", box.calls())
            w.add_tree("captured", box.record / "captured")
            w.seal()
    finally:
        box.cleanup()
    assert "agent-evals/skills/fixtures/removed-export/old/libdemo.so.1" in {o["path"] for o in rec.observed()}
    loaded = bundle.load(dest)
    assert [p for p in loaded.problems if p.file.startswith(("calls", "captured"))] == []
    c1, c2 = loaded.calls
    a1 = artifacts.read_artifact(loaded, c1, cfg.subject)
    a2 = artifacts.read_artifact(loaded, c2, cfg.subject)
    assert (a1.verdict, a2.verdict) == ("BREAKING", "NO_CHANGE"), (a1.problems, a2.problems)
    assert a1.executed and a1.problems == [] and a2.problems == []


def test_an_agent_made_symlink_fails_closed(tmp_path: Path, repo: Path):
    box = make(tmp_path, repo)
    (box.work / "link").symlink_to("/etc/passwd")
    with pytest.raises(SandboxError, match="symlink"):
        box.finish()


def test_for_scenario_uses_the_case_fixture_setup_and_subject(tmp_path: Path, repo: Path):
    from skill_eval.harness.runner.sandbox import watch_paths

    cfg = SimpleNamespace(evals_root=".", subject=profile())
    scen = SimpleNamespace(fixture="case", setup=(("sh", "-c", "touch s.txt"),),
                           oracle={"a": {"action": 0, "predicate": "file-contains", "path": "r.md", "text": "x"},
                                   "b": {"action": 0, "predicate": "command-exit-zero"}})
    box = Sandbox.for_scenario(tmp_path / "runs", cfg, InputRecorder(repo), scen, tmp_path / "real-tool")
    assert (box.work / "s.txt").exists() and (box.work / "new.txt").exists() and box.bin.joinpath("tool").exists()
    assert watch_paths(scen) == ["r.md"]
