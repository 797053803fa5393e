"""The per-run sandbox (DESIGN §8): a fresh fixture copy with an isolated home, the shim first on PATH.

Why each piece exists:
* the fixture is copied through `InputRecorder.read_tree`, so every byte a run starts from is an
  observed input (freshness's completeness check reads `observed()`);
* HOME and the XDG dirs point into a private directory, so the agent and the subject (abicheck
  caches snapshots under XDG_CACHE_HOME) neither read the maintainer's state nor leave any;
* the shim client is installed first on PATH; it only asks the runner's recorder (runner/recorder.py)
  to run the subject, over a socket; the records and captures live in the recorder's store,
  outside everything the agent can see (runner/isolation.py hides it);
* setup commands and action commands run without the shim (they are the runner's, not the
  agent's), and an action naming the subject runs the real binary by absolute path (a PATH lookup
  of the bare name is exactly what the shim is there to intercept);
* tree digests before/after and the changed paths are computed here, by the runner, so facts.json
  never rests on anything the agent or adapter reports;
* credential values from the environment are redacted from everything written to a bundle, and a
  bundle that still contains one is refused at sealing (`assert_no_secrets`).

Layout of a sandbox: one run dir `sandbox-<runner pid>-<random>` in a runner-owned parent
(SANDBOX_DIR_ENV or <tmp>/skill-eval-sandboxes-<uid>), so leftovers of a dead runner are found and
removed on the next start (`discard_stale`), never mixed with other programs' temp files:
    work/    the sandbox root: the fixture copy, the agent's cwd
    home/    HOME, with .cache .config .local/share .local/state (the XDG dirs)
    tmp/     TMPDIR
    bin/     the shim client (read-only for the agent)
    run/     the recorder's socket (read-only for the agent)
    agent/   private read-only copies of what the agent process needs from the repository
    record/  the recorder's store: calls/ and captured/ (never visible to the agent)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_eval.content.inputs import InputRecorder
from skill_eval.core import hashing
from skill_eval.core.errors import InputError, SkillEvalError
from skill_eval.core.formats import FORMATS
from skill_eval.harness.runner import isolation
from skill_eval.harness.runner.client import install_client
from skill_eval.harness.runner.layout import Layout
from skill_eval.harness.runner.recorder import Recorder
from skill_eval.harness.runner.secrets import (  # noqa: F401 - re-exported: the secrets API moved to runner.secrets
    CREDENTIAL_PATTERNS,
    MIN_SECRET_LEN,
    SecretLeak,
    _forms,
    _marker,
    assert_no_secrets,
    redact,
    secret_values,
)

GIT_DOMAIN = "skill-eval-git-v1"
TIMEOUT_EXIT = 128 + signal.SIGKILL  # a command killed at its timeout reads like a SIGKILL death
DEFAULT_TIMEOUT = 300.0
BASE_ENV = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": "120",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "skill-eval", "GIT_AUTHOR_EMAIL": "skill-eval@invalid",
            "GIT_COMMITTER_NAME": "skill-eval", "GIT_COMMITTER_EMAIL": "skill-eval@invalid"}

FILE_IO_HELPERS = ("_write_file", "_read_file", "tree_state")  # tree_state walks the sandbox, never the repo



class SandboxError(SkillEvalError):
    """The sandbox could not be built (fixture, setup command, shim): the run is incomplete."""


# ----------------------------------------------------------------------------- file I/O helpers


def _write_file(path: Path, data: bytes, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    path.chmod(0o755 if executable else 0o644)


def _read_file(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


# ----------------------------------------------------------------------------- trees and git


@dataclass(frozen=True)
class TreeState:
    """A sandbox tree: its digest T(skill-eval-tree-v1) and per-file (mode, sha256)."""

    digest: str
    files: dict[str, tuple[str, str]]


def tree_state(root: Path) -> TreeState:
    """Fails closed (SandboxError) on what a tree digest cannot represent, e.g. a symlink the agent made."""
    try:
        entries = hashing.walk_tree(root, top_level_skip=True)
    except InputError as exc:
        raise SandboxError(f"sandbox tree cannot be digested: {exc}") from None
    return TreeState(hashing.digest_entries(hashing.TREE_DOMAIN, entries),
                     {e.path: (e.mode, hashing.sha256_bytes(e.data)) for e in entries})


def changed_paths(before: TreeState, after: TreeState) -> list[str]:
    """Paths added, removed, or changed in content or executable bit, in byte order."""
    paths = set(before.files) | set(after.files)
    return sorted((p for p in paths if before.files.get(p) != after.files.get(p)), key=lambda p: p.encode())


def _installation(real: Path) -> Path:
    """What the jailed subject needs to read to start: its venv (bin/..) or else its own directory."""
    real = real.resolve()
    return real.parents[1] if (real.parents[1] / "pyvenv.cfg").is_file() else real.parent


# Repository config (.git/config, .git/info/*) and the sandbox HOME are the agent's: these keys could
# run its code (fsmonitor hook, external diff, textconv) or narrow what git reports (untracked cache,
# excludes, attributes); the command line overrides them, and the environment below drops global config.
GIT_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "core.hooksPath=/dev/null",
            "-c", "diff.external=", "-c", "status.showUntrackedFiles=all", "-c", "core.excludesFile=/dev/null",
            "-c", "core.attributesFile=/dev/null")


def _git_env(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The runner's git environment: no global/system config, this tree's .git and worktree only."""
    out = {k: v for k, v in env.items() if not k.startswith("GIT_")}
    out.update({"HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent", "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_DIR": str(root / ".git"), "GIT_WORK_TREE": str(root),
                "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"})
    return out


