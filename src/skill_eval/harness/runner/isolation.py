"""The OS sandbox around the agent (DESIGN §8): what it can see, and making sure it dies with us.

Why: the agent under test is an adversary. Without an OS boundary it could read the runner's
credentials in /proc/<pid>/environ, edit the recorder's store, read the ground truth in the
repository, and outlive an interrupted run. Three levels, the strongest the platform allows,
recorded in every bundle's meta (`isolation`) so the release profile can refuse weak evidence:

* `bwrap` (bubblewrap): its own PID namespace with a fresh /proc (no runner process is visible),
  a new session, the whole filesystem read-only with the repository checkout, the runner's home
  and every sandbox (with the recorder's store) hidden under empty tmpfs mounts, a private /tmp,
  only this sandbox's work/home/tmp writable, and re-exposed read-only only what the agent process
  needs to run: the Python prefixes, the skill_eval package (the in-process loop adapters run
  `skill_eval.harness.adapters.agent_loop`), the schemas it validates a model script with, and the agent
  CLI install dir. The network is shared (adapters talk to loopback model servers).
  `--die-with-parent` ends the namespace when the runner dies, even by SIGKILL.
* `uid`: as root without bubblewrap, the agent runs as an unprivileged uid (setpriv), so the
  runner's /proc, the store and the repository are protected by permissions only.
* `none`: unisolated (still killed with the runner through PR_SET_PDEATHSIG where setpriv exists).

Every spawned agent is a process-group leader registered in LIVE, so a timeout or an interrupt
kills the whole group.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from skill_eval.core.vocab import IsolationLevel

LEVELS: tuple[IsolationLevel, ...] = ("bwrap", "uid", "none")
ISOLATION_ENV = "SKILL_EVAL_ISOLATION"  # force a weaker level (tests, debugging); never a stronger one
AGENT_UID = 65534  # nobody
LIVE: set[int] = set()  # process groups of running agents
INTERRUPTED = threading.Event()  # set by kill_all: in-flight runs abort instead of sealing a bundle
_live_lock = threading.Lock()


class Interrupted(Exception):
    """The runner was interrupted while this agent ran: nothing is sealed (resume re-runs the item)."""


@functools.lru_cache(maxsize=1)
def _bwrap_works() -> bool:
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        res = subprocess.run([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                              "--die-with-parent", "true"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0


def available() -> IsolationLevel:
    """The strongest level this machine supports."""
    if _bwrap_works():
        return "bwrap"
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("setpriv"):
        return "uid"
    return "none"


def level(requested: str | None = None) -> IsolationLevel:
    """The level to use: the strongest available, or a weaker one asked for (SKILL_EVAL_ISOLATION)."""
    best = available()
    want = requested or os.environ.get(ISOLATION_ENV) or best
    if want not in LEVELS:
        raise ValueError(f"isolation level {want!r} is not one of {', '.join(LEVELS)}")
    return want if LEVELS.index(want) >= LEVELS.index(best) else best


def checkout_of(path: Path) -> Path | None:
    """The source checkout (a directory holding pyproject.toml or .git) containing path, if any."""
    for p in [path, *path.parents]:
        if p != Path(p.anchor) and ((p / "pyproject.toml").is_file() or (p / ".git").exists()):
            return p
    return None


@dataclass(frozen=True)
class View:
    """What the agent sees: writable trees, read-only trees, and trees hidden under empty tmpfs."""

    writable: tuple[Path, ...]
    readonly: tuple[Path, ...]
    hidden: tuple[Path, ...]
    cwd: Path


def hidden_roots(repo_root: Path, sandbox_parent: Path) -> list[Path]:
    """What the agent must not see: the repository, the package and venv checkouts, the runner's home
    and every sandbox (the recorder also refuses subject operands under these, runner/recorder.py)."""
    hidden = {Path(repo_root).resolve(), Path(sandbox_parent).resolve(), Path.home().resolve()}
    for p in (Path(__file__).resolve().parents[2], Path(sys.prefix).resolve()):
        if (co := checkout_of(p)) is not None:
            hidden.add(co)
    return sorted(hidden)


def agent_view(repo_root: Path, sandbox_parent: Path, *, writable: Sequence[Path], readonly: Sequence[Path],
               cwd: Path, extra_exposed: Iterable[Path] = ()) -> View:
    """The bwrap view for one run: hide the repository, the package checkout, the runner's home and
    all sandboxes; re-expose read-only what the agent process needs (see the module docstring)."""
    package = Path(__file__).resolve().parents[2]  # .../skill_eval
    hidden = hidden_roots(repo_root, sandbox_parent)
    exposed = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), package,
               *(Path(os.path.abspath(p)) for p in extra_exposed)}  # as named: the agent's argv uses these paths
    if (co := checkout_of(package)) is not None and (co / "schemas").is_dir():
        exposed.add(co / "schemas")  # skill_eval.core.schemas falls back to the source tree's schemas/
    return View(tuple(Path(p) for p in writable), tuple(sorted(exposed)) + tuple(Path(p) for p in readonly),
                tuple(sorted(hidden)), Path(cwd))


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def bwrap_argv(view: View, *, network: bool = True) -> list[str]:
    exe = shutil.which("bwrap") or "bwrap"
    # --cap-drop ALL: run as root, bwrap would keep every capability, and a process inside could
    # `umount` the tmpfs hiding the repository or `mount -o remount,rw /` (tests/harness/test_tool_jail.py).
    argv = [exe, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", *([] if network else ["--unshare-net"]),
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]  # noqa: S108 - a private /tmp
    for h in view.hidden:
        if h.is_dir() and h != Path("/"):
            argv += ["--tmpfs", str(h)]
    hidden = [*view.hidden, Path("/tmp")]  # noqa: S108
    for e in view.readonly:
        # re-expose only what a hidden tree covers (and never a tree that contains a hidden one)
        if e.exists() and _under(e, hidden) and not any(h != e and e in h.parents for h in view.hidden):
            argv += ["--ro-bind", str(e), str(e)]
    for w in view.writable:
        argv += ["--bind", str(w), str(w)]
    return [*argv, "--chdir", str(view.cwd), "--"]


@dataclass(frozen=True)
class ToolJail:
    """Where the runner's own tool processes run: the subject behind the recorder, seed/setup/action
    commands and the git digests of facts.json.

    They run outside the agent's sandbox on trees the agent wrote, so everything they read is the
    adversary's: a `.git/config` or `~/.gitconfig` naming a `core.fsmonitor` hook, a clean filter or
    a pager, a tool config naming a template. Run as the runner, any of those would execute the
    agent's code outside its sandbox, where it could rewrite the record store. In the jail (bwrap,
    no network) the whole filesystem is read-only, the repository, the runner's home and every
    sandbox (record stores included) are hidden, and only the work tree, the sandbox home/tmp and a
    call's own output directory are writable: a planted hook runs, but with no more reach than the
    agent had. Without bubblewrap (isolation uid/none) the prefix is empty; those levels already
    make the bundle unisolated evidence (never a release pass).
    """

    view: View | None

    def argv(self, cwd: Path | str, extra_writable: Iterable[Path | str] = ()) -> list[str]:
        if self.view is None:
            return []
        writable = (*self.view.writable, *(Path(p) for p in extra_writable))
        return bwrap_argv(View(writable, self.view.readonly, self.view.hidden, Path(cwd)), network=False)


def tool_jail(level_name: str, hidden: Sequence[Path], writable: Sequence[Path],
              readonly: Iterable[Path] = ()) -> ToolJail:
    """The jail for one sandbox's runner-side tools (see ToolJail); empty below the bwrap level.

    readonly: trees the tools need that a hidden tree may cover (the subject's installation)."""
    if level_name != "bwrap":
        return ToolJail(None)
    package = Path(__file__).resolve().parents[2]
    hidden_all = {Path(h) for h in hidden}
    # path-named Unix sockets survive --unshare-net: other runs' or the host's, under /run and /var/tmp
    hidden_all.update(p for p in (Path("/run"), Path("/var/run"), Path("/var/tmp")) if p.is_dir() and not p.is_symlink())  # noqa: S108 - hidden, not used
    # an installation that is (or contains) a hidden root would re-expose it: only the Python prefixes then
    tools = {Path(p) for p in readonly if not any(h == Path(p) or Path(p) in h.parents for h in hidden_all)}
    exposed = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), package, *tools}
    return ToolJail(View(tuple(Path(w) for w in writable), tuple(sorted(exposed)),
                         tuple(sorted(hidden_all)), Path("/")))


