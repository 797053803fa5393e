"""One check's memo: what `pr` (or one evidence check) computes once and its steps share.

`freshness.current` (the current digests), the evidence pass (`regrade.survey`) and the evidence
tree listing are computed once per check and read by several steps. The memo lives here, below
both `freshness` and `regrade`, so neither imports the other to reach it. Nothing on disk changes
during a check, which is what makes the memo sound; outside a `sharing()` block nothing is kept.
Other things kept on that premise: `fsio.repo_path`'s answers for paths that exist, the content
YAML files parsed once (`content._validated_yaml`), the golden tree's walk (`content.golden_dir`)
and the Catalog's fixture digests. So no step of
a check may write into the repository's checked content (pr's steps only read it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_SHARED: dict[Any, Any] | None = None  # str flags and (name, ...) memo keys


@contextlib.contextmanager
def sharing(*, passes: bool = False, slim: bool = False) -> Iterator[None]:
    """Memoise within this block: `freshness.current` once per Config and, with `passes=True` (what
    `pr` uses), the evidence pass once per evidence root, so the freshness and evidence steps read
    each bundle once. `slim`: the pass keeps SlimGrades (pr's text mode). Nested blocks share the
    outermost memo and its flags."""
    global _SHARED
    if _SHARED is not None:
        yield
        return
    _SHARED = {"passes": passes, "slim": slim}
    try:
        yield
    finally:
        _SHARED = None


def shared_memo() -> dict[Any, Any] | None:
    """The memo of the active `sharing()` block, or None outside one."""
    return _SHARED


def is_sharing() -> bool:
    return _SHARED is not None
