"""`skill-eval <command>`: one argparse front end over the command modules, one error handler.

COMMANDS is the command table (pip's CommandInfo): each entry holds the module path and the
one-line help, so `skill-eval --help` lists every command without importing any of them, and
adding a command is one line. Only the module of the command being run is imported; a module
that fails to import is an internal error naming it (exit 3), never argparse's "invalid choice".

`main` is the one place errors become output: a SkillEvalError is one line on stderr (or, with
`--json`, `{"error": {...}}` on stdout) with its own exit code; any other exception is a bug:
its traceback goes to a log file whose path is printed, and the exit code is 3.

A command module that sets `FAST_EXIT = True` declares that once its `run` has returned (or raised
a SkillEvalError), nothing is left for the interpreter's teardown: no thread, no child process,
no unclosed file, no cleanup in a `__del__` (files it writes go through fsio, closed before it
returns). When `main` is the process entry (the console script, `python -m skill_eval`), such a
command's process then ends in `exit_now`, which skips freeing the heap one object at a time
(~10-20 ms after re-grading a thousand bundles) and only does what that teardown does that can be
seen from outside: the atexit handlers, then flushing stdout and stderr.
"""

from __future__ import annotations

import sys

from skill_eval.core.errors import EXIT_INTERNAL, EXIT_USAGE, SkillEvalError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)

if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from types import ModuleType
    from typing import IO, Any, NoReturn


class CommandInfo:
    """One command-table row (a plain class: `--help` should not pay for typing/collections)."""

    __slots__ = ("module_path", "summary")

    def __init__(self, module_path: str, summary: str):
        self.module_path = module_path
        self.summary = summary


# command name -> where it lives and its one-line help (the only copy of that help text)
COMMANDS: dict[str, CommandInfo] = {
    "pr": CommandInfo("skill_eval.commands.pr", "run the whole pr profile: L0, surface drift, L1s, pack --check, content, golden (L4), freshness, evidence"),
    "check-skills": CommandInfo("skill_eval.commands.check_skills", "L0: frontmatter, links, real subject commands/flags, published-copy parity"),
    "registry": CommandInfo("skill_eval.commands.registry", "check the scenario registry: skill x mode coverage, ids, fixture/sandbox names, seed.json recipes, oracle maps"),
    "check-triggers": CommandInfo("skill_eval.commands.check_triggers", "L1s: BM25-score the labelled trigger corpus against skill descriptions; gate precision/recall"),
    "generate": CommandInfo("skill_eval.commands.generate", "write the published skill trees from the source tree (--check: report drift, exit 1)"),
    "pack": CommandInfo("skill_eval.commands.pack", "write the evaluation pack of content digests (--check: exit 1 naming every entry that moved)"),
    "freshness": CommandInfo("skill_eval.commands.freshness", "check every evidence bundle's recorded digests against the current content (+ round trips)"),
    "select": CommandInfo("skill_eval.commands.select", "print the suite (risk|full) a change needs: moved digests since --base -> affected skills -> scenarios"),
    "digest": CommandInfo("skill_eval.commands.digest", "print the domain-separated tree digest of a directory (or a single file)"),
    "surface": CommandInfo("skill_eval.commands.surface", "check (default) or --write the committed CLI reference against the installed subject's CLI"),
    "init": CommandInfo("skill_eval.commands.init", "adopt skill-eval in a git repository: detect its skills, write config, nox/Makefile/pre-commit entries"),
    "grade": CommandInfo("skill_eval.commands.grade", "re-grade transcript bundles from their recorded artifacts (no model, no network)"),
    "evidence": CommandInfo("skill_eval.commands.evidence", "check that committed evidence is complete, fresh and passes the gates (re-grades every bundle)"),
    "baseline": CommandInfo("skill_eval.commands.baseline", "show or record the per-(skill, agent, model) baselines for dimensions 1, 3, 4 and 5"),
    "golden": CommandInfo("skill_eval.commands.golden", "re-grade the golden corpus and demand each bundle's exact expected failure set (L4)"),
    "local-paths": CommandInfo("skill_eval.commands.local_paths", "fail when a committed bundle (evidence/, calibration/) still holds a sandbox or home path"),
    "run": CommandInfo("skill_eval.commands.run", "record evidence: run the selected scenarios/prompts k times with an agent (maintainer-run, needs an agent)"),
    "plan": CommandInfo("skill_eval.commands.plan", "print the recording plan cut into N shards: item counts, plan digest, and the CI job matrix (GitHub, GitLab)"),
    "model-server": CommandInfo("skill_eval.commands.model_server", "serve a scripted model (Anthropic, OpenAI Responses or Gemini API) on 127.0.0.1"),
    "lift": CommandInfo("skill_eval.commands.lift", "lift per skill/agent/model and arm pair, paired by scenario, with bootstrap CI, sign test and A/A floor"),
    "scorecard": CommandInfo("skill_eval.commands.scorecard", "write scorecard.json / .md / .html: lift with CIs, activation, dimensions, pass^k, cost, audit"),
    "import": CommandInfo("skill_eval.commands.import_cmd", "import skill-creator evals (evals/evals.json + trigger-eval set) into the trigger corpus and draft scenarios, or a Harbor job's trials as labelled, unsigned bundles (harbor)"),
    "export": CommandInfo("skill_eval.commands.export_cmd", "export scenarios as Harbor tasks (harbor) or staged imports back to skill-creator's evals.json (evals-json)"),
    "explain": CommandInfo("skill_eval.commands.explain", "explain a term: L0, L1s, L1l, L2, L3, L4, arm, dimension, pack, freshness, evidence, pending, subject, tier, k, adopt, oracle, corpus, suppress, publish"),
    "release": CommandInfo("skill_eval.commands.release", "release evaluation: stage (sealed, stops for a human worksheet), resume (report), verify (signatures)"),
    "clean": CommandInfo("skill_eval.commands.clean", "remove the sandboxes and partial bundles that killed runs left behind (a live run's are kept)"),
    "judge": CommandInfo("skill_eval.commands.judge", "judge dimensions 4/5 of behavioural bundles with a (blinded) judge model; appends to judgments.json"),
    "propose": CommandInfo("skill_eval.commands.propose", "let an agent draft a skill-source patch for failing cases (sandboxed); a human reviews and `git apply`s it"),
}

