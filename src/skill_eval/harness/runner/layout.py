"""Fixed paths inside the sandbox (issue 24 item 3): what the agent sees, and where it really is.

Why: an agent that reads its own environment, `/proc/self/mountinfo` or a process's cmdline
learns where it runs. With the host layout visible it learns where the repository (committed
evidence, `.git`, the ground truth) and the recorder's store are; with fixed paths it learns
nothing about the host. At the bwrap level the agent sees only:

    /work                  its work tree (the fixture copy)            <- <sandbox>/work
    /home/agent            HOME and the XDG dirs                       <- <sandbox>/home
    /tmp                   TMPDIR                                      <- <sandbox>/tmp
    /run/skill-eval/bin    the shim client, first on PATH (read-only) <- <sandbox>/bin
    /run/skill-eval/sock   the recorder's socket (read-only)          <- <sandbox>/run
    /run/skill-eval/agent  private read-only copies the agent process needs: the model script,
                           the in-process loop's Python library (lib/), the agent CLI (cli/)
                                                                       <- <sandbox>/agent

plus the system directories (/usr, /etc, ...) at their own paths. Nothing from the repository,
the runner's home or the sandbox parent is mounted; what the agent process needs from them (the
agent CLI installed under the repository's .cache, the skill_eval package and its few pure
dependencies) is hard-linked or copied into the sandbox's agent/ directory first, so no bind
source names the repository either. What remains, by the kernel's design, is the root field of a
bind mount in mountinfo: it names the sandbox's own directory within its filesystem (never the
repository, the store or the runner's home; hiding it would need the runner's own mount namespace).

Below the bwrap level there is no mount namespace: the layout is the identity and the agent sees
host paths (those levels already make a bundle unisolated evidence).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

WORK = "/work"
HOME = "/home/agent"
TMP = "/tmp"  # noqa: S108 - the sandbox's own TMPDIR, bound from <sandbox>/tmp
RUN = "/run/skill-eval"
BIN = f"{RUN}/bin"
SOCK = f"{RUN}/sock"
AGENT = f"{RUN}/agent"
PYTHON = f"{RUN}/python"  # the interpreter's prefix when no system interpreter of this version exists
SYSTEM_TOPS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "srv", "var", "sys", "nix", "snap", "gnu")
# the pure-Python packages the in-process loop imports besides skill_eval (tests/harness/runner/test_layout.py)
LOOP_PACKAGES = ("fastjsonschema", "rfc8785", "yaml", "_yaml")
FILE_IO_HELPERS = ("mirror", "loop_library")  # copies into the sandbox's own agent/ directory


def system_path(path: str | os.PathLike[str]) -> bool:
    """Whether `path` lies in a system directory every sandbox shows at its own path."""
    parts = Path(os.path.abspath(path)).parts
    return len(parts) > 1 and parts[1] in SYSTEM_TOPS


@dataclass(frozen=True)
class Layout:
    """The agent's paths and the host paths behind them (identity when `fixed` is False)."""

    fixed: bool
    work: Path
    home: Path
    tmp: Path
    bin: Path
    sock: Path
    agent: Path

    @classmethod
    def of(cls, root: Path, fixed: bool) -> Layout:
        return cls(fixed, root / "work", root / "home", root / "tmp", root / "bin", root / "run", root / "agent")

    def pairs(self) -> list[tuple[str, Path]]:
        """(agent path, host path), most specific first."""
        if not self.fixed:
            return [(str(p), p) for p in (self.work, self.home, self.tmp, self.bin, self.sock, self.agent)]
        return [(BIN, self.bin), (SOCK, self.sock), (AGENT, self.agent), (HOME, self.home), (WORK, self.work),
                (TMP, self.tmp)]

    def visible(self, host: str | os.PathLike[str]) -> str:
        """The path under which the agent sees the host path `host` (unchanged when not mapped)."""
        text = os.fspath(host)
        for seen, real in self.pairs():
            r = str(real)
            if text == r or text.startswith(r + "/"):
                return seen + text[len(r):]
        return text

    def host(self, seen: str | os.PathLike[str]) -> Path:
        """The host path behind the agent's path `seen` (unchanged when not mapped)."""
        text = os.fspath(seen)
        for s, real in self.pairs():
            if text == s or text.startswith(s + "/"):
                return Path(str(real) + text[len(s):])
        return Path(text)

    def path_env(self, base: str) -> str:
        """The agent's PATH: the shim first, then only system entries of `base` when paths are fixed
        (a venv or a pyenv under the repository or the runner's home would name a host path)."""
        entries = [p for p in base.split(os.pathsep) if p and (not self.fixed or system_path(p))]
        return os.pathsep.join([self.visible(self.bin), *entries])


def sandbox_python() -> tuple[str, Path | None]:
    """(the interpreter the agent side runs, the prefix to bind at PYTHON or None).

    A system interpreter of this very version (the loop's library holds compiled modules of it)
    needs nothing mounted; otherwise this interpreter's prefix is bound at the fixed PYTHON path."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for candidate in (Path(sys.base_prefix) / "bin" / version, Path("/usr/bin") / version, Path("/usr/local/bin") / version):
        if system_path(candidate) and candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), None
    return f"{PYTHON}/bin/{version}", Path(sys.base_prefix).resolve()


def mirror(src: Path, dest: Path) -> None:
    """Hard-link (or, across filesystems, copy) the tree `src` to `dest`, keeping relative links;
    __pycache__ is left out (compiled files embed the host path of their source)."""
    src = src.resolve()
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = os.path.relpath(dirpath, src)
        target = dest / rel if rel != os.curdir else dest
        target.mkdir(parents=True, exist_ok=True)
        for name in [*filenames, *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))]:
            s, d = os.path.join(dirpath, name), target / name
            if os.path.islink(s):
                os.symlink(os.readlink(s), d)
                continue
            try:
                os.link(s, d)
            except OSError:
                shutil.copy2(s, d)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]


def loop_library(dest: Path) -> Path:
    """The in-process loop's importable library in `dest`: skill_eval (with its schemas) and the
    few packages it imports, copied so no path names the repository or a venv."""
    package = Path(__file__).resolve().parents[2]
    mirror(package, dest / "skill_eval")
    schemas = package / "schemas"
    if not schemas.is_dir():
        schemas = package.parents[1] / "schemas"  # a source checkout (core.schemas falls back to it)
        if schemas.is_dir():
            mirror(schemas, dest / "skill_eval" / "schemas")
    for name in LOOP_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            mirror(origin.parent, dest / name)
        else:
            shutil.copy2(origin, dest / origin.name)
    return dest


def cli_root(binary: str) -> Path | None:
    """The directory to mirror for an agent CLI that is not in a system directory: the folder that
    holds its node_modules (the e2e cache), else the binary's own directory. None: a system CLI."""
    named = Path(os.path.abspath(binary))
    if system_path(named) and system_path(named.resolve()):
        return None
    for path in (named, named.resolve()):
        for parent in path.parents:
            if parent.name == "node_modules":
                return parent.parent
    return named.resolve().parent