def git_head(root: Path, env: Mapping[str, str], prefix: Sequence[str] = ()) -> str | None:
    """HEAD's object id from the runner's own git (None: no repository, no commit, or git failed).

    An object id cannot be forged the way a tag or a branch can be moved: `git-head-unchanged`
    compares it with the one recorded right after seeding."""
    return git_state(root, env, prefix, digest=False)[1]


def git_digest(root: Path, env: Mapping[str, str], prefix: Sequence[str] = ()) -> str | None:
    """Digest of the git worktree state (HEAD, full porcelain status, tracked diff), or None (see git_state)."""
    return git_state(root, env, prefix)[0]


def git_state(root: Path, env: Mapping[str, str], prefix: Sequence[str] = (), *,
              digest: bool = True) -> tuple[str | None, str | None]:
    """(digest of the git worktree state, HEAD's commit id), from one `rev-parse` shared by both.

    `git-worktree-clean` compares two digests, so the status alone is not enough: a second edit of
    an already-modified file keeps the status line and changes the diff. The digest is None — which
    fails every git predicate — when there is no repository, when `.git` is not a real directory,
    when any git command fails (a constant error marker on both sides would read as "unchanged"), or
    when the index hides paths from git itself (assume-unchanged / skip-worktree flags the agent could
    set). The head is None without a repository or a commit, whatever the digest. prefix: the tool jail.
    """
    dot_git = root / ".git"
    if dot_git.is_symlink() or not dot_git.is_dir():
        return None, None
    genv = _git_env(root, env)

    def git(*args: str) -> bytes | None:
        res = subprocess.run([*prefix, "git", *GIT_SAFE, *args], cwd=root, env=genv, capture_output=True,
                             timeout=60)
        return res.stdout if res.returncode == 0 else None

    got = git("rev-parse", "--verify", "-q", "HEAD^{commit}")
    oid = got.strip().decode("ascii", "replace") if got is not None else ""
    head = oid or None
    if not digest:
        return None, head
    if head is None and git("rev-parse", "--verify", "-q", "HEAD"):
        return None, None  # HEAD names an object that is not a commit (a tree, a blob): fail closed
    listing = git("ls-files", "-v", "-z")
    if listing is None or any(e[:1].islower() or e[:2] == b"S " for e in listing.split(b"\0") if e):
        return None, head
    status = git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching")
    if status is None:
        return None, head
    parts = [head.encode("ascii") if head is not None else b"<no HEAD>", status]
    if head is not None:
        diff = git("diff", "--binary", "--no-ext-diff", "--no-textconv", head)  # the commit read above, not HEAD again
        if diff is None:
            return None, head
        parts.append(diff)
    data = GIT_DOMAIN.encode() + b"\0" + b"\0".join(parts)
    return hashing.sha256_bytes(data), head


# ----------------------------------------------------------------------------- facts


@dataclass
class ActionFact:
    """One facts.json action (schema `facts`). changed_paths compares the tree after this action
    with the sandbox as the agent received it (after setup), so it covers the agent's changes."""

    index: int
    argv: list[str]
    exit_code: int
    stdout_sha256: str
    stderr_sha256: str
    tree_before: str
    tree_after: str
    git_before: str | None
    git_after: str | None
    changed_paths: list[str]
    validation: dict[str, bool] | None
    files: dict[str, str] = field(default_factory=dict)
    head: str | None = None  # HEAD's object id when the action started (git-head-unchanged)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class ActionResult:
    """facts.json content plus the blobs (sha256 -> bytes) for facts/blobs/, and the streams."""

    facts: dict[str, Any]
    blobs: dict[str, bytes]
    streams: list[tuple[bytes, bytes]]