# = skill_eval.commands.explain.epilog() (a test keeps them equal); literal so `--help` imports no command module
EPILOG = ("terms (`skill-eval explain TERM` for more): L0, L1s, L1l, L2, L3, L4, arm, dimension, pack, freshness, "
          "evidence, pending, subject, tier, adopt, k, oracle, corpus, suppress, publish")
DESCRIPTION = ("Prove with re-runnable evidence that Agent Skills work. "
               "Exit codes: 0 ok, 1 a check failed, 2 usage, configuration or bad input, 3 internal error.")


class CommandImportError(Exception):
    """A command module failed to import: a bug in skill-eval (exit 3), named by module."""


def load_command(name: str) -> ModuleType:
    """Import the module of command `name` (only that one)."""
    import importlib

    info = COMMANDS[name]
    try:
        return importlib.import_module(info.module_path)
    except Exception as exc:  # noqa: BLE001 - any import failure is a bug in that module
        raise CommandImportError(f"command {name!r}: module {info.module_path} failed to import: "
                                 f"{type(exc).__name__}: {exc}") from exc


def _terminal_columns() -> int:
    """shutil.get_terminal_size().columns without importing shutil (with its compression modules,
    ~2 ms of every command's start: argparse's formatter asks it on every add_argument)."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse

    class Formatter(argparse.HelpFormatter):
        def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                     width: int | None = None) -> None:
            super().__init__(prog, indent_increment, max_help_position,
                             _terminal_columns() - 2 if width is None else width)

    class Parser(argparse.ArgumentParser):
        """argparse whose usage errors are SkillEvalErrors, so they render through main's one
        handler (one line, or JSON under --json) instead of printing usage and exiting."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("formatter_class", Formatter)
            super().__init__(*args, **kwargs)

        def error(self, message: str) -> NoReturn:
            command = self.prog.removeprefix("skill-eval").strip() or None
            raise UsageError(message, source=command, fix=f"see `{self.prog} --help`")

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            """A command with a default verb gets it when none is named; the output format is
            settled once parsing is done (commands/_options.py)."""
            from skill_eval.commands import _options

            if args is not None and hasattr(self, "default_verb"):
                args = _options.with_default_verb(self, list(args))
            ns, extras = super().parse_known_args(args, namespace)
            missing = _options.missing_verb(self, ns)
            if missing:
                self.error(missing)
            if hasattr(ns, "output_format"):
                _options.finish_output(ns)
            return ns, extras

    return Parser


