"""Run by the SUBJECT's interpreter (`python -c <this source> NAME`): print its click tree as JSON.

Why: extracting the CLI reference by `--help` costs one process start per command (15 for
abicheck, ~7 s); importing the entry point once and walking click's command objects gives
the same options in one start. Stdlib + click only: this runs in the subject's environment,
where skill_eval is not importable. Anything unexpected prints {"error": ...} and the caller
falls back to parsing `--help`.

Options are every click.Option's names (primary and secondary, hidden ones included: they
are what `--help-all` reveals and what the tool accepts); commands are the non-hidden
subcommands `--help` lists. `version_text` is what `--version` prints, captured in-process.
"""

from __future__ import annotations  # the subject's interpreter may predate builtin generics

import contextlib
import io
import json
import sys
from typing import Any

MARKER = "@@skill-eval-click-walk@@"


def _walk(click: Any, cmd: Any, name: str, parent: Any, path: list[str], out: dict[str, list[str]]) -> None:
    ctx = click.Context(cmd, info_name=name, parent=parent, **(cmd.context_settings or {}))
    opts: set[str] = set()
    for p in cmd.get_params(ctx):
        if isinstance(p, click.Option):
            opts.update(p.opts)
            opts.update(p.secondary_opts)
    out[" ".join(path)] = sorted(opts)
    if isinstance(cmd, click.Group):
        for sub_name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, sub_name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            _walk(click, sub, sub_name, ctx, [*path, sub_name], out)


def main(name: str) -> dict[str, Any]:
    from importlib.metadata import entry_points

    try:
        eps = list(entry_points(group="console_scripts", name=name))
    except TypeError:  # Python < 3.10
        eps = [e for e in entry_points().get("console_scripts", []) if e.name == name]
    if not eps:
        return {"error": f"no console_scripts entry point named {name!r}"}
    root = eps[0].load()
    import click

    if not isinstance(root, click.Command):
        return {"error": f"{eps[0].value} is not a click command"}
    tree: dict[str, list[str]] = {}
    _walk(click, root, name, None, [], tree)
    buf = io.StringIO()
    # a tool without --version falls back to the distribution's version in the caller
    with contextlib.redirect_stdout(buf), contextlib.suppress(Exception, SystemExit):
        root.main(["--version"], prog_name=name, standalone_mode=False)
    dist = getattr(eps[0], "dist", None)
    return {"tree": tree, "version_text": buf.getvalue(), "dist_version": getattr(dist, "version", None)}


if __name__ == "__main__":
    try:
        result = main(sys.argv[1])
    except BaseException as exc:  # noqa: BLE001 - reported to the caller, which falls back to --help
        result = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + MARKER + json.dumps(result))
