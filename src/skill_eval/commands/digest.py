"""`skill-eval digest`: print the tree digest T(domain, PATH) of DESIGN §5."""

from __future__ import annotations

import argparse
from pathlib import Path

from skill_eval.core import hashing
from skill_eval.core.errors import EXIT_OK
from skill_eval.core.output import emit


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--domain", default=hashing.TREE_DOMAIN, help=f"domain string (default {hashing.TREE_DOMAIN})")
    p.add_argument("path", type=Path, help="directory to hash (a file is hashed as a one-file tree)")


def run(args: argparse.Namespace) -> int:
    path: Path = args.path
    if path.is_file() and not path.is_symlink():
        from skill_eval.core import strict

        mode = hashing.MODE_EXEC if path.stat().st_mode & 0o100 else hashing.MODE_FILE
        digest = hashing.digest_entries(args.domain, [hashing.TreeEntry(path.name, mode, strict.read_bytes(path))])
    else:
        digest = hashing.tree_digest(path, args.domain)
    emit(args, [digest], {"path": str(path), "domain": args.domain, "digest": digest})
    return EXIT_OK
