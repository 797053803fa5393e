"""The OS sandbox around the agent (DESIGN §8): what it can see, and making sure it dies with us.

Why: the agent under test is an adversary. Without an OS boundary it could read the runner's
credentials in /proc/<pid>/environ, edit the recorder's store, read the ground truth in the
repository, and outlive an interrupted run. Three levels, the strongest the platform allows,
recorded in every bundle's meta (`isolation`) so the release profile can refuse weak evidence:

* `bwrap` (bubblewrap): its own PID namespace with a fresh /proc (no runner process is visible),
  a new session, and a root built from nothing: the system directories (/usr, /etc, ...) read-only
  at their own paths, and the sandbox at fixed paths (runner/layout.py: /work, /home/agent, /tmp,
  /run/skill-eval/...). The repository, the runner's home, the sandbox parent and the recorder's
  store are not mounted at all, so neither a mount point, the environment nor a command line
  names them. The network is shared (adapters talk to the runner's loopback servers: scripted
  models and the credential proxy). `--die-with-parent` ends the namespace when the runner dies,
  even by SIGKILL.
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
from skill_eval.harness.runner import layout
from skill_eval.harness.runner.layout import Layout

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
class Bind:
    """One tree the sandbox shows: the host path `src` at `dest` (the same path unless fixed)."""

    src: Path
    dest: str
    writable: bool = False


@dataclass(frozen=True)
class View:
    """What a bwrap sandbox sees: the system directories, then `binds` in order; `hidden` trees are
    covered by an empty tmpfs where a system directory would otherwise show them."""

    binds: tuple[Bind, ...]
    hidden: tuple[Path, ...]
    cwd: str


def hidden_roots(repo_root: Path, sandbox_parent: Path) -> list[Path]:
    """What the agent must not see: the repository, the package and venv checkouts, the runner's home
    and every sandbox (the recorder also refuses subject operands under these, runner/recorder.py)."""
    hidden = {Path(repo_root).resolve(), Path(sandbox_parent).resolve(), Path.home().resolve()}
    for p in (Path(__file__).resolve().parents[2], Path(sys.prefix).resolve()):
        if (co := checkout_of(p)) is not None:
            hidden.add(co)
    return sorted(hidden)


def agent_view(repo_root: Path, sandbox_parent: Path, lay: Layout, *, python_prefix: Path | None = None) -> View:
    """The agent's bwrap view: the fixed layout (runner/layout.py) over the system directories.

    Nothing of the repository, the runner's home or the sandbox parent is bound; a hidden tree
    that a system directory contains (a repository under /opt, say) is covered by a tmpfs."""
    binds = [Bind(lay.work, layout.WORK, True), Bind(lay.home, layout.HOME, True), Bind(lay.tmp, layout.TMP, True),
             Bind(lay.bin, layout.BIN), Bind(lay.sock, layout.SOCK), Bind(lay.agent, layout.AGENT)]
    if python_prefix is not None:
        binds.append(Bind(python_prefix, layout.PYTHON))
    return View(tuple(binds), tuple(hidden_roots(repo_root, sandbox_parent)), layout.WORK)


def _covers(outer: Path, inner: Path) -> bool:
    return outer == inner or outer in inner.parents


def bwrap_argv(view: View, *, network: bool = True) -> list[str]:
    """The system directories read-only at their own paths, /proc, /dev, a private /tmp, the hidden
    trees covered, the view's binds, and a read-only root: no path of the host appears as a mount
    point unless a bind names it."""
    exe = shutil.which("bwrap") or "bwrap"
    # --cap-drop ALL: run as root, bwrap would keep every capability, and a process inside could
    # `umount` the tmpfs hiding the repository or `mount -o remount,rw /` (tests/harness/test_tool_jail.py).
    argv = [exe, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", *([] if network else ["--unshare-net"])]
    tops = []
    for name in layout.SYSTEM_TOPS:
        top = Path("/") / name
        if top.is_symlink():
            argv += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            argv += ["--ro-bind", str(top), str(top)]
            tops.append(top.resolve())
    argv += ["--proc", "/proc", "--dev", "/dev"]
    if not any(b.dest == layout.TMP for b in view.binds):
        argv += ["--tmpfs", layout.TMP]
    # path-named Unix sockets of other runs or of the host, and trees a system directory contains
    cover = {*view.hidden, *(Path(p) for p in ("/var/tmp", "/var/run", "/var/lib/skill-eval"))}  # noqa: S108 - hidden
    for h in sorted(cover):
        real = h.resolve() if h.exists() else h
        if h.is_dir() and not h.is_symlink() and any(_covers(t, real) for t in tops):
            argv += ["--tmpfs", str(real)]
    for b in view.binds:
        if b.src.exists():
            argv += ["--bind" if b.writable else "--ro-bind", str(b.src), b.dest]
    return [*argv, "--remount-ro", "/", "--chdir", view.cwd, "--"]


@dataclass(frozen=True)
class ToolJail:
    """Where the runner's own tool processes run: seed/setup/action commands and the git digests
    of facts.json (the subject's calls run in `subject_view`'s jail, on their own snapshot).

    They run outside the agent's sandbox on trees the agent wrote, so everything they read is the
    adversary's: a `.git/config` or `~/.gitconfig` naming a `core.fsmonitor` hook, a clean filter or
    a pager, a tool config naming a template. Run as the runner, any of those would execute the
    agent's code outside its sandbox, where it could rewrite the record store. In the jail (bwrap,
    no network) only the system directories, the tools' installations (read-only) and the sandbox's
    work/home/tmp (writable, at their host paths) are there: the repository, the runner's home and
    every other sandbox (record stores included) are simply absent, so a planted hook runs with no
    more reach than the agent had. Without bubblewrap (isolation uid/none) the prefix is empty;
    those levels already make the bundle unisolated evidence (never a release pass).
    """

    view: View | None

    def argv(self, cwd: Path | str, extra_writable: Iterable[Path | str] = ()) -> list[str]:
        if self.view is None:
            return []
        binds = (*self.view.binds, *(Bind(Path(p), str(p), True) for p in extra_writable))
        return bwrap_argv(View(binds, self.view.hidden, str(cwd)), network=False)


def _tool_binds(readonly: Iterable[Path]) -> list[Bind]:
    """The Python prefixes, the skill_eval package and the tools' installations, read-only at their paths."""
    package = Path(__file__).resolve().parents[2]
    exposed = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), package, *(Path(p) for p in readonly)}
    return [Bind(p, str(p)) for p in sorted(exposed) if not layout.system_path(p)]


