"""Publication build digest (DESIGN §5): what a release would publish, computed on demand.

It covers the published skill trees exactly as they sit in the checkout (the bytes an agent
installs), the host's pyproject.toml when there is one (its pins name the build), the versions
actually installed of skill-eval's dependency closure (importlib.metadata: what resolved, not
what the ranges allow) and the agent CLIs' npm lock file (`.cache/agent-clis/package-lock.json`,
written by scripts/install_agent_clis.py; null when they are not installed). It is never
committed — unrelated changes must not leave a committed digest stale — but the stage freezes it
(a different resolved version or lock on resume is refused by name) and the report carries it,
so a published artifact can be traced to the report that cleared it.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path
from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import hashing

PUBLICATION_DOMAIN = "skill-eval-publication-v1"
PUBLISHED_TREE_DOMAIN = "skill-eval-published-tree-v1"
AGENT_CLIS_LOCK = ".cache/agent-clis/package-lock.json"  # scripts/install_agent_clis.py's npm prefix, below the host root
TOOL = "skill-eval"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(root: str = TOOL) -> dict[str, str | None]:
    """{distribution: installed version} of `root` and everything it requires, transitively (optional extras
    left out; a requirement not installed here, e.g. excluded by its environment marker, is None)."""
    out: dict[str, str | None] = {}
    todo = [root]
    while todo:
        name = _normal(todo.pop())
        if name in out:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            out[name] = None
            continue
        out[name] = dist.version
        for req in dist.requires or []:
            spec, _, marker = req.partition(";")
            m = _NAME.match(spec)
            if m and "extra" not in marker:
                todo.append(m.group(1))
    return dict(sorted(out.items()))


def agent_clis_lock(cfg: Config) -> Path | None:
    """The agent CLIs' lock: below the host root, else below an enclosing folder up to the repository's top
    (a subfolder host's runs use the repository's CLIs, Makefile `eval-example`)."""
    for folder in (cfg.root, *cfg.root.parents):
        if (folder / AGENT_CLIS_LOCK).is_file():
            return folder / AGENT_CLIS_LOCK
        if (folder / ".git").exists():
            return None
    return None


def publication_digest(cfg: Config) -> dict[str, Any]:
    trees = {}
    for rel in cfg.published:
        root = cfg.root / rel
        trees[rel] = hashing.tree_digest(root, PUBLISHED_TREE_DOMAIN) if root.is_dir() else None
    pyproject = cfg.root / "pyproject.toml"
    lock = agent_clis_lock(cfg)
    parts = {"published": trees, "pyproject_sha256": hashing.sha256_file(pyproject) if pyproject.is_file() else None,
             "distributions": distributions(), "agent_clis_lock_sha256": hashing.sha256_file(lock) if lock else None}
    return {**parts, "sha256": hashing.record_digest(PUBLICATION_DOMAIN, parts)}
