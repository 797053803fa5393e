"""The one reader of the repository's git (issue 34 item 1): every read of the host repository's git
objects and refs goes through here — the base the trust policy is read from, blobs at a ref, the host's
prefix, what changed since the base.

Paths are repository-relative (`git rev-parse --show-prefix` in front of a host path), so a host in a
subfolder (examples/towncrier-notes) reads its own files at the base.

The base, in order (docs/SIGNING.md "Trust comes from the base"):
1. `--base REF` or `SKILL_EVAL_BASE`;
2. in a GitHub pull request (`GITHUB_BASE_REF`), the tip of `origin/$GITHUB_BASE_REF` — so a key revoked
   on the target branch after the pull request forked is revoked for it too, and a depth-1 fetch suffices;
3. the upstream default branch (`origin/HEAD`, else `origin/main` / `origin/master`);
4. local `main` / `master`; on that branch itself (no upstream), HEAD, printed as such.
With `CI=true` and none of these, a ConfigError (exit 2) names the fetch to run: never the work tree.

Why `git` as a subprocess and not GitPython (which the project used to declare): GitPython runs the same
`git` binary for all but the simplest reads and costs 140-280 ms to import on this machine against
14 ms for `subprocess` (`python -X importtime`), on the `pr` path that runs on every commit.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from skill_eval.core.errors import ConfigError

BASE_ENV = "SKILL_EVAL_BASE"
DEFAULT_BRANCHES = ("main", "master")
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_PAGER": "cat"}


def git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run `git -C root ARGS` (no prompt, no pager, no optional locks); the caller reads returncode."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False, timeout=120,
                              stdin=subprocess.DEVNULL, env={**os.environ, **_ENV})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(["git", *args], 128, b"", str(exc).encode())


def text(root: Path, *args: str) -> str | None:
    """`git ARGS`' stripped output as text, or None when git failed."""
    res = git(root, *args)
    return res.stdout.decode("utf-8", "replace").strip() if res.returncode == 0 else None


def prefix(root: Path) -> str | None:
    """The host's root relative to the repository's ('' at the top, else 'a/b/'); None outside a repository."""
    return text(root, "rev-parse", "--show-prefix")


def commit(root: Path, ref: str) -> str | None:
    """The commit `ref` names, or None."""
    if ref.startswith("-"):
        return None
    return text(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")


def blob(root: Path, ref: str, path: str) -> bytes | None:
    """The bytes of repository-relative `path` at `ref` (None: absent there, or not a file)."""
    res = git(root, "cat-file", "blob", f"{ref}:{path}")
    return res.stdout if res.returncode == 0 else None


def changed_since(root: Path, base: str, top: str) -> set[str]:
    """Repository-relative paths under `top` that differ between commit `base` and the work tree: tracked
    changes (added, modified, deleted, renamed both ways) and untracked files."""
    spec = f":(top){top}"
    out: set[str] = set()
    for args in (("diff", "--name-only", "--no-renames", "-z", base, "--", spec),
                 ("ls-files", "--full-name", "--others", "--exclude-standard", "-z", "--", spec)):
        res = git(root, *args)
        if res.returncode != 0:
            raise ConfigError(f"git {args[0]} against the base failed: {res.stderr.decode(errors='replace').strip()[:200]}",
                              source=root, fix="check that the base commit is in this clone")
        out.update(p for p in res.stdout.decode("utf-8", "surrogateescape").split("\0") if p)
    return out


@dataclass(frozen=True)
class Base:
    """The commit the trust policy is read from: what it was named (`ref`), how it was chosen (`how`)."""

    ref: str
    commit: str
    how: str

    @property
    def label(self) -> str:
        return f"{self.ref} ({self.commit[:12]}, {self.how})"


def _branch(root: Path) -> str | None:
    return text(root, "symbolic-ref", "--quiet", "--short", "HEAD")


def _upstream_default(root: Path) -> str | None:
    head = text(root, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if head and commit(root, head):
        return head
    return next((f"origin/{b}" for b in DEFAULT_BRANCHES if commit(root, f"refs/remotes/origin/{b}")), None)


def resolve_base(root: Path, explicit: str | None = None, env: Mapping[str, str] | None = None) -> Base | None:
    """The base (module docstring's order); None outside a git repository or, off CI, with no base.
    ConfigError (exit 2): a named base that is not a commit, a pull request's base not fetched, or CI
    with no base at all."""
    env = os.environ if env is None else env
    named, source = (explicit, "--base") if explicit else (env.get(BASE_ENV) or None, BASE_ENV)
    if prefix(root) is None:  # no base: nothing verifies as signed (fail closed, CI or not)
        if named:
            raise ConfigError("the host is not inside a git repository: the trust policy is read from the base's "
                              "git objects", source=root, fix="run inside the repository's clone")
        return None
    if named:
        found = commit(root, named)
        if found is None:
            raise ConfigError(f"{source} {named!r} is not a commit in this clone", source=root,
                              fix=f"fetch it (git fetch --depth=1 origin {named.removeprefix('origin/')}) or name a branch, tag or sha")
        return Base(named, found, source)
    target = env.get("GITHUB_BASE_REF")
    if target:
        ref = f"origin/{target}"
        found = commit(root, f"refs/remotes/{ref}")
        if found is None:
            raise ConfigError(f"a pull request into {target!r}, but {ref} is not in this clone", source=root,
                              fix=f"git fetch --no-tags --depth=1 origin +refs/heads/{target}:refs/remotes/{ref}")
        return Base(ref, found, "the pull request's target branch (GITHUB_BASE_REF)")
    upstream = _upstream_default(root)
    if upstream:
        return Base(upstream, commit(root, upstream) or "", "the upstream default branch")
    branch = _branch(root)
    for name in DEFAULT_BRANCHES:
        found = commit(root, f"refs/heads/{name}")
        if found is None:
            continue
        if branch == name:
            return Base("HEAD", found, f"on the default branch {name} with no upstream")
        return Base(name, found, "the local default branch (no upstream)")
    if env.get("CI") == "true":
        raise ConfigError("no base to read the trust policy from: no origin/HEAD, no origin/main or origin/master, "
                          "no local main or master", source=root,
                          fix="git fetch --no-tags --depth=1 origin +refs/heads/main:refs/remotes/origin/main "
                              f"(or set {BASE_ENV} / pass --base REF)")
    return None