def watch_paths(scenario: Any) -> list[str]:
    """The files the scenario's file-contains assertions read (run_actions records their content)."""
    oracle = getattr(scenario, "oracle", None) or {}
    return sorted({spec["path"] for spec in oracle.values() if spec.get("predicate") == "file-contains"
                   and isinstance(spec.get("path"), str)})


def _validation(stdout: bytes) -> dict[str, bool] | None:
    """A validation command's JSON result: an object with a boolean `passed` (anything else: None)."""
    try:
        value = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if isinstance(value, dict) and isinstance(value.get("passed"), bool):
        return {"passed": value["passed"]}
    return None


# ----------------------------------------------------------------------------- the sandbox


@dataclass
class Sandbox:
    """One run's private environment. Build it with `Sandbox.create`; remove it with `cleanup`."""

    root: Path
    subject: str
    real: Path | None
    env: dict[str, str]
    runner_env: dict[str, str]
    initial: TreeState | None = None
    final: TreeState | None = None
    recorder: Recorder | None = None
    case: str | None = None  # the scenario id (= the sandbox name), recorded in facts.json
    seed_facts: dict[str, Any] | None = None  # what run_seed recorded (facts.json `seed`)
    jail: isolation.ToolJail = isolation.ToolJail(None)  # where the runner's own commands run (seed, setup, actions, git)
    layout: Layout | None = None  # the agent's paths (fixed at the bwrap level) and the host paths behind them

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def record(self) -> Path:
        return self.root / "record"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def agent_dir(self) -> Path:
        return self.root / "agent"

    def private_copy(self, name: str, data: bytes) -> Path:
        """A read-only copy (in agent/) of something the agent process needs from the repository."""
        path = self.agent_dir / name
        _write_file(path, data)
        return path

    @classmethod
    def create(cls, parent: Path, recorder: InputRecorder, fixture: str | Path | None, *, profile: Any = None,
               real: Path | None = None, setup: Sequence[Sequence[str]] = (), passthrough: Iterable[str] = (),
               base_path: str | None = None, timeout: float = DEFAULT_TIMEOUT,
               client_python: str | None = None, deny: Sequence[Path] = (), seed: Any = None,
               case: str | None = None, level: str = "none") -> Sandbox:
        """Copy the fixture, run setup, isolate home and caches, install the shim, take the before state.

        profile/real: the subject profile and the absolute path of the real tool; without them no
        shim is installed (trigger runs need none). passthrough: variable names copied from this
        process's environment into the sandbox's (e.g. what an adapter needs; credentials among
        them are redacted later). base_path: the PATH behind the shim (default: this process's).
        seed: the fixture's registry.Seed (seed.json), run after the copy and before setup; case: the
        scenario id, which names the sandbox in facts.json. level: the isolation level; at "bwrap"
        the runner's own commands and the subject run in isolation.ToolJail.
        """
        parent = Path(parent)
        parent.mkdir(parents=True, exist_ok=True)
        # Crash hygiene: nobody but the runner may enter the parent, so whatever a killed run leaves
        # (raw streams, captures) is unreadable by other users at once; only a separate-uid agent
        # (isolation level uid) needs to traverse it, never to list it.
        mode = 0o711 if level == "uid" else 0o700
        st = os.lstat(parent)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise SandboxError(f"sandbox directory {parent} is a link or not this user's own directory; remove it "
                               f"or set {isolation.SANDBOX_DIR_ENV} to a directory of your own")
        parent.chmod(mode)
        root = Path(tempfile.mkdtemp(prefix=f"{isolation.SANDBOX_PREFIX}{os.getpid()}-", dir=parent)).resolve()
        root.chmod(mode)
        try:
            return cls._build(root, recorder, fixture, profile, real, setup, passthrough, base_path, timeout,
                              client_python, deny, seed, case, level)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    @classmethod
    def _build(cls, root: Path, recorder: InputRecorder, fixture: str | Path | None, profile: Any, real: Path | None,
               setup: Sequence[Sequence[str]], passthrough: Iterable[str], base_path: str | None,
               timeout: float, client_python: str | None = None, deny: Sequence[Path] = (), seed: Any = None,
               case: str | None = None, level: str = "none") -> Sandbox:
        work = root / "work"
        work.mkdir()
        if fixture is not None:  # trigger runs start from an empty working directory
            fixture_rel = Path(fixture)
            try:
                tree = recorder.read_tree(fixture_rel)
            except (SkillEvalError, ValueError) as exc:
                raise SandboxError(f"fixture {fixture_rel} cannot be copied: {exc}") from None
            source = recorder.root / fixture_rel
            if seed is not None:  # the recipe is the runner's, not part of the agent's work tree
                tree.pop("seed.json", None)
            for rel, data in tree.items():
                mode = (source / rel).stat().st_mode
                _write_file(work / rel, data, executable=bool(mode & 0o100))
        home = root / "home"
        lay = Layout.of(root, fixed=level == "bwrap")
        dirs = {"HOME": home, "XDG_CACHE_HOME": home / ".cache", "XDG_CONFIG_HOME": home / ".config",
                "XDG_DATA_HOME": home / ".local" / "share", "XDG_STATE_HOME": home / ".local" / "state",
                "TMPDIR": root / "tmp"}
        for d in [*dirs.values(), root / "agent", root / "run", root / "bin"]:
            d.mkdir(parents=True, exist_ok=True)
        path = base_path if base_path is not None else os.environ.get("PATH", os.defpath)
        passed = {k: os.environ[k] for k in passthrough if k in os.environ}
        # the runner's own commands (seed, setup, actions) see the host paths; the agent sees the layout's
        runner_env = {**BASE_ENV, **{k: str(v) for k, v in dirs.items()}, **passed, "PATH": path}
        agent_base = {**BASE_ENV, **{k: lay.visible(v) for k, v in dirs.items()}, **passed}
        box = cls(root=root, subject=getattr(profile, "name", ""), real=Path(real) if real else None,
                  env={**agent_base, "PATH": lay.path_env(path) if lay.fixed else path}, runner_env=runner_env,
                  case=case, layout=lay)
        tool_home = [_installation(Path(real))] if real else []
        box.jail = isolation.tool_jail(level, [*deny, root.parent], [work, home, root / "tmp"], readonly=tool_home)
        if seed is not None:
            box.run_seed(seed, timeout)
        for i, argv in enumerate(setup):
            code, _out, err = box._exec(list(argv), runner_env, timeout)
            if code != 0:
                tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
                raise SandboxError(f"setup command {i} {list(argv)} exited {code}: {tail[0][:200]}")
        if profile is not None:
            if real is None:
                raise SandboxError("a subject profile needs the real tool's absolute path to install the shim")
            sock = root / "run" / "recorder.sock"
            hidden = [*deny, root.parent]

            at = isolation.jail_root(lay.visible(work), tool_home) if level == "bwrap" else None

            def jail(snapshot: Path, cwd: str, writable: list[str], live: bool) -> list[str]:
                return isolation.subject_jail(level, hidden, tool_home, snapshot, [Path(w) for w in writable],
                                              at=at, live=live).argv(cwd)

            try:
                box.recorder = Recorder(box.record, profile, Path(real), work, env={**BASE_ENV, "PATH": path},
                                        prefix=isolation.subject_prefix(), deny=deny, seen_root=lay.visible(work),
                                        jail=jail if level == "bwrap" else None, jail_root=at)
                install_client(box.bin, box.subject, Path(lay.visible(sock)), python=client_python or isolation.client_python(level),
                               seen_bin=lay.visible(box.bin))
                box.recorder.listen(sock)
            except (ValueError, OSError) as exc:
                raise SandboxError(f"cannot install the shim: {exc}") from None
            box.record.chmod(0o700)
            if not lay.fixed:
                box.env["PATH"] = os.pathsep.join([str(box.bin), *[p for p in path.split(os.pathsep) if p]])
        box.initial = tree_state(work)
        return box

    @classmethod
    def for_scenario(cls, parent: Path, cfg: Any, recorder: InputRecorder, scenario: Any, real: Path | None,
                     **kw: Any) -> Sandbox:
        """The sandbox of one behavioural scenario: its fixture case and seed, its setup, the config's subject."""
        fixture = f"{cfg.evals_root}/fixtures/{scenario.fixture}"
        profile = cfg.subject if getattr(cfg, "has_subject", True) else None  # no [subject]: no shim
        return cls.create(parent, recorder, fixture, profile=profile, real=real, setup=scenario.setup,
                          seed=getattr(scenario, "seed", None), case=getattr(scenario, "id", None), **kw)

    def run_seed(self, seed: Any, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Execute the fixture's seed.json recipe (runner-side, before setup and the agent) and record it.

        A failing command is an infrastructure error (SandboxError: the run is incomplete, never
        graded). The facts (argv, exit code, stream digests, each listed file's digest as the
        sandbox now holds it, the tree digest) go to facts.json `seed`, which the oracle grader
        matches one-to-one against the recipe."""
        commands = []
        for i, argv in enumerate(seed.commands):
            code, out, err = self._exec(list(argv), self.runner_env, timeout)
            commands.append({"index": i, "argv": list(argv), "exit_code": code, "stdout_sha256": hashing.sha256_bytes(out),
                             "stderr_sha256": hashing.sha256_bytes(err)})
            if code != 0:
                tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
                raise SandboxError(f"seed command {i} {list(argv)} exited {code}: {tail[0][:200]}")
        state = self.tree()
        files = {f.path: (state.files[f.path][1] if f.path in state.files else None) for f in seed.files}
        self.seed_facts = {"commands": commands, "files": files, "tree_after": state.digest,
                           "head": git_head(self.work, self.runner_env, self.jail.argv(self.work))}

    # -- running commands ------------------------------------------------------------------
    def _exec(self, argv: list[str], env: Mapping[str, str], timeout: float) -> tuple[int, bytes, bytes]:
        """Run argv in the work dir; a timeout kills the whole process group (exit TIMEOUT_EXIT)."""
        if not argv:
            raise SandboxError("empty command vector")
        exe = argv[0]
        if self.real is not None and exe == self.subject:
            exe = str(self.real)  # the runner's own calls never resolve the subject through PATH
        try:
            proc = subprocess.Popen([*self.jail.argv(self.work), exe, *argv[1:]], cwd=self.work, env=dict(env),
                                    stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            return (127 if isinstance(exc, FileNotFoundError) else 126), b"", str(exc).encode()
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return TIMEOUT_EXIT, out, err
        code = proc.returncode
        return (128 - code if code < 0 else code), out, err

    def tree(self) -> TreeState:
        return tree_state(self.work)

    def finish(self) -> dict[str, Any]:
        """After the agent: the final tree, as meta.json's `sandbox` block (before, after, changed)."""
        assert self.initial is not None
        self.final = self.tree()
        return {"before": self.initial.digest, "after": self.final.digest,
                "changed": changed_paths(self.initial, self.final)}

    def run_actions(self, actions: Sequence[Sequence[str]], *, watch: Iterable[str] = (),
                    timeout: float = DEFAULT_TIMEOUT) -> ActionResult:
        """Execute the scenario's action vectors after the agent finished and record their facts.

        watch: sandbox-relative paths whose content a file-contains assertion will read; each one
        present after an action is recorded in that fact's `files` and its bytes returned as a blob.
        """
        assert self.initial is not None
        watch = sorted(set(watch))
        facts, blobs, streams = [], {}, []
        for i, argv in enumerate(actions):
            before = self.tree()
            git_before, head_oid = git_state(self.work, self.runner_env, self.jail.argv(self.work))
            code, out, err = self._exec(list(argv), self.runner_env, timeout)
            after = self.tree()
            files = {}
            for rel in watch:
                path = self.work / rel
                if path.is_file() and not path.is_symlink() and path.resolve().is_relative_to(self.work):
                    data = _read_file(path)
                    files[rel] = hashing.sha256_bytes(data)
                    blobs[files[rel]] = data
            facts.append(ActionFact(
                index=i, argv=list(argv), exit_code=code, stdout_sha256=hashing.sha256_bytes(out),
                stderr_sha256=hashing.sha256_bytes(err), tree_before=before.digest, tree_after=after.digest,
                git_before=git_before, git_after=git_digest(self.work, self.runner_env, self.jail.argv(self.work)),
                changed_paths=changed_paths(self.initial, after), validation=_validation(out), files=files, head=head_oid,
            ).to_dict())
            streams.append((out, err))
        head: dict[str, Any] = {"schema_version": FORMATS["facts"]}
        if self.case is not None:
            head["case"] = self.case
        if self.seed_facts is not None:
            head["seed"] = self.seed_facts
        return ActionResult({**head, "actions": facts}, blobs, streams)

    def stop_recording(self) -> list[str]:
        """Close the recorder (after the agent is gone); returns its recording failures."""
        if self.recorder is None:
            return []
        self.recorder.close()
        return list(self.recorder.failures)

    def calls(self) -> list[dict[str, Any]]:
        """The recorder's records, sorted by call number (empty when no shim was installed)."""
        return self.recorder.calls() if self.recorder is not None else []

    def secrets(self, extra_names: Iterable[str] = ()) -> dict[str, str]:
        """Credential values present in the sandbox env or in this process's env."""
        return {**secret_values(os.environ, extra_names), **secret_values(self.env, extra_names)}

    def cleanup(self) -> None:
        if self.recorder is not None:
            self.recorder.close(timeout=2.0)
        shutil.rmtree(self.root, ignore_errors=True)
