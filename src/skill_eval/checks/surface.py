"""The subject's CLI surface: a committed command/option reference, drift-checked.

Skills may only name commands and flags the subject really has. The reference is
extracted from the installed tool's `--help` (click/rich-click style boxed help, as
abicheck prints it), committed, and compared against the installed tool in `pr`, so
an upgrade that removes a flag fails the check instead of silently invalidating skills.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from skill_eval import formats, schemas, strict
from skill_eval.config import Config
from skill_eval.errors import CheckFailed, ConfigError

_FLAG = re.compile(r"^-{1,2}[A-Za-z0-9][A-Za-z0-9_-]*$")
_ROW = re.compile(r"^[│|] (\S.*?)\s*[│|]?\s*$")
_CMD = re.compile(r"^[a-z][a-z0-9_-]*$")
HELP_ENV = {"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1", "LC_ALL": "C.UTF-8"}


def find_subject(cfg: Config, explicit: str | None = None) -> Path:
    """The installed subject: --subject, then $SKILL_EVAL_REAL, then PATH."""
    beside = Path(sys.executable).parent / cfg.subject.name  # installed in the same environment as skill-eval
    candidate = (explicit or os.environ.get(cfg.subject.real_env) or shutil.which(cfg.subject.name)
                 or (str(beside) if beside.is_file() else None))
    if not candidate or not Path(candidate).is_file():
        want = f"{cfg.subject.package or cfg.subject.name}=={cfg.subject.version}" if cfg.subject.version else cfg.subject.name
        raise CheckFailed(f"{cfg.subject.name} is not installed (not on PATH, {cfg.subject.real_env} unset)",
                          fix=f"pip install {want}, or pass --subject PATH")
    return Path(candidate)


def _help(tool: Path, path: list[str]) -> str:
    env = {**os.environ, **HELP_ENV}
    proc = subprocess.run([str(tool), *path, "--help"], capture_output=True, text=True, env=env, timeout=60, check=False)
    if proc.returncode != 0:
        raise CheckFailed(f"`{tool.name} {' '.join(path)} --help` failed: {proc.stderr.strip()[:200]}")
    text = proc.stdout
    if "--help-all" in text:  # some commands hide advanced options behind --help-all
        more = subprocess.run([str(tool), *path, "--help-all"], capture_output=True, text=True, env=env, timeout=60, check=False)
        if more.returncode == 0:
            text += "\n" + more.stdout
    return text


def parse_help(text: str) -> tuple[list[str], list[str]]:
    """(options, subcommands) of one help page, boxed (rich-click) or plain (click)."""
    options: set[str] = set()
    commands: list[str] = []
    section = ""
    for raw in text.splitlines():
        boxed = raw[:1] in ("│", "|")
        line = raw[2:].rstrip().rstrip("│|").rstrip() if boxed else raw.rstrip()
        if not boxed and re.match(r"^[A-Z][A-Za-z ]*:$", line):
            section = line[:-1].lower()
            continue
        indent = len(line) - len(line.lstrip())
        first = line.strip()
        if not first or indent > (0 if boxed else 2):
            continue
        tokens = first.split()
        if first.startswith("-"):
            for tok in tokens:
                parts = [p for p in tok.rstrip(",").split("/") if p]
                if parts and all(_FLAG.match(p) for p in parts):
                    options.update(parts)
                elif tok == "/":
                    continue
                else:
                    break
        elif (boxed or section == "commands") and _CMD.match(tokens[0]) and (len(tokens) == 1 or "  " in first):
            commands.append(tokens[0])
    return sorted(options), commands


def extract(tool: Path, *, version: str | None = None) -> dict[str, Any]:
    """Walk the command tree breadth-first, collecting every command's options."""
    tree: dict[str, list[str]] = {}
    frontier: list[list[str]] = [[]]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        while frontier:
            pages = list(pool.map(lambda p: (p, _help(tool, p)), frontier))
            frontier = []
            for path, text in pages:
                opts, cmds = parse_help(text)
                tree[" ".join(path)] = opts
                frontier.extend([*path, c] for c in cmds if " ".join([*path, c]) not in tree)
    proc = subprocess.run([str(tool), "--version"], capture_output=True, text=True, env={**os.environ, **HELP_ENV}, check=False, timeout=60)
    return {
        "schema_version": formats.FORMATS["cli_surface"],
        "tool": tool.name,
        "version": version or _version_of(proc.stdout),
        "commands": {k: {"options": v} for k, v in sorted(tree.items())},
    }


def _version_of(text: str) -> str:
    """First dotted version number in `--version` output ('abicheck 0.7.0 (...)' -> '0.7.0')."""
    m = re.search(r"\b(\d+(?:\.\d+)+[\w.+-]*)", text)
    return m.group(1) if m else text.strip()


def load_reference(cfg: Config) -> dict[str, Any]:
    if not cfg.subject.cli_reference:
        raise ConfigError("subject.surface.cli_reference is not configured", source=cfg.source)
    path = cfg.root / cfg.subject.cli_reference
    if not path.is_file():
        raise CheckFailed(f"{cfg.subject.cli_reference} does not exist", fix="run `skill-eval surface --write` and commit it")
    return schemas.validate(formats.upgrade(strict.load_json(path), "cli_surface", path), "cli_surface", path)


def write_reference(cfg: Config, tool: Path) -> Path:
    ref = extract(tool)
    path = cfg.root / (cfg.subject.cli_reference or "")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(strict.dumps_json(ref), encoding="utf-8")
    os.replace(tmp, path)
    return path


def drift(reference: dict[str, Any], installed: dict[str, Any]) -> list[str]:
    """Differences between the committed reference and the installed tool's help."""
    problems = []
    if reference.get("version") != installed.get("version"):
        problems.append(f"installed {installed.get('tool')} is {installed.get('version')}, the reference describes {reference.get('version')}")
    ref, now = reference["commands"], installed["commands"]
    for cmd in sorted(set(ref) | set(now)):
        label = cmd or "(top level)"
        if cmd not in now:
            problems.append(f"command {label!r} is in the reference but not in the installed tool")
        elif cmd not in ref:
            problems.append(f"command {label!r} exists in the installed tool but not in the reference")
        else:
            gone = sorted(set(ref[cmd]["options"]) - set(now[cmd]["options"]))
            new = sorted(set(now[cmd]["options"]) - set(ref[cmd]["options"]))
            if gone:
                problems.append(f"{label}: options removed from the installed tool: {', '.join(gone)}")
            if new:
                problems.append(f"{label}: options added in the installed tool: {', '.join(new)}")
    return problems
