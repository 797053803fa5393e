"""Options that several commands take, each declared once (nox's `_options.py`), verbs as
subcommands, and the one flag-or-config precedence rule.

How a command declares a flag:
- a flag of its own: `p.add_argument(...)` in the module's `add_arguments(p)`, or on the parser of
  the verb it belongs to;
- a flag several commands share: the `add_*` function here (`add_base_argument`,
  `add_agent_arguments`, `add_judge_arguments`), never a copy of its `add_argument` line;
- `--root` and the output format (`--format`, `--json` its alias): never in a module: cli adds them
  to every command and to each of its verbs (`add_common_arguments`). A command that can write more
  formats than text and JSON declares `FORMATS = ("text", "json", "sarif")` (module level).

Verbs (`release stage|resume|verify`) are subcommands: `verbs = add_verbs(p)`, then
`stage = verbs.add_parser("stage", help=...)` and `stage.add_argument(...)`. Each verb shows and
accepts only its own flags; the chosen verb is `args.action` (or `dest`). `add_verbs(p, default=V)`
makes `skill-eval CMD [options]` mean `skill-eval CMD V [options]` (`evidence` is `evidence check`).

A value that a flag can set and the configuration can too is read with `flag_or_config`: the flag
when given, else the configuration's value (which holds the schema's default). Never `flag or cfg`:
`--timeout 0` and `--seed 0` are values, not absences.

Imported on every command start (cli builds each parser with it): only argparse and pathlib at import;
what a shared option needs (the adapter names, the bounds) is imported by the function adding it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any, TypeVar

    from skill_eval.content.config import Config

    T = TypeVar("T")

OUTPUT_FORMATS = ("text", "json")  # every command; a module's FORMATS may name more (sarif, junit)
VERB_DEST = "action"


# -- every command: --root, --format/--json -------------------------------------------------------

def add_common_arguments(p: argparse.ArgumentParser, formats: Sequence[str] = OUTPUT_FORMATS, *,
                         inherited: bool = False) -> None:
    """`--root` and the output format. On a verb's parser (inherited=True) they have no default, so
    that a value given before the verb is kept (`skill-eval release --json verify F`)."""
    default = argparse.SUPPRESS if inherited else None
    p.add_argument("--root", type=Path, default=default,
                   help="repository root (default: nearest parent with skill-eval.toml)")
    p.add_argument("--format", dest="output_format", choices=tuple(formats), default=default,
                   help=f"what to print: {', '.join(formats)} (default: text, short lines for people)")
    p.add_argument("--json", dest="output_format", action="store_const", const="json", default=default,
                   help="= --format json: print one JSON object for machines instead of text")


def finish_output(args: argparse.Namespace) -> None:
    """After parsing: `args.output_format` is set (default text) and `args.json` says whether it is
    JSON (what the commands and core.output.emit read)."""
    fmt = getattr(args, "output_format", None) or "text"
    args.output_format = fmt
    args.json = fmt == "json"


# -- verbs -------------------------------------------------------------------------------------------

def add_verbs(p: argparse.ArgumentParser, *, dest: str = VERB_DEST, default: str | None = None,
              metavar: str = "VERB") -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The verbs of a command as subcommands (`verbs.add_parser(NAME, help=...)` each). With a
    `default` verb, no verb given means that one (`skill-eval evidence` = `evidence check`)."""
    # not `required`: argparse would say "the following arguments are required: VERB"; missing_verb names them
    verbs = p.add_subparsers(dest=dest, title=f"{metavar.lower()}s", metavar=metavar, parser_class=type(p))
    p.has_verbs = True  # type: ignore[attr-defined]  # read by missing_verb
    if default is not None:
        p.default_verb = default  # type: ignore[attr-defined]  # read by with_default_verb
        verbs.help = f"(default: {default})"
    return verbs


