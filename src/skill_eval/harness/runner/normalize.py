"""Machine-local paths out of bundles: the sandbox root, its work dir and HOME become placeholders.

Why: a bundle is committed evidence, re-graded on other machines for years. The agent (and a
real model especially) echoes the absolute paths it saw — `/tmp/sandbox-x1y2z3ab/work/...`
in its answer, its tool calls, Claude's `~/.claude/projects/-tmp-sandbox-...-work` — which
makes two recordings of the same behaviour differ byte for byte and leaks the recording
machine's layout. The runner (never the agent or its adapter) replaces them, once, here:
`<home>`, `<work>` and `<sandbox>`, longest prefix first, in the final text, the events,
the run errors and the captured agent streams (raw/), and records how many it replaced.

Not rewritten: `captured/` and `facts/` — the subject's own outputs, whose digests the call
records and facts already carry (rewriting them would break that evidence; the shim keeps
their paths sandbox-relative where it can).

`find_local_paths` is the check `pr` runs over committed bundles: any sandbox path left in a
runner-written file is a failure.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skill_eval.harness.adapters.base import NormalizedRun
from skill_eval.harness.runner import layout

# find_local_paths reads committed bundles for the `pr` check, never a run's inputs
# (tests/harness/test_input_accessor.py)
FILE_IO_HELPERS = ("find_local_paths", "scrub_captured")

SANDBOX = "<sandbox>"
WORK = "<work>"
HOME = "<home>"

# a plain path prefix must end at a path boundary: ".../work" is not ".../work2", ".../work-old"
# or ".../work.bak", but a sentence may end right after it ("I worked in .../work.")
_BOUNDARY = r"(?![A-Za-z0-9_-]|\.[A-Za-z0-9_])"
# mkdtemp(prefix="sandbox-") names: 8 of [a-z0-9_]; Claude's project-dir mangling turns every
# non-alphanumeric character into "-", so "/tmp/sandbox-ab_cd123/work" becomes "-tmp-sandbox-ab-cd123-work"
LEFTOVER = re.compile(rb"skill-eval-sandboxes-\d+|/sandbox-(?:\d+-)?[a-z0-9_]{8}(?![a-z0-9_])"
                      rb"|-sandbox-(?:\d+-)?[a-z0-9-]{8}-(?:work|home|record|tmp|bin)\b")
# what a bundle holds that is not scrubbed: the subject's output snapshots (reports, whose bytes graders
# read and whose digests the call records attest) and facts (the runner's action receipts)
NOT_SCANNED = ("facts",)
NOT_SCANNED_SUFFIX = ".out.d"


def _mangled(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


class PathScrubber:
    """Replaces the absolute paths of one sandbox by placeholders and counts the replacements."""

    def __init__(self, prefixes: Mapping[str | os.PathLike[str], str],
                 fixed: Mapping[str, str] | None = None):
        variants: dict[str, str] = {}
        for path, placeholder in prefixes.items():
            text = os.fspath(path).rstrip("/")
            if len(text) < 2:
                continue  # "/" or "": replacing it would rewrite everything
            for variant in {text, os.path.realpath(text)}:
                variants[re.escape(variant) + _BOUNDARY] = placeholder
                variants[re.escape(_mangled(variant))] = placeholder
        # the sandbox's fixed paths (runner/layout.py): as written only, at a path start, since their
        # mangled forms ("-work") are ordinary words
        for text, placeholder in (fixed or {}).items():
            variants[r"(?<![A-Za-z0-9_.~<>-])" + re.escape(text) + _BOUNDARY] = placeholder
        # longest first, so <home> and <work> win over the <sandbox> that contains them
        ordered = sorted(variants, key=lambda p: (-len(p), p))
        self._placeholders = [variants[p] for p in ordered]
        self._text = re.compile("|".join(f"({p})" for p in ordered)) if ordered else None
        self._bytes = re.compile("|".join(f"({p})" for p in ordered).encode()) if ordered else None
        self.counts: dict[str, int] = {}

    @classmethod
    def for_sandbox(cls, root: Path, work: Path, home: Path, *, fixed: bool = False) -> PathScrubber:
        """The sandbox's host paths; with `fixed`, also the paths the agent saw them by (/work, /home/agent)."""
        return cls({home: HOME, work: WORK, root: SANDBOX},
                    {layout.HOME: HOME, layout.WORK: WORK} if fixed else None)

    def _count(self, placeholder: str) -> str:
        self.counts[placeholder] = self.counts.get(placeholder, 0) + 1
        return placeholder

    def text(self, value: str) -> str:
        if self._text is None:
            return value
        return self._text.sub(lambda m: self._count(self._placeholders[(m.lastindex or 1) - 1]), value)

    def bytes(self, value: bytes) -> bytes:
        if self._bytes is None:
            return value
        return self._bytes.sub(lambda m: self._count(self._placeholders[(m.lastindex or 1) - 1]).encode(), value)

    def data(self, value: Any) -> Any:
        """Every string (and key) inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value


def scrub_run(scrubber: PathScrubber, run: NormalizedRun, streams: Mapping[str, bytes]) -> tuple[NormalizedRun, dict[str, bytes]]:
    """The run (final text, events, errors) and the captured agent streams, paths replaced.

    Called by the runner before the claim is parsed and the status decided, so final.md,
    claim.json, events.jsonl, raw/ and meta.json's run errors all say the same thing.
    """
    clean = dataclasses.replace(
        run,
        final_text=scrubber.text(run.final_text),
        events=scrubber.data(run.events),
        errors=[scrubber.text(e) for e in run.errors],
    )
    return clean, {name: scrubber.bytes(data) for name, data in streams.items()}


def scrub_captured(scrubber: PathScrubber, calls: list[dict[str, Any]], record: Path) -> None:
    """The subject's captured stdout/stderr, sandbox paths replaced (abicheck prints the absolute
    paths it compared), in the runner's private record store before they are sealed.

    The recorder teed the original bytes to the agent; the call record's `sha256`/`bytes` are
    re-stated here for the stored (scrubbed) bytes, which are what graders verify on read, and the
    replacements are counted in the scrubber (meta.extra.path_placeholders).
    """
    import hashlib

    for call in calls:
        for key in ("stdout", "stderr"):
            entry = call.get(key)
            if not isinstance(entry, dict):
                continue
            path = record / entry["path"]
            data = path.read_bytes()
            clean = scrubber.bytes(data)
            if clean != data:
                path.write_bytes(clean)
                entry["sha256"], entry["bytes"] = hashlib.sha256(clean).hexdigest(), len(clean)


def find_local_paths(bundle: Path) -> list[str]:
    """`<file>: <path>` for every sandbox path left in a bundle's runner-written files."""
    found = []
    for path in sorted(p for p in bundle.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(bundle)
        if rel.parts[0] in NOT_SCANNED or any(part.endswith(NOT_SCANNED_SUFFIX) for part in rel.parts):
            continue
        match = LEFTOVER.search(path.read_bytes())
        if match:
            found.append(f"{rel.as_posix()}: {match.group().decode(errors='replace')}")
    return found


def check_evidence(evidence_root: Path, root: Path) -> list[str]:
    """`check_bundles` over every bundle (a directory with a meta.json) under an evidence tree."""
    return check_bundles(sorted(m.parent for m in evidence_root.rglob("meta.json")), root)


def check_bundles(bundles: Iterable[Path], root: Path) -> list[str]:
    """One problem line per bundle with a machine-local path (for `skill-eval pr`)."""
    problems = []
    for bundle in bundles:
        for hit in find_local_paths(bundle):
            problems.append(f"{bundle.relative_to(root).as_posix()}/{hit} (machine-local sandbox path; re-record the bundle)")
    return problems
