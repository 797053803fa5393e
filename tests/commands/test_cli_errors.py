"""Bad input never produces a traceback: one line, naming the file, exit 1 or 2."""

import pytest

from skill_eval.cli import main


def one_line_error(capsys):
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in captured.err + captured.out
    assert err.count("\n") == 0, err
    return err


@pytest.mark.parametrize(
    "rel,text,needle",
    [
        ("evals/scenarios.yaml", "schema_version: 1\nscenarios: [\n", "scenarios.yaml: invalid YAML at line"),
        ("evals/scenarios.yaml", "schema_version: 1\nschema_version: 1\nscenarios: []\n", "duplicate key 'schema_version'"),
        ("evals/ground_truth.json", '{"schema_version": 1, "cases": {}, "cases": {}}', "duplicate JSON key 'cases'"),
        ("evals/ground_truth.json", '{"schema_version": 1, "subject": "x", "cases": {"case-one": {}}', "ground_truth.json: invalid JSON"),
        ("evals/trigger_corpus.yaml", "schema_version: 1\nprompts: []\nextra: 1\n", "Additional properties are not allowed ('extra'"),
        ("skill-eval.toml", "schema_version = 1\nbogus = 2\n", "skill-eval.toml: (top level): Additional properties"),
        ("evals/rubric.yaml", "schema_version: 1\nversion: '1'\ndimensions: []\n", "rubric.yaml: dimensions: "),
    ],
)
def test_malformed_inputs(mini_repo, capsys, rel, text, needle):
    (mini_repo / rel).write_text(text)
    rc = main(["pack", "--check", "--root", str(mini_repo)])
    assert rc == 2
    assert needle in one_line_error(capsys)


def test_bad_utf8_in_skill(mini_repo, capsys):
    (mini_repo / "skills-src/beta/SKILL.md").write_bytes(b"---\nname: beta\ndescription: \xff\n---\n")
    # L0: that skill's own finding (the other skills are still checked), not an abort
    assert main(["check-skills", "--root", str(mini_repo)]) == 1
    assert "error: skills-src/beta/SKILL.md: invalid UTF-8 at byte 28" in capsys.readouterr().out
    # anything that must read the skill (the pack) still fails closed with one line
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "invalid UTF-8" in one_line_error(capsys)


def test_symlink_in_hashed_tree(mini_repo, capsys):
    (mini_repo / "evals/fixtures/case-one/link").symlink_to(mini_repo / "evals/fixtures/case-one/old.w")
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    err = one_line_error(capsys)
    assert "case-one" in err and "link is a symlink" in err


def test_scenario_missing_fixture(mini_repo, capsys):
    p = mini_repo / "evals/scenarios.yaml"
    p.write_text(p.read_text().replace("fixture: case-two", "fixture: case-nine"))
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "fixture 'case-nine' has no ground-truth case" in one_line_error(capsys)


def test_scenario_fixture_dir_deleted(mini_repo, capsys):
    import shutil

    shutil.rmtree(mini_repo / "evals/fixtures/case-two")
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "fixture directory fixtures/case-two/ is missing" in one_line_error(capsys)


def test_unknown_skill_in_scenario(mini_repo, capsys):
    p = mini_repo / "evals/scenarios.yaml"
    p.write_text(p.read_text().replace("skill: beta", "skill: gamma"))
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "skill 'gamma' does not exist" in one_line_error(capsys)


def test_category_a_may_not_restate_truth(mini_repo, capsys):
    p = mini_repo / "evals/scenarios.yaml"
    p.write_text(p.read_text().replace("invocation_class: single-pair, probe: evidence-free}", "invocation_class: single-pair, expected: {verdict: OK}}"))
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "scenarios.yaml" in one_line_error(capsys)


def test_no_config(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["pack", "--check"]) == 2
    assert "no skill-eval.toml" in one_line_error(capsys)


def test_unknown_command_suggests_the_close_match(capsys):
    assert main(["gradee", "x"]) == 2
    err = one_line_error(capsys)
    assert "unknown command 'gradee'" in err and "skill-eval grade" in err


def test_usage_errors_are_one_line(capsys):
    assert main(["pack", "--chekc"]) == 2
    assert "unrecognized arguments: --chekc" in one_line_error(capsys)


def test_every_command_has_help_and_json(capsys):
    from skill_eval.cli import COMMANDS, build_parser

    for name in COMMANDS:
        parser = build_parser(name)
        sub = parser._subparsers._group_actions[0].choices[name]
        helptext = sub.format_help()
        assert "--json" in helptext and "--root" in helptext, name


# -- one error handler: --json errors, exit codes, crash logs -------------------------------------

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from skill_eval import cli  # noqa: E402
from skill_eval.core.errors import EXIT_INTERNAL, EXIT_USAGE, ConfigError  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_command_json_error_is_json(tmp_path, capsys, name):
    """No config under --root (or a missing argument): the error is one JSON object on stdout."""
    argv = [name, "--json", "--root", str(tmp_path)]
    if name == "explain":  # needs no config: its usage error is an unknown term
        argv.append("no-such-term")
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == EXIT_USAGE, captured
    error = json.loads(captured.out)["error"]
    assert error["exit_code"] == EXIT_USAGE and error["message"] and error["kind"].endswith("Error")
    assert set(error) >= {"message", "source", "field", "fix", "kind", "exit_code"}
    assert captured.err == ""


