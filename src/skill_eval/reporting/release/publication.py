"""Publication build digest (DESIGN §5): what a release would publish, computed on demand.

It covers the published skill trees exactly as they sit in the checkout (the bytes an agent
installs) plus the host's pyproject.toml when there is one (its pins name the build). It is
never committed — unrelated changes must not leave a committed digest stale — but the release
report carries it, so a published artifact can be traced to the report that cleared it.
"""

from __future__ import annotations

from typing import Any

from skill_eval.content.config import Config
from skill_eval.core import hashing

PUBLICATION_DOMAIN = "skill-eval-publication-v1"
PUBLISHED_TREE_DOMAIN = "skill-eval-published-tree-v1"


def publication_digest(cfg: Config) -> dict[str, Any]:
    trees = {}
    for rel in cfg.published:
        root = cfg.root / rel
        trees[rel] = hashing.tree_digest(root, PUBLISHED_TREE_DOMAIN) if root.is_dir() else None
    pyproject = cfg.root / "pyproject.toml"
    parts = {"published": trees, "pyproject_sha256": hashing.sha256_file(pyproject) if pyproject.is_file() else None}
    return {**parts, "sha256": hashing.record_digest(PUBLICATION_DOMAIN, parts)}