def tool_jail(level_name: str, hidden: Sequence[Path], writable: Sequence[Path],
              readonly: Iterable[Path] = ()) -> ToolJail:
    """The jail for one sandbox's runner-side tools (see ToolJail); empty below the bwrap level.

    readonly: trees the tools need (the subject's installation); an installation that is (or
    contains) a hidden tree is not bound: it would re-expose what the jail hides."""
    if level_name != "bwrap":
        return ToolJail(None)
    tools = [Path(p) for p in readonly if not any(_covers(Path(p), Path(h)) for h in hidden)]
    binds = [*_tool_binds(tools), *(Bind(Path(w), str(w), True) for w in writable)]
    return ToolJail(View(tuple(binds), tuple(Path(h) for h in hidden), "/"))


def subject_jail(level_name: str, hidden: Sequence[Path], readonly: Iterable[Path], snapshot: Path,
                 writable: Sequence[Path], at: str | None = None, live: bool = False) -> ToolJail:
    """The jail of one subject call: its operands' read-only snapshot (at `at`, the agent's /work,
    or at its host path), its own state and output directories writable, nothing else of any sandbox.
    live: `snapshot` is the live work tree of a tree-mode subject (`[subject] workspace = "tree"`),
    shown writable where the subject finds it. Empty below the bwrap level."""
    if level_name != "bwrap":
        return ToolJail(None)
    tools = [Path(p) for p in readonly if not any(_covers(Path(p), Path(h)) for h in hidden)]
    where = at or str(snapshot)
    binds = [*_tool_binds(tools), Bind(snapshot, where, live), *(Bind(Path(w), str(w), True) for w in writable)]
    return ToolJail(View(tuple(binds), tuple(Path(h) for h in hidden), where))


def jail_root(seen_root: str, readonly: Iterable[Path]) -> str | None:
    """Where a subject jail can show the snapshot: the agent's own root (e.g. /work), unless a tree the
    subject needs (its installation, the Python prefixes) lies below it on this host; then None."""
    needed = [b.src for b in _tool_binds([Path(p) for p in readonly])]
    root = Path(seen_root)
    return None if any(_covers(root, p) or _covers(p, root) for p in needed) else seen_root


@dataclass
class Command:
    """An agent's argv at its isolation level, and the descriptors it must inherit (pass_fds)."""

    argv: list[str]
    fds: tuple[int, ...] = ()

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = ()


def _args_fd(options: Sequence[str]) -> int:
    """bwrap's options in a memfd for `--args FD`: inside the sandbox, PID 1 is bwrap itself, and its
    command line (the bind sources: host paths) would be in /proc/1/cmdline for the agent to read."""
    fd = os.memfd_create("skill-eval-bwrap-args", os.MFD_CLOEXEC)
    data = b"".join(os.fsencode(o) + b"\0" for o in options)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def wrap(level_name: str, argv: Sequence[str], view: View | None) -> Command:
    """argv prefixed so the agent runs at `level_name` (and dies with the runner); close() after spawning."""
    setpriv = shutil.which("setpriv")
    if level_name == "bwrap":
        assert view is not None
        full = bwrap_argv(view)
        fd = _args_fd(full[1:-1])  # everything between the program and the final `--`
        return Command([full[0], "--args", str(fd), "--", *argv], (fd,))
    if level_name == "uid":
        return Command([setpriv or "setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}", "--clear-groups",
                        "--inh-caps=-all", "--bounding-set=-all", "--pdeathsig=KILL", "--", *argv])
    return Command([setpriv, "--pdeathsig=KILL", "--", *argv] if setpriv else list(argv))


def _world_executable(path: str) -> bool:
    """Can any uid run this file (o+x on it and on every directory above its real path)?"""
    real = Path(os.path.realpath(path))
    try:
        return all(os.stat(p).st_mode & 0o001 for p in [real, *real.parents])
    except OSError:
        return False


def client_python(level_name: str) -> str:
    """The interpreter of the shim client as the agent names it: at the bwrap level the sandbox's
    (runner/layout.py: no venv or pyenv path of the host); else this one, unless a separate-uid
    agent could not run it."""
    if level_name == "bwrap":
        return layout.sandbox_python()[0]
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
        os.chmod(top, 0o700)  # the agent's, and nobody else's (the parent is traversable for it)


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
