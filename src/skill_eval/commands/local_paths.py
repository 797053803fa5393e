"""`pr` step: no machine-local path in any committed bundle (evidence/ and calibration/).

A bundle is re-graded on other machines for years; a sandbox path (`/tmp/sandbox-…`, Claude's
mangled `-tmp-sandbox-…-work`) or the recording user's home directory left in a runner-written
file leaks the recording machine's layout and makes two recordings of one behaviour differ.
The runner replaces them at recording time (runner.normalize); this step proves none survived
— a bundle recorded before that existed, or by a runner that regressed, fails here. The
subject's own report snapshots (captured/*.out.d/) and facts/ are digested evidence and are not scanned; its
stdout/stderr (captured/N.out, N.err) are, also when compaction moved them into the content store.
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import stat
from pathlib import Path

from skill_eval.commands._options import flag_or_config
from skill_eval.content import config
from skill_eval.core import stored, strict
from skill_eval.core.errors import InputError, message_of
from skill_eval.core.output import emit
from skill_eval.harness.runner.normalize import LEFTOVER, NOT_SCANNED, NOT_SCANNED_SUFFIX
from skill_eval.reporting.scorecard.runs import bundle_dirs

TREES = ("evidence", "calibration")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", default=None, help="home directory to look for (default: $HOME of this machine)")


def home_hits(tree: Path, root: Path, home: str) -> list[str]:
    """`<bundle>/<file>: <home>` for every runner-written file naming `home` as a path prefix."""
    home = home.rstrip("/")
    if home.count("/") < 1 or len(home) < 3:  # "/" or "": would match every path
        return []
    needle = re.compile(re.escape(home.encode()) + rb"(?=/|\b)")
    out = []
    for bundle in bundle_dirs(tree):
        for path in sorted(p for p in bundle.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = path.relative_to(bundle)
            data = path.read_bytes()
            data = (stored.gunzip(data, strict.MAX_FILE_BYTES, str(path))
                    if path.name.endswith(stored.GZ) and rel.parts[0] == "raw" else data)
            if rel.parts[0] not in NOT_SCANNED and needle.search(data):
                out.append(f"{bundle.relative_to(root).as_posix()}/{rel.as_posix()}: {home} (the recording user's home; re-record)")
        for rel_s, _found, home_hit, _error in _stored_hits(os.fspath(bundle), needle):
            if home_hit:
                out.append(f"{bundle.relative_to(root).as_posix()}/{rel_s}: {home} (the recording user's home; re-record)")
    return out


def run(args: argparse.Namespace) -> int:
    cfg = config.load(args.root)
    home = flag_or_config(getattr(args, "home", None), os.environ.get("HOME", ""))
    problems: list[str] = []
    scanned = 0
    for name in TREES:
        tree = cfg.evals_dir / name
        if not tree.is_dir():
            continue
        layout = bundle_dirs(tree)
        scanned += len(layout)
        leftovers, homes = _scan(tree, cfg.root, home, layout)
        problems += leftovers + homes
    lines = [f"FAIL {p}" for p in problems]
    lines.append(f"local paths: {scanned} bundle(s) scanned, " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    emit(args, lines, {"passed": not problems, "scanned": scanned, "problems": problems})
    return 1 if problems else 0


def _order(path: str) -> str:
    return path.replace("/", "\0")  # sorts path strings as their Paths' parts would


def _stored_hits(bundle: str, needle: re.Pattern[bytes] | None) -> list[tuple[str, bytes | None, bool, str | None]]:
    """(rel, sandbox path found, home found, why it could not be read) for the scanned files of a compacted
    bundle that live in the evidence tree's content store (core.stored), read through their verified digests."""
    if not os.path.isfile(f"{bundle}/{stored.INDEX}"):
        return []
    try:
        index = stored.index_of(bundle)
    except InputError as exc:
        return [(stored.INDEX, None, False, message_of(exc))]
    out: list[tuple[str, bytes | None, bool, str | None]] = []
    for rel in sorted(index):
        parts = rel.split("/")
        if parts[0] in NOT_SCANNED or any(part.endswith(NOT_SCANNED_SUFFIX) for part in parts):
            continue
        try:
            data = stored.read(bundle, rel, strict.MAX_FILE_BYTES) or b""
        except InputError as exc:
            out.append((rel, None, False, message_of(exc)))
            continue
        match = LEFTOVER.search(data)
        out.append((rel, match.group() if match else None, bool(needle is not None and needle.search(data)), None))
    return out