def _verb_action(p: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in p._actions:  # argparse keeps no public list of a parser's subparsers
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def verbs_of(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A command parser's verb parsers by name (empty: a command without verbs)."""
    action = _verb_action(p)
    return dict(action.choices) if action is not None else {}


def missing_verb(p: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The usage message when a command with verbs (and no default verb) was given none."""
    action = _verb_action(p) if getattr(p, "has_verbs", False) else None  # (not the top level's commands)
    if action is None or getattr(args, action.dest, None) is not None:
        return None
    choices = list(action.choices)
    return f"which {action.metavar}? one of: {', '.join(choices)}"


def chosen_prog(parser: argparse.ArgumentParser, args: argparse.Namespace, command: str | None) -> str:
    """`skill-eval CMD [VERB]` as parsed into `args` (for a message about that command's arguments)."""
    commands = verbs_of(parser)
    if command not in commands:
        return parser.prog
    p = commands[command]
    action = _verb_action(p)
    verb = getattr(args, action.dest, None) if action is not None else None
    return verbs_of(p)[verb].prog if action is not None and verb in action.choices else p.prog


def with_default_verb(p: argparse.ArgumentParser, arg_strings: list[str]) -> list[str]:
    """The command's arguments with its default verb put first when none is named: the first token
    that is not one of the command parser's own options (--root X, --json, ...) is an option of the
    verb (`evidence --suite full`) or nothing. `-h` alone keeps the command's help (it lists the
    verbs); a word that is not a verb is left for argparse to refuse ("invalid choice")."""
    default = getattr(p, "default_verb", None)
    if default is None:
        return arg_strings
    i = 0
    while i < len(arg_strings):
        token = arg_strings[i]
        name = token.split("=", 1)[0]
        action = p._option_string_actions.get(name) if token.startswith("-") else None
        if action is None or token in ("-h", "--help"):
            break
        i += 1 if action.nargs == 0 or "=" in token else 2
    rest = arg_strings[i:]
    if rest and (not rest[0].startswith("-") or rest[0] in ("-h", "--help")):
        return arg_strings
    return [default, *arg_strings]


def defaults(module: ModuleType, *, root: Path | None, output_format: str, **values: Any) -> argparse.Namespace:
    """The namespace `skill-eval CMD --root ROOT --format FORMAT` would give `module.run` (its default
    verb, if it has verbs), then `values` set: for a command run as a step of another (`pr`, `release stage`)."""
    p = argparse.ArgumentParser(add_help=False)
    add_common_arguments(p)
    module.add_arguments(p)
    for verb in verbs_of(p).values():
        add_common_arguments(verb, inherited=True)
    ns = p.parse_args(with_default_verb(p, []))
    ns.root, ns.output_format = root, output_format
    finish_output(ns)
    for key, value in values.items():
        setattr(ns, key, value)
    return ns


# -- the precedence rule -------------------------------------------------------------------------------

def flag_or_config(flag: T | None, configured: T) -> T:
    """The value of a setting a flag and the configuration can both give: the flag when given (not
    None, even if 0 or empty), else the configured value (the schema's default when unset)."""
    return configured if flag is None else flag


# -- shared flags ----------------------------------------------------------------------------------------

TRUST_BASE_HELP = ("git ref the trust policy is read from (default: SKILL_EVAL_BASE, the pull request's target, "
                   "origin's default branch, then local main/master; docs/SIGNING.md)")


def add_base_argument(p: argparse.ArgumentParser, help: str | None = None, also: str = "") -> None:
    """`--base REF`, declared once: the commit the trust policy (allowed_signers, evals.signatures,
    release_sources) is read from (`load_config` sets `cfg.base_ref` from it), and for the commands that
    select by change (`run`, `select`, `evidence`) the ref the moved digests are computed against.
    `help` replaces the text; `also` adds what else the command uses it for."""
    text = help or TRUST_BASE_HELP + (f"; {also}" if also else "")
    p.add_argument("--base", default=None, metavar="REF", help=text)


def nonempty(text: str) -> str:
    """An argparse `type`: a value that may not be empty (an empty --model is no model id)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("may not be empty")
    return text


class AgentFlag:
    """One agent flag: its option string, its argparse keywords, the RunOptions field it sets and the
    [agent] key it falls back to (None: no configured value; the flag alone decides)."""

    __slots__ = ("config", "field", "kwargs", "option")

    def __init__(self, option: str, field: str, config: str | None, **kwargs: Any) -> None:
        self.option, self.field, self.config, self.kwargs = option, field, config, kwargs

    @property
    def dest(self) -> str:
        return self.option.removeprefix("--").replace("-", "_")


def agent_flags() -> dict[str, AgentFlag]:
    """Every flag that says how an agent is launched (`run`, `plan`, `propose`, `release stage --run`),
    by name, in help order."""
    from skill_eval.commands._common import bounded_float, bounded_int
    from skill_eval.content.config import COST_MAX, MAX_TURNS_MAX, TIMEOUT_MAX
    from skill_eval.harness.adapters import adapter_names

    flags = (
        AgentFlag("--agent", "adapter", "adapter", choices=adapter_names(),
                  help="adapter (default: [agent] adapter in the config)"),
        AgentFlag("--model", "model", "model", type=nonempty, help="model id passed to the agent (default: [agent] model)"),
        AgentFlag("--model-server", "model_server", None, metavar="scripted:PATH",
                  help="replay scripted model turns from a model script file (tests, demos)"),
        AgentFlag("--base-url", "base_url", None, type=nonempty, help="OpenAI-style endpoint for --agent openai-compatible"),
        AgentFlag("--agent-binary", "binary", None, type=nonempty,
                  help="path of the agent CLI (default: PATH, then .cache/agent-clis)"),
        AgentFlag("--no-auth", "no_auth", None, action="store_true",
                  help="the --base-url endpoint needs no credential (implied for loopback)"),
        AgentFlag("--max-turns", "max_turns", "max_turns", type=bounded_int(1, MAX_TURNS_MAX),
                  help=f"1..{MAX_TURNS_MAX} (default: [agent] max_turns)"),
        AgentFlag("--timeout", "timeout", "timeout_seconds", type=bounded_float(0, TIMEOUT_MAX, low_inclusive=False),
                  help=f"wall-clock seconds per agent run, > 0 and <= {TIMEOUT_MAX:g} (default: [agent] timeout_seconds)"),
        AgentFlag("--max-cost", "max_cost_usd", "max_cost_usd", type=bounded_float(0, COST_MAX),
                  help="USD per run; a run over it is sealed incomplete (default: [agent] max_cost_usd)"),
        AgentFlag("--max-tokens", "max_tokens", "max_tokens", type=bounded_int(1, 1_000_000),
                  help="tokens per model reply (default: [agent] max_tokens)"),
        AgentFlag("--max-total-tokens", "max_total_tokens", "max_total_tokens", type=bounded_int(1, 1_000_000_000),
                  help="token budget per run (default: [agent] max_total_tokens); reached -> sealed budget_stop"),
        AgentFlag("--temperature", "temperature", None, type=float,
                  help="sampling temperature for a real model (openai-compatible; default: the endpoint's)"),
        AgentFlag("--seed", "seed", None, type=int,
                  help="base sampling seed: each run sends its own seed derived from it (recorded in meta.json)"),
    )
    return {f.option.removeprefix("--"): f for f in flags}


def add_agent_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup, *names: str,
                        note: str = "", help: dict[str, str] | None = None) -> None:
    """Add the agent flags `names` (agent_flags' keys), in the order given. `note` prefixes every
    help (`--run: `); `help` replaces one flag's help where a command means more by it."""
    table = agent_flags()
    for name in names:
        flag = table[name]  # a KeyError is a typo in a command module
        kwargs = dict(flag.kwargs)
        kwargs["help"] = note + (help or {}).get(name, kwargs["help"])
        p.add_argument(flag.option, **kwargs)


def agent_options(args: argparse.Namespace, cfg: Config) -> dict[str, Any]:
    """The RunOptions fields every agent flag decides, resolved: the flag when the command declares
    it and it was given, else [agent]'s value (or the RunOptions default for a flag with none)."""
    out: dict[str, Any] = {}
    for flag in agent_flags().values():
        value = getattr(args, flag.dest, None)
        if flag.config is not None:
            out[flag.field] = flag_or_config(value, getattr(cfg.agent, flag.config))
        elif value is not None:
            out[flag.field] = value
    return out


def add_judge_arguments(p: argparse.ArgumentParser, *, prefix: str = "", note: str = "") -> None:
    """The judge panel's flags (`judge`; `release stage` with prefix "judge-"): one or more judges
    at OpenAI-style endpoints, or scripted ones. Any of them replaces skill-eval.toml's [judge] table."""
    p.add_argument(f"--{prefix}base-url", action="append", default=None, type=nonempty,
                   help=f"{note}OpenAI-style endpoint including /v1 (one, or one per --{prefix}model)")
    p.add_argument(f"--{prefix}model", action="append", default=None, type=nonempty,
                   help=f"{note}judge model id (sent and stamped); repeat for a panel (a release needs >= 2)")
    p.add_argument(f"--{prefix}api-key-env", default=None, metavar="VAR",
                   help=f"{note}environment variable holding the judge endpoint's key")
    p.add_argument(f"--{prefix}model-server", action="append", default=None, metavar="scripted:PATH",
                   help=f"{note}a scripted judge (tests; never counts as judged for a release); repeat for a panel")
    p.add_argument(f"--{prefix}kappa-floor", type=float, default=None,
                   help=f"{note}a panel dimension whose kappa is below this needs human review "
                        "(default: [judge] kappa_floor, else 0.6)")