def wrap(level_name: str, argv: Sequence[str], view: View | None) -> list[str]:
    """argv prefixed so the agent runs at `level_name` (and dies with the runner)."""
    setpriv = shutil.which("setpriv")
    if level_name == "bwrap":
        assert view is not None
        return [*bwrap_argv(view), *argv]
    if level_name == "uid":
        return [setpriv or "setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--pdeathsig=KILL", "--", *argv]
    return [setpriv, "--pdeathsig=KILL", "--", *argv] if setpriv else list(argv)


def _world_executable(path: str) -> bool:
    """Can any uid run this file (o+x on it and on every directory above its real path)?"""
    real = Path(os.path.realpath(path))
    try:
        return all(os.stat(p).st_mode & 0o001 for p in [real, *real.parents])
    except OSError:
        return False


def client_python(level_name: str) -> str:
    """The interpreter of the shim client: this one, unless a separate-uid agent could not run it."""
    if level_name != "uid" or _world_executable(sys.executable):
        return sys.executable
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if _world_executable(candidate):
            return candidate
    return sys.executable


def subject_prefix() -> list[str]:
    """For the recorder's tool processes: killed when the thread that started them (the runner) dies."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig=KILL", "--"] if setpriv else []


def prepare_tree(level_name: str, writable: Iterable[Path]) -> None:
    """At the uid level, hand the writable trees to the agent's uid (other levels: nothing to do)."""
    if level_name != "uid":
        return
    for top in writable:
        for dirpath, dirnames, filenames in os.walk(top):
            for name in [*dirnames, *filenames]:
                with contextlib.suppress(OSError):
                    os.lchown(os.path.join(dirpath, name), AGENT_UID, AGENT_UID)
        os.chown(top, AGENT_UID, AGENT_UID)


