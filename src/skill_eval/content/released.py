"""A skill's published bytes at a git ref, for a host anywhere inside its repository (issue 28 item 3).

`git show <ref>:<path>` reads `<path>` from the *repository's* root, while the host's paths
(`skills.published`, e.g. `.agents/skills`) are relative to the *host's* root, which may be a
subfolder (examples/towncrier-notes). So every git path here is the repository-relative one:
the host's prefix (`git rev-parse --show-prefix`) in front, and `ls-tree --full-name` so a
listing never comes back relative to the working directory.

The runner installs the `released:<ref>` arm through this reader, and the release stage snapshots the
released bytes through it: one reader, so the recorded `released_skill_digest` is the stage's.
"""

from __future__ import annotations

import subprocess

from skill_eval.content.config import Config
from skill_eval.core import gitrepo
from skill_eval.core.errors import ConfigError


def _git(cfg: Config, *args: str) -> subprocess.CompletedProcess[bytes]:
    return gitrepo.git(cfg.root, *args)  # the one reader of the repository's git


def repo_prefix(cfg: Config) -> str:
    """The host's root relative to the repository's root ('' at the top, else 'a/b/')."""
    out = _git(cfg, "rev-parse", "--show-prefix")
    if out.returncode != 0:
        raise ConfigError("the host is not inside a git repository: a released arm is read from git objects",
                          source=cfg.root, fix="run inside the repository's checkout")
    return out.stdout.decode().strip()


def published_root(cfg: Config) -> str:
    if not cfg.published:
        raise ConfigError("skills.published is empty; the released arm is read from a published copy",
                          source=cfg.source, field="skills.published")
    return cfg.published[0].strip("/")


def released_tree(cfg: Config, ref: str, name: str) -> dict[str, bytes]:
    """{path inside the skill: bytes} of skill `name` as published at `ref`; ConfigError when absent."""
    prefix = f"{repo_prefix(cfg)}{published_root(cfg)}/{name}/"
    ls = _git(cfg, "ls-tree", "-r", "--full-name", "--name-only", "-z", ref, "--", f":(top){prefix}")
    paths = [p for p in ls.stdout.decode().split("\0") if p] if ls.returncode == 0 else []
    if not paths:
        raise ConfigError(f"skill {name!r} has no published copy at {ref!r}", fix="name a ref where the skill was released")
    out = {}
    for path in paths:
        if not path.startswith(prefix):  # ls-tree --full-name lists repository paths under the pathspec only
            raise ConfigError(f"git listed {path!r} outside {prefix!r} at {ref!r}")
        blob = _git(cfg, "cat-file", "blob", f"{ref}:{path}")
        if blob.returncode != 0:
            raise ConfigError(f"cannot read {path!r} at {ref!r}: {blob.stderr.decode(errors='replace').strip()[:200]}",
                              fix="check that the ref exists in this clone (git fetch --tags)")
        out[path[len(prefix):]] = blob.stdout
    return out
