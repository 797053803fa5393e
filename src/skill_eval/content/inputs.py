"""The single input accessor: every file the runner or shim reads goes through here.

Freshness's completeness check needs to know what a run actually read, not what it
claims to have read. Routing every read through one recorder makes `observed_inputs`
a fact; a test scans the runner and shim modules for any other way of opening files.
"""

from __future__ import annotations

import threading
from pathlib import Path

from skill_eval.core import fsio, strict
from skill_eval.core.hashing import sha256_bytes


class InputRecorder:
    """Reads repository files and remembers (repo-relative path, sha256) for each."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self._seen: dict[str, str] = {}
        self._lock = threading.Lock()

    def _rel(self, path: Path) -> str:
        """The repository-relative path; a path outside, or through a symlink leading outside, is refused."""
        checked = fsio.repo_path(self.root, path)  # InputError naming the link (exit 2)
        return checked.relative_to(self.root).as_posix() or "."

    def read_bytes(self, path: Path | str) -> bytes:
        rel = self._rel(Path(path))
        data = strict.read_bytes(self.root / rel)
        with self._lock:
            self._seen[rel] = sha256_bytes(data)
        return data

    def read_text(self, path: Path | str) -> str:
        return strict.decode_utf8(self.read_bytes(path), path)

    def read_tree(self, path: Path | str) -> dict[str, bytes]:
        """Read every regular file below a directory (recording each)."""
        from skill_eval.core.hashing import walk_tree

        rel = self._rel(Path(path))
        out = {}
        for entry in walk_tree(self.root / rel):
            full_rel = f"{rel}/{entry.path}" if rel != "." else entry.path
            with self._lock:
                self._seen[full_rel] = sha256_bytes(entry.data)
            out[entry.path] = entry.data
        return out

    def observed(self) -> list[dict[str, str]]:
        with self._lock:
            return [{"path": p, "sha256": d} for p, d in sorted(self._seen.items())]