def build_parser(argv_command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with a known `argv_command`, only that command's module is imported."""
    from skill_eval import __version__

    parser = _parser_class()(prog="skill-eval", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"skill-eval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_parser_class())
    if argv_command in COMMANDS:
        module = load_command(argv_command)
        info = COMMANDS[argv_command]
        p = sub.add_parser(argv_command, help=info.summary, description=getattr(module, "DESCRIPTION", None) or info.summary)
        from skill_eval.commands import _options  # --root and the output format: declared there, for every command

        formats = getattr(module, "FORMATS", _options.OUTPUT_FORMATS)
        _options.add_common_arguments(p, formats)
        module.add_arguments(p)
        for verb in _options.verbs_of(p).values():  # each verb takes them too (after its own options)
            _options.add_common_arguments(verb, formats, inherited=True)
        p.set_defaults(_run=module.run, _fast_exit=getattr(module, "FAST_EXIT", False) is True)
    else:
        for name, info in COMMANDS.items():
            sub.add_parser(name, help=info.summary, add_help=False)
    return parser


def _unknown_command(name: str) -> UsageError:
    import difflib

    close = difflib.get_close_matches(name, list(COMMANDS), n=1)
    fix = f"did you mean `skill-eval {close[0]}`?" if close else "see `skill-eval --help` for the commands"
    return UsageError(f"unknown command {name!r}", fix=fix)


def print_help(file: IO[str] | None = None) -> None:
    """The top-level help, formatted from COMMANDS alone: no argparse, no command import
    (`skill-eval --help` runs on every pre-commit hook misconfiguration; it should be instant)."""
    width = max(len(name) for name in COMMANDS) + 2
    lines = ["usage: skill-eval [-h] [--version] COMMAND ...", "", DESCRIPTION, "", "commands:"]
    lines += [f"  {name:<{width}}{info.summary}" for name, info in COMMANDS.items()]
    lines += ["", "options:", "  -h, --help  show this help message and exit",
              "  --version   show program's version number and exit", "",
              "`skill-eval COMMAND --help` describes one command.", "", EPILOG]
    (file or sys.stdout).write("\n".join(lines) + "\n")


def _run(argv: list[str], fast_exit: list[bool] | None = None) -> int:
    """Parse and run; `fast_exit` gets the command's FAST_EXIT once its arguments parsed."""
    if not argv or argv in (["-h"], ["--help"]):
        print_help(None if argv else sys.stderr)
        return 0 if argv else EXIT_USAGE
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is not None and first not in COMMANDS:
        raise _unknown_command(first)
    parser = build_parser(first)
    args, extras = parser.parse_known_args(argv)
    if extras:  # named after the command (and verb) that refused them, with its own --help
        from skill_eval.commands import _options

        prog = _options.chosen_prog(parser, args, first)
        raise UsageError(f"unrecognized arguments: {' '.join(extras)}", source=prog.removeprefix("skill-eval "),
                         fix=f"see `{prog} --help`")
    if not getattr(args, "_run", None):
        print_help(sys.stderr)
        return EXIT_USAGE
    if fast_exit is not None:
        fast_exit.append(args._fast_exit)
    return int(args._run(args) or 0)


def main(argv: list[str] | None = None) -> int:
    """Run one command line; its exit code. Called with no `argv` from the `__main__` module (the
    console script, `python -m skill_eval`), main is the process entry: a FAST_EXIT command's
    process then ends here (exit_now). Any other caller (tests, embedding code) always gets the code back."""
    entry = argv is None and sys._getframe(1).f_globals.get("__name__") == "__main__"
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = wants_json(argv)
    for stream in (sys.stdout, sys.stderr):  # a path argument may hold undecodable bytes (surrogates)
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    fast_exit: list[bool] = []
    try:
        code = _run(argv, fast_exit)
    except SkillEvalError as exc:
        report(exc, as_json)
        code = exc.exit_code
    except KeyboardInterrupt:
        print("skill-eval: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except OSError as exc:
        if exc.filename is None:  # not about a path the user gave: treat as a bug
            return internal_error(exc, as_json)
        error = path_error(exc)
        report(error, as_json)
        return error.exit_code
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        import os

        if os.environ.get("SKILL_EVAL_DEBUG"):
            raise
        return internal_error(exc, as_json)
    if entry and fast_exit == [True]:
        exit_now(code)  # returns only when ending the process early is not safe
    return code


def exit_now(code: int) -> None:
    """End the process with `code` without the interpreter's teardown, after what of it can be seen
    from outside: the atexit handlers run, stdout and stderr are flushed.

    Returns instead (the caller then exits the usual way, with its usual messages and exit status)
    when the usual way differs: a flush fails (a reader that went away, e.g. `| head`: the interpreter
    reports it and exits 120, as it always did), a non-daemon thread is still running (the
    interpreter would wait for it), a tracer or profiler is attached (coverage, cProfile: they save
    their data after the program), or an interactive prompt follows (`python -i`, PYTHONINSPECT)."""
    import os

    if sys.flags.inspect or os.environ.get("PYTHONINSPECT") or sys.gettrace() is not None or sys.getprofile() is not None:
        return
    threading = sys.modules.get("threading")
    if threading is not None and any(t.is_alive() and not t.daemon for t in threading.enumerate()
                                     if t is not threading.main_thread()):
        return
    import atexit

    atexit._run_exitfuncs()  # as the interpreter would (and they are not run twice: this empties the list)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not getattr(stream, "closed", False):
                stream.flush()
        except Exception:  # noqa: BLE001 - left to the interpreter's own flush, which fails again and reports it as it always did
            return
    os._exit(code)


def wants_json(argv: list[str]) -> bool:
    """Whether errors are to be JSON, read before (or without) parsing: `--json`, `--format json`
    or `--format=json` (the output format of commands/_options.py)."""
    return "--json" in argv or "--format=json" in argv or any(
        a == "--format" and b == "json" for a, b in zip(argv, argv[1:], strict=False))


def path_error(exc: OSError) -> SkillEvalError:
    """An OSError about a named path (too long, permission denied, not a directory...) is bad
    input, not a bug: one line naming the path (shortened), exit 2."""
    from skill_eval.core.errors import InputError

    name = str(exc.filename)
    short = name if len(name) <= 200 else f"{name[:100]}...{name[-60:]}"
    return InputError(f"cannot be used ({exc.strerror or type(exc).__name__})", source=short,
                      fix="check the path and its permissions")


def report(exc: SkillEvalError, as_json: bool) -> None:
    """Render one SkillEvalError: `{"error": {...}}` on stdout, or one line on stderr."""
    if as_json:
        import json

        sys.stdout.write(json.dumps({"error": exc.as_dict()}, indent=2, sort_keys=True) + "\n")
    else:
        print(f"skill-eval: {_one_line(exc.render())}", file=sys.stderr)


def internal_error(exc: BaseException, as_json: bool) -> int:
    """A bug: write the traceback to a log file, print one line naming it, exit 3."""
    log = write_crash_log(exc)
    what = f"{type(exc).__name__}: {exc}"
    where = f"traceback in {log}" if log else "no log could be written; set SKILL_EVAL_DEBUG=1 for a traceback"
    if as_json:
        import json

        body = {"kind": "InternalError", "message": f"internal error: {what}", "source": None, "field": None,
                "fix": "please report this bug with the log", "log": str(log) if log else None, "exit_code": EXIT_INTERNAL}
        sys.stdout.write(json.dumps({"error": body}, indent=2, sort_keys=True) + "\n")
    else:
        print(_one_line(f"skill-eval: internal error: {what} ({where}; please report it)"), file=sys.stderr)
    return EXIT_INTERNAL


def crash_log_dir() -> Path:
    """`$XDG_STATE_HOME/skill-eval` (default ~/.local/state/skill-eval): core.fsio.state_dir."""
    from skill_eval.core import fsio  # only on a crash: start-up never pays for it

    return fsio.state_dir()


def write_crash_log(exc: BaseException) -> str | None:
    """Write `exc`'s traceback to a new file under crash_log_dir() (else the temp dir); its path."""
    import os
    import tempfile
    import time
    import traceback

    text = "".join(traceback.format_exception(exc))
    header = f"skill-eval internal error, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, argv {sys.argv!r}\n"
    for directory in (crash_log_dir(), None):
        try:
            if directory is not None:
                directory.mkdir(parents=True, exist_ok=True)
            fd, path = tempfile.mkstemp(prefix="crash-", suffix=".log", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
                fh.write(header + text)
            return path
        except OSError:
            continue
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split("\n")).replace("\r", " ")