def test_json_error_keeps_parts_as_fields(mini_repo, capsys):
    (mini_repo / "skill-eval.toml").write_text("schema_version = 1\nbogus = 2\n")
    assert main(["pack", "--check", "--json", "--root", str(mini_repo)]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["source"].endswith("skill-eval.toml") and error["field"] == "(top level)"
    assert "bogus" in error["message"] and error["fix"] == "see schemas/config.schema.json"


def _crash(args):
    raise ZeroDivisionError("injected bug")


def test_internal_error_exits_3_and_names_its_log(monkeypatch, tmp_path, capsys):
    from skill_eval.commands import digest

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SKILL_EVAL_DEBUG", raising=False)
    monkeypatch.setattr(digest, "run", _crash)
    assert main(["digest", str(tmp_path)]) == EXIT_INTERNAL
    err = one_line_error(capsys)
    assert "internal error: ZeroDivisionError: injected bug" in err
    log = Path(err.split("traceback in ")[1].split(";")[0])
    assert log.parent == tmp_path / "state" / "skill-eval"
    assert "Traceback" in log.read_text() and "_crash" in log.read_text()


def test_internal_error_under_json(monkeypatch, tmp_path, capsys):
    from skill_eval.commands import digest

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SKILL_EVAL_DEBUG", raising=False)
    monkeypatch.setattr(digest, "run", _crash)
    assert main(["digest", "--json", str(tmp_path)]) == EXIT_INTERNAL
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["exit_code"] == EXIT_INTERNAL and Path(error["log"]).is_file()


def test_keyboard_interrupt_is_130(monkeypatch, tmp_path, capsys):
    from skill_eval.commands import digest

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(digest, "run", interrupted)
    assert main(["digest", str(tmp_path)]) == 130


def test_skill_eval_error_keeps_its_exit_code(monkeypatch, tmp_path, capsys):
    from skill_eval.commands import digest

    def bad(args):
        raise ConfigError("broken", source="x.toml", field="evals.k", fix="set it")

    monkeypatch.setattr(digest, "run", bad)
    assert main(["digest", str(tmp_path)]) == 2
    assert one_line_error(capsys) == "skill-eval: x.toml: evals.k: broken — fix: set it"


def test_broken_command_import_names_the_module(monkeypatch, tmp_path, capsys):
    """A command module that fails to import is an internal error naming it, never 'invalid choice'."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SKILL_EVAL_DEBUG", raising=False)
    monkeypatch.setitem(cli.COMMANDS, "grade", cli.CommandInfo("skill_eval.commands.no_such_module", "x"))
    assert main(["grade", "x"]) == EXIT_INTERNAL
    err = one_line_error(capsys)
    assert "skill_eval.commands.no_such_module" in err and "invalid choice" not in err


def test_help_imports_no_command_module():
    code = ("import sys; from skill_eval.cli import main; rc = main(['--help']); "
            "mods = [m for m in sys.modules if m.startswith('skill_eval.commands') or m in ('yaml', 'jsonschema', 'argparse')]; "
            "print(rc, mods, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": SRC}, check=True)
    assert out.stderr.strip() == "0 []", out.stderr
    for name, info in cli.COMMANDS.items():
        assert name in out.stdout and info.summary in out.stdout


def test_command_table_matches_modules():
    """The table is the one copy of each help line; a module's own HELP (if any) must agree."""
    for name, info in cli.COMMANDS.items():
        module = cli.load_command(name)
        assert info.module_path == module.__name__
        assert getattr(module, "HELP", info.summary) == info.summary, name
        assert getattr(module, "NAME", name) == name


@pytest.mark.parametrize("argv,needle", [
    (["run", "-k", "-1", "--dry-run"], "argument -k: -1 is out of range"),
    (["run", "-k", "1000000000000", "--dry-run"], "out of range"),
    (["run", "--timeout", "0", "--dry-run"], "argument --timeout: 0 is out of range"),
    (["run", "--timeout", "nan", "--dry-run"], "argument --timeout: nan is out of range"),
    (["run", "-j", "0", "--dry-run"], "argument -j/--jobs"),
    (["run", "--max-turns", "0", "--dry-run"], "argument --max-turns"),
])
def test_run_bounds_are_usage_errors(capsys, argv, needle):
    assert main(argv) == 2
    assert needle in one_line_error(capsys)


def test_run_timeout_is_honoured_not_replaced(mini_repo, monkeypatch):
    """`--timeout 5` reaches the runner as 5 (never `args.timeout or default`)."""
    from skill_eval.commands import run as run_cmd

    seen = {}

    def fake_options(**kwargs):
        seen["timeout"], seen["max_turns"] = kwargs["timeout"], kwargs["max_turns"]
        raise ConfigError("stop here")

    monkeypatch.setattr(run_cmd, "find_subject", lambda cfg: None)
    monkeypatch.setattr(run_cmd, "RunOptions", fake_options)
    assert main(["run", "--root", str(mini_repo), "--agent", "scripted", "--timeout", "0.5", "--max-turns", "1",
                 "--no-trigger", "--run-id", "t"]) == 2
    assert seen == {"timeout": 0.5, "max_turns": 1}


def test_undecodable_path_argument_is_printed_not_a_crash(repo_copy, tmp_path):
    """A path with bytes that are not UTF-8 reaches Python as lone surrogates; printing it on a
    strict stdout used to crash (internal error)."""
    import os
    import shutil

    bundle = os.fsdecode(bytes(tmp_path) + b"/bundle-\xff")
    shutil.copytree(Path(__file__).parents[1] / "data/v1/bundles/behavioral", bundle)
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONIOENCODING": "utf-8:strict"}
    out = subprocess.run([sys.executable, "-m", "skill_eval", "grade", "--root", str(repo_copy), bundle],
                         capture_output=True, env=env, check=False)
    assert out.returncode in (0, 1), out
    assert b"internal error" not in out.stderr and b"bundle-" in out.stdout


def test_help_epilog_lists_every_explained_term():
    from skill_eval import cli
    from skill_eval.commands import explain

    assert cli.EPILOG == explain.epilog()
