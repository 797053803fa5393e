"""The subject's CLI surface: a committed command/option reference, drift-checked.

Skills may only name commands and flags the subject really has. The reference is
extracted from the installed tool, committed, and compared against the installed tool in
`pr`, so an upgrade that removes a flag fails the check instead of silently invalidating
skills.

Extraction: for a click CLI, one process of the subject's own interpreter imports the
entry point and walks the command tree (`_click_walk.py`); otherwise every command's
`--help` (click/rich-click boxed help, as abicheck prints it) is parsed, one process per
page. Either result is cached under `.cache/skill-eval/surface/`, keyed by the installed
distribution (name, version, RECORD digest, size+mtime of every file it lists) and the
environment's other distributions, so an unchanged environment never runs the subject.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import formats, fsio, schemas, strict
from skill_eval.core.errors import CheckFailed, ConfigError, SkillEvalError

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


WALK_VERSION = "1"  # bump when the extraction rules change: it is part of the cache key
CACHE_DIR = Path(".cache/skill-eval/surface")


def extract(tool: Path, *, version: str | None = None, cache_root: Path | None = None) -> dict[str, Any]:
    """The tool's reference: cached, else one in-process click walk, else `--help` parsing."""
    key = cache_key(tool) if cache_root is not None else None
    cache_file = cache_root / CACHE_DIR / f"{key}.json" if cache_root is not None and key else None
    if cache_file is not None and cache_file.is_file():
        try:
            cached = schemas.validate(strict.load_json(cache_file), "cli_surface", cache_file)
            return {**cached, "version": version} if version else cached
        except SkillEvalError:
            pass  # a corrupt cache entry is simply recomputed
    ref = walk_click(tool, version=version) or extract_by_help(tool, version=version)
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_name(f".{cache_file.name}.{os.getpid()}.tmp")
        tmp.write_text(strict.dumps_json(ref), encoding="utf-8")
        os.replace(tmp, cache_file)
    return ref


def _interpreter(tool: Path) -> str | None:
    """The python of a console-script wrapper (its `#!` line), or None for anything else."""
    try:
        with open(tool, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words or "python" not in Path(words[0]).name:
        return None
    return words[0]


def walk_click(tool: Path, *, version: str | None = None) -> dict[str, Any] | None:
    """One run of the subject's interpreter that walks its click tree; None when not applicable."""
    python = _interpreter(tool)
    if python is None:
        return None
    from skill_eval.checks import _click_walk

    source = Path(_click_walk.__file__).read_text(encoding="utf-8")
    env = {**os.environ, **HELP_ENV}
    try:
        proc = subprocess.run([python, "-c", source, tool.name], capture_output=True, text=True, env=env,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    head, sep, tail = proc.stdout.rpartition(_click_walk.MARKER)
    if proc.returncode != 0 or not sep:
        return None
    try:
        result = json.loads(tail)
    except ValueError:
        return None
    if not isinstance(result, dict) or "tree" not in result:
        return None
    found = version or (_version_of(result["version_text"]) if result.get("version_text", "").strip() else None) \
        or result.get("dist_version")
    return {
        "schema_version": formats.FORMATS["cli_surface"],
        "tool": tool.name,
        "version": found,
        "commands": {k: {"options": sorted(v)} for k, v in sorted(result["tree"].items())},
    }


def _dist_info(tool: Path) -> Path | None:
    """The *.dist-info directory whose console_scripts provide `tool`, found without running anything."""
    python = _interpreter(tool)
    if python is None:
        return None
    prefix = Path(python).parent.parent
    want = re.compile(rf"^\s*{re.escape(tool.name)}\s*=", re.MULTILINE)
    for site in sorted(prefix.glob("lib/python*/site-packages")):
        for info in sorted(site.glob("*.dist-info")):
            ep = info / "entry_points.txt"
            try:
                text = ep.read_text(encoding="utf-8")
            except OSError:
                continue
            section = text.split("[console_scripts]", 1)[1].split("\n[", 1)[0] if "[console_scripts]" in text else ""
            if want.search(section):
                return info
    return None


def cache_key(tool: Path) -> str | None:
    """A digest of everything the extraction depends on, or None (then nothing is cached)."""
    info = _dist_info(tool)
    if info is None:
        return None
    try:
        record = (info / "RECORD").read_bytes()
        tool_bytes = Path(tool).read_bytes()
    except OSError:
        return None
    h = hashlib.sha256()
    site = info.parent
    for part in (WALK_VERSION, str(Path(tool).resolve()), hashlib.sha256(tool_bytes).hexdigest(), info.name,
                 hashlib.sha256(record).hexdigest(), *sorted(p.name for p in site.glob("*.dist-info"))):
        h.update(part.encode() + b"\0")
    for line in record.decode("utf-8", "replace").splitlines():  # a file edited after install moves the key
        rel = line.rsplit(",", 2)[0]
        try:
            st = (site / rel).stat()
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        except OSError:
            h.update(f"{rel}\0missing\0".encode())
    return h.hexdigest()


def extract_by_help(tool: Path, *, version: str | None = None) -> dict[str, Any]:
    """Walk the command tree breadth-first through `--help`, collecting every command's options."""
    from concurrent.futures import ThreadPoolExecutor

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
    path = fsio.repo_path(cfg.root, cfg.subject.cli_reference)
    if not path.is_file():
        raise CheckFailed(f"{cfg.subject.cli_reference} does not exist", fix="run `skill-eval surface --write` and commit it")
    reference: dict[str, Any] = schemas.validate(formats.upgrade(strict.load_json(path), "cli_surface", path), "cli_surface", path)
    return reference


def write_reference(cfg: Config, tool: Path, *, cache: bool = True) -> Path:
    ref = extract(tool, cache_root=cfg.root if cache else None)
    if not cfg.subject.cli_reference:
        raise ConfigError("subject.surface.cli_reference is not configured", source=cfg.source)
    return fsio.write_file(cfg.root, cfg.subject.cli_reference, strict.dumps_json(ref))  # atomic, never through a link


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