def register(pgid: int) -> None:
    with _live_lock:
        LIVE.add(pgid)


def unregister(pgid: int) -> None:
    with _live_lock:
        LIVE.discard(pgid)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)


def kill_all() -> None:
    """Kill every running agent's process group (interrupt of the runner)."""
    INTERRUPTED.set()
    with _live_lock:
        groups = list(LIVE)
    for pgid in groups:
        kill_group(pgid)


# ----------------------------------------------------------------------------- sandbox parent

SANDBOX_DIR_ENV = "SKILL_EVAL_SANDBOX_DIR"
SANDBOX_PREFIX = "sandbox-"


def default_parent() -> Path:
    """The runner-owned directory holding every sandbox of this user (SANDBOX_DIR_ENV overrides)."""
    env = os.environ.get(SANDBOX_DIR_ENV)
    return Path(env) if env else Path(tempfile.gettempdir()) / f"skill-eval-sandboxes-{os.getuid()}"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (a live writer or runner owns its temp/sandbox dir)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def discard_stale(parent: Path | None = None) -> list[Path]:
    """Remove sandboxes whose runner is dead (they may hold unredacted output); live ones stay."""
    parent = Path(parent) if parent is not None else default_parent()
    removed: list[Path] = []
    if not parent.is_dir() or parent.is_symlink():
        return removed
    for entry in sorted(parent.iterdir()):
        parts = entry.name.split("-")
        if not entry.name.startswith(SANDBOX_PREFIX) or len(parts) < 3 or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid != os.getpid() and not pid_alive(pid) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed
