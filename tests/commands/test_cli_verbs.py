"""Verbs are subcommands: each verb shows and accepts only its own flags; shared options are
declared once (commands/_options.py); one flag-or-config precedence rule."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from skill_eval import cli
from skill_eval.cli import main
from skill_eval.commands import _options, evidence, evidence_compact, release
from skill_eval.core.errors import EXIT_USAGE

SRC = Path(__file__).resolve().parents[2] / "src" / "skill_eval"


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return captured.err.strip()


@pytest.fixture
def calls(monkeypatch):
    """The verbs' run functions replaced by recorders: what reaches them, and whether anything did."""
    seen: list[tuple[str, argparse.Namespace]] = []

    def recorder(name):
        def record(args, *rest):
            seen.append((name, args))
            return 0
        return record

    monkeypatch.setattr(evidence_compact, "compact", recorder("compact"))
    for verb in ("_stage", "_resume", "_verify"):
        monkeypatch.setattr(release, verb, recorder(verb))
    monkeypatch.setattr(evidence, "load_config", lambda args: None)
    return seen


# -- the three failures of issue 37 --------------------------------------------------------------------

def test_evidence_compact_refuses_the_gates_flags(calls, capsys):
    """Was exit 0 with --suite and --write-pending ignored."""
    assert main(["evidence", "compact", "--suite", "full", "--write-pending", "why"]) == EXIT_USAGE
    err = _err(capsys)
    assert "evidence compact: unrecognized arguments: --suite full --write-pending why" in err
    assert "skill-eval evidence compact --help" in err
    assert calls == []
    assert main(["evidence", "compact"]) == 0 and [name for name, _ in calls] == ["compact"]


def test_release_verify_takes_its_flags_before_the_files(calls):
    """Was refused: "unrecognized arguments"."""
    assert main(["release", "verify", "--allowed-signers", "F", "stage.json", "report.json"]) == 0
    (name, args), = calls
    assert name == "_verify" and args.targets == [Path("stage.json"), Path("report.json")]
    assert args.allowed_signers == Path("F")


def test_release_verify_refuses_the_stages_flags(calls, capsys):
    """Was accepted with --judge and --force ignored."""
    assert main(["release", "verify", "FILE", "--allowed-signers", "F", "--judge", "--force"]) == EXIT_USAGE
    assert "release verify: unrecognized arguments: --judge --force" in _err(capsys)
    assert calls == []


# -- each verb shows and accepts only its own flags ---------------------------------------------------------

OTHERS = {  # a verb -> flags of its siblings it must neither show nor accept
    ("evidence", "compact"): ["--suite", "--base", "--stage", "--verbose", "--write-pending", "--into"],
    ("evidence", "expand"): ["--suite", "--write-pending", "--into"],
    ("evidence", "merge"): ["--write-pending"],
    ("evidence", "check"): ["--into"],
    ("release", "stage"): ["--worksheet", "--waiver", "--allowed-signers"],
    ("release", "resume"): ["--judge", "--run", "--agent", "--session", "--released", "--skip"],
    ("release", "verify"): ["--judge", "--force", "--run", "--worksheet", "--sign", "--session", "--out"],
    ("baseline", "show"): ["--allow-regression", "--reason"],
    ("import", "harbor"): ["--trigger-set", "--skill"],
    ("import", "evals-json"): ["--evidence", "--force"],
    ("export", "harbor"): ["--skill"],
    ("export", "evals-json"): ["--scenario"],
}


@pytest.mark.parametrize(("command", "verb"), sorted(OTHERS))
def test_a_verb_shows_only_its_own_flags(command, verb):
    verb_parser = _options.verbs_of(_options.verbs_of(cli.build_parser(command))[command])[verb]
    own = set(verb_parser._option_string_actions)
    assert own.isdisjoint(OTHERS[command, verb]), own & set(OTHERS[command, verb])
    assert {"--root", "--json", "--format"} <= own  # and every command's options
    text = verb_parser.format_help()
    assert not [f for f in OTHERS[command, verb] if re.search(rf"{f}\b(?!-)", text)]


REQUIRED = {("evidence", "merge"): ["D"], ("release", "resume"): ["S", "--worksheet", "W"],
            ("release", "verify"): ["F", "--allowed-signers", "A"], ("import", "harbor"): ["J"],
            ("import", "evals-json"): ["P"], ("export", "harbor"): ["O"], ("export", "evals-json"): ["O", "--skill", "s"]}


@pytest.mark.parametrize(("command", "verb"), sorted(OTHERS))
def test_a_verb_refuses_its_siblings_flags(command, verb, calls, capsys):
    flag = OTHERS[command, verb][0]
    assert main([command, verb, *REQUIRED.get((command, verb), []), flag, "x"]) == EXIT_USAGE
    err = _err(capsys)
    assert flag in err and f"skill-eval {command} {verb} --help" in err, err


@pytest.mark.parametrize("command", ["release", "baseline", "import", "export"])
def test_a_verb_is_required_where_there_is_no_default(command, capsys):
    assert main([command, "--root", "."]) == EXIT_USAGE
    err = _err(capsys)
    verbs = list(_options.verbs_of(_options.verbs_of(cli.build_parser(command))[command]))
    assert f"{command}: which " in err and ", ".join(verbs) in err and f"`skill-eval {command} --help`" in err


# -- evidence with no verb is evidence check ----------------------------------------------------------------

@pytest.mark.parametrize("argv", [["evidence"], ["evidence", "--suite", "full"], ["evidence", "--root", "R", "--verbose"],
                                  ["evidence", "--root=R", "--json", "--stage", "release"], ["evidence", "check"]])
def test_evidence_alone_is_evidence_check(argv):
    args = cli.build_parser("evidence").parse_args(argv)
    assert args.action == "check" and args.suite in ("risk", "full") and args.write_pending is None


def test_options_before_the_verb_are_kept():
    args = cli.build_parser("release").parse_args(["release", "--json", "--root", "R", "verify", "F", "--allowed-signers", "A"])
    assert args.json is True and args.root == Path("R") and args.action == "verify"
    args = cli.build_parser("evidence").parse_args(["evidence", "--root", "R", "merge", "D"])
    assert args.action == "merge" and args.root == Path("R") and args.dirs == ["D"] and args.suite == "risk"


def test_evidence_help_lists_the_verbs_and_a_mistyped_verb_is_named(capsys):
    text = cli.build_parser("evidence")._subparsers._group_actions[0].choices["evidence"].format_help()
    assert all(v in text for v in ("check", "merge", "compact", "expand", "(default: check)"))
    assert main(["evidence", "compcat"]) == EXIT_USAGE
    assert "invalid choice: 'compcat'" in _err(capsys)


def test_a_step_namespace_gets_the_default_verb():
    """`pr` (and the release's credential-free gates) run `evidence` as a step: its default verb's defaults."""
    ns = _options.defaults(evidence, root=Path("R"), output_format="json", verbose=True)
    assert (ns.action, ns.suite, ns.stage, ns.json, ns.verbose, ns.root) == ("check", "risk", "merge", True, True, Path("R"))


# -- the output format: one declaration, --json its alias ----------------------------------------------------

def test_format_json_is_json(capsys):
    assert main(["explain", "L0", "--format", "json"]) == 0
    by_format = json.loads(capsys.readouterr().out)
    assert main(["explain", "L0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_format
    assert main(["explain", "L0", "--format=text"]) == 0
    assert not capsys.readouterr().out.startswith("{")


def test_errors_follow_the_format_given_either_way(tmp_path, capsys):
    for flags in (["--json"], ["--format", "json"], ["--format=json"]):
        assert main(["pack", "--check", "--root", str(tmp_path), *flags]) == EXIT_USAGE
        assert json.loads(capsys.readouterr().out)["error"]["exit_code"] == EXIT_USAGE


def test_a_command_declares_more_formats_in_one_place(monkeypatch, capsys):
    """`--format sarif` is refused until a command declares it (FORMATS); then it and its verbs take it."""
    assert main(["explain", "L0", "--format", "sarif"]) == EXIT_USAGE
    assert "invalid choice: 'sarif'" in _err(capsys)
    monkeypatch.setattr(evidence, "FORMATS", ("text", "json", "sarif"), raising=False)
    args = cli.build_parser("evidence").parse_args(["evidence", "compact", "--format", "sarif"])
    assert args.output_format == "sarif" and args.json is False


# -- declared once; one precedence rule ----------------------------------------------------------------------

SHARED = ("--root", "--json", "--format", "--base", "--agent", "--model", "--model-server", "--base-url", "--agent-binary",
          "--no-auth", "--max-turns", "--timeout", "--max-cost", "--max-tokens", "--max-total-tokens", "--kappa-floor",
          "--api-key-env")


def test_shared_options_are_declared_only_in_options_module():
    offenders = []
    for path in sorted((SRC / "commands").glob("*.py")) + [SRC / "cli.py"]:
        if path.name == "_options.py":
            continue
        for flag in re.findall(r"add_argument\(\s*\"(--[a-z-]+)\"", path.read_text(encoding="utf-8")):
            if flag in SHARED:
                offenders.append(f"{path.name}: {flag}")
    assert offenders == []


def test_no_command_writes_the_precedence_out():
    pattern = re.compile(r"args\.\w+ if (?:getattr\()?args\.\w+\)? is not None else|args\.\w+ or cfg\.")
    offenders = [f"{p.name}: {m.group(0)}" for p in sorted((SRC / "commands").glob("*.py"))
                 for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_flag_or_config():
    assert _options.flag_or_config(None, 5) == 5
    assert _options.flag_or_config(0, 5) == 0  # a zero is a value, not an absence
    assert _options.flag_or_config("", "cfg") == ""


class _Agent:
    adapter, model, max_turns, timeout_seconds, max_cost_usd, max_tokens, max_total_tokens = (
        "codex", "cfg-model", 30, 900.0, 2.5, 4096, None)


def test_agent_options_take_the_flag_else_the_agent_table():
    cfg = argparse.Namespace(agent=_Agent())
    p = argparse.ArgumentParser()
    _options.add_agent_arguments(p, "agent", "model", "max-turns", "timeout")  # a command declaring only these
    opts = _options.agent_options(p.parse_args(["--model", "m", "--timeout", "0.5"]), cfg)
    assert opts == {"adapter": "codex", "model": "m", "max_turns": 30, "timeout": 0.5, "max_cost_usd": 2.5,
                    "max_tokens": 4096, "max_total_tokens": None}
    with pytest.raises(SystemExit):  # an empty model id is no model id (was: silently the configured one)
        p.parse_args(["--model", ""])