def _scan(tree: Path, root: Path, home: str, layout: list[Path]) -> tuple[list[str], list[str]]:
    """`check_evidence(tree, root)` and `home_hits(tree, root, home)` in one walk, reading each file once
    (`layout`: the tree's bundle_dirs, which home_hits scans).

    Why: the two checks each walked every bundle with rglob and read every file (a quarter of a warm
    `pr`). Same bundles, files, filters and order as the two functions (tests/grading/test_perf_paths.py)."""
    home = home.rstrip("/")
    needle = re.compile(re.escape(home.encode()) + rb"(?=/|\b)") if home.count("/") >= 1 and len(home) >= 3 else None
    files: list[str] = []
    metas: list[str] = []
    for dirpath, dirnames, filenames in os.walk(tree):  # like rglob: symlinked directories are not entered
        for name in filenames:
            if stat.S_ISREG(os.lstat(f"{dirpath}/{name}").st_mode):
                files.append(f"{dirpath}/{name}")
        if "meta.json" in filenames or "meta.json" in dirnames:
            if os.path.exists(f"{dirpath}/meta.json"):  # rglob("meta.json") skips a dangling link
                metas.append(f"{dirpath}/meta.json")
    files.sort(key=_order)
    keys = [_order(f) for f in files]
    seen: dict[str, tuple[bytes | None, bool]] = {}

    def hits(path: str) -> tuple[bytes | None, bool]:
        if path not in seen:
            with open(path, "rb") as fh:
                data = fh.read()
            if path.endswith(stored.GZ) and "/raw/" in path:  # a compacted raw stream: scanned as the bytes it holds
                data = stored.gunzip(data, strict.MAX_FILE_BYTES, path)
            match = LEFTOVER.search(data)
            seen[path] = (match.group() if match else None, bool(needle is not None and needle.search(data)))
        return seen[path]

    def under(bundle: str) -> list[tuple[str, str]]:
        lo = bisect.bisect_left(keys, _order(bundle) + "\0")
        hi = bisect.bisect_left(keys, _order(bundle) + "\x01")
        return [(f, f[len(bundle) + 1:]) for f in files[lo:hi]]

    leftovers: list[str] = []
    homes: list[str] = []
    rel_root = os.fspath(root)
    bundles = sorted({os.path.dirname(m) for m in metas}, key=_order)
    in_layout = {os.fspath(b) for b in layout}
    for bundle in bundles:
        shown = Path(bundle).relative_to(rel_root).as_posix()
        for path, rel in under(bundle):
            parts = rel.split("/")
            if parts[0] in NOT_SCANNED or any(part.endswith(NOT_SCANNED_SUFFIX) for part in parts):
                continue
            found, _ = hits(path)
            if found is not None:
                leftovers.append(f"{shown}/{rel}: {found.decode(errors='replace')} "
                                 "(machine-local sandbox path; re-record the bundle)")
        for rel, found, home_hit, error in _stored_hits(bundle, needle):  # compact evidence: captured files in the store
            if error is not None:
                leftovers.append(f"{shown}/{rel}: cannot be scanned: {error}")
            if found is not None:
                leftovers.append(f"{shown}/{rel}: {found.decode(errors='replace')} "
                                 "(machine-local sandbox path; re-record the bundle)")
            if home_hit and bundle in in_layout:
                homes.append(f"{shown}/{rel}: {home} (the recording user's home; re-record)")
    if needle is not None:
        for bundle_path in layout:
            bundle = os.fspath(bundle_path)
            shown = bundle_path.relative_to(root).as_posix()
            for path, rel in under(bundle):
                if rel.split("/")[0] not in NOT_SCANNED and hits(path)[1]:
                    homes.append(f"{shown}/{rel}: {home} (the recording user's home; re-record)")
    return leftovers, homes
