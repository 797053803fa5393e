"""`skill-eval <command>`: one argparse front end over the command modules.

Each module in skill_eval.commands exposes NAME, HELP, add_arguments(parser) and
run(args) -> int, like pre-commit's commands/. Modules are imported lazily so a
fast command (the pack check in a pre-commit hook) does not pay for slow ones.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from skill_eval import __version__
from skill_eval.errors import EXIT_USAGE, SkillEvalError

# command name -> module under skill_eval.commands
COMMANDS: dict[str, str] = {
    "pr": "pr",
    "check-skills": "check_skills",
    "check-triggers": "check_triggers",
    "generate": "generate",
    "pack": "pack",
    "freshness": "freshness",
    "select": "select",
    "digest": "digest",
    "surface": "surface",
    "init": "init",
    "grade": "grade",
    "evidence": "evidence",
    "baseline": "baseline",
    "golden": "golden",
    "run": "run",
    "model-server": "model_server",
    "lift": "lift",
    "scorecard": "scorecard",
    "release": "release",
    "judge": "judge",
}


def _module(name: str):
    return importlib.import_module(f"skill_eval.commands.{COMMANDS[name]}")


def available_commands() -> dict[str, str]:
    """Commands whose module exists (later issues add some); name -> one-line help."""
    out = {}
    for name in COMMANDS:
        try:
            out[name] = _module(name).HELP
        except ModuleNotFoundError:
            continue
    return out


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: nearest parent with skill-eval.toml)")
    parser.add_argument("--json", action="store_true", help="print one JSON object for machines instead of text")


def build_parser(argv_command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skill-eval",
        description="Prove with re-runnable evidence that Agent Skills work. "
        "Exit codes: 0 ok, 1 a check failed, 2 usage or configuration error.",
    )
    parser.add_argument("--version", action="version", version=f"skill-eval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = [argv_command] if argv_command in COMMANDS else list(COMMANDS)
    helps = available_commands() if argv_command not in COMMANDS else {}
    for name in names:
        try:
            module = _module(name)
        except ModuleNotFoundError:
            continue
        p = sub.add_parser(name, help=helps.get(name, module.HELP), description=getattr(module, "DESCRIPTION", module.HELP))
        add_common(p)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    try:
        parser = build_parser(first)
        args = parser.parse_args(argv)
        if not getattr(args, "_run", None):
            parser.print_help()
            return EXIT_USAGE
        return int(args._run(args) or 0)
    except SkillEvalError as exc:
        print(f"skill-eval: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("skill-eval: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("SKILL_EVAL_DEBUG"):
            raise
        print(f"skill-eval: internal error: {type(exc).__name__}: {exc} (set SKILL_EVAL_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_USAGE
