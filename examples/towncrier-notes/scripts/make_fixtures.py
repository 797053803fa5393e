#!/usr/bin/env python3
"""Write this example's fixture trees (agent-evals/skills/fixtures/<case>/) from one table.

Why a generator: eight fixtures share one small project (tidepool) in two modes, and a
hand-kept copy drifts. The trees it writes are committed and are what the pack digests; run
it again after editing this table, then `skill-eval pack`. Each case's git history is not a
file tree: it is the case's seed recipe (seed.json), which the runner executes in the
sandbox before the agent starts.

Modes:
  committed  config in pyproject.toml [tool.towncrier], every fragment committed, clean tree;
  local      config in towncrier.toml (keep-a-changelog types; pyproject.toml keeps a stale
             [tool.towncrier] table that towncrier ignores), plus local, uncommitted state:
             exact decoy bytes the skill must leave alone and a provenance sentinel.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
FIXTURES = HERE / "agent-evals" / "skills" / "fixtures"

GITIGNORE = "__pycache__/\n*.pyc\n# local agent configuration (skills installed per developer)\n.claude/\n.agents/\n"
README = "# tidepool\n\nConnection pools for flaky upstreams.\n\nRelease notes: see CHANGELOG.md (built by towncrier).\n"
INIT = '"""tidepool: connection pools for flaky upstreams."""\n\nfrom tidepool.pool import Pool\n\n__all__ = ["Pool"]\n'
POOL = '''"""The pool."""


class Pool:
    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._idle: list[object] = []

    def drain(self) -> list[object]:
        drained, self._idle = self._idle, []
        return drained
'''
UPLOAD = '''"""Uploads with retries (issue 123)."""

RETRIES = 3


def upload(send, payload: bytes) -> None:
    for attempt in range(RETRIES):
        try:
            return send(payload)
        except ConnectionError:
            if attempt == RETRIES - 1:
                raise
'''

TOWNCRIER_COMMON = '''name = "tidepool"
filename = "CHANGELOG.md"
start_string = "<!-- towncrier release notes start -->\\n"
title_format = "## {name} {version} ({project_date})"
'''

PYPROJECT_COMMITTED = '''[project]
name = "tidepool"
version = "1.5.0.dev0"
description = "Connection pools for flaky upstreams."
requires-python = ">=3.11"

[tool.towncrier]
directory = "changes"
''' + TOWNCRIER_COMMON + '''issue_format = "[#{issue}](https://tracker.example/tidepool/issues/{issue})"
'''

# Local mode: the pyproject table is a stale leftover (towncrier.toml wins); a skill that reads
# it would use the wrong directory and the wrong types.
PYPROJECT_LOCAL = '''[project]
name = "tidepool"
version = "2.0.0.dev0"
description = "Connection pools for flaky upstreams."
requires-python = ">=3.11"

# Superseded by towncrier.toml (towncrier reads that file first); kept until the 2.0 cleanup.
[tool.towncrier]
directory = "changes"
filename = "CHANGELOG.md"
'''

TYPES_LOCAL = "".join(f'''
[[tool.towncrier.type]]
directory = "{d}"
name = "{n}"
showcontent = true
''' for d, n in (("added", "Added"), ("changed", "Changed"), ("fixed", "Fixed")))

TOWNCRIER_LOCAL = '''[tool.towncrier]
directory = "newsfragments"
''' + TOWNCRIER_COMMON + '''issue_format = "#{issue}"
''' + TYPES_LOCAL

SECTIONS_LOCAL = '''
[[tool.towncrier.section]]
name = "Command line"
path = "cli"

[[tool.towncrier.section]]
name = "Library"
path = "lib"
'''

CHANGELOG_COMMITTED = """# Changelog

All notable changes to tidepool. Sections below the marker are built by towncrier from the
fragments in `changes/`; do not edit them by hand.

<!-- towncrier release notes start -->

## tidepool 1.4.0 (2026-10-14)

### Features

- Pools accept a `max_idle` limit. ([#101](https://tracker.example/tidepool/issues/101))

### Bugfixes

- `Pool.drain()` no longer returns connections twice. ([#97](https://tracker.example/tidepool/issues/97))
"""

CHANGELOG_LOCAL = """# Changelog

All notable changes to tidepool. Sections below the marker are built by towncrier from the
fragments in `newsfragments/`; do not edit them by hand.

<!-- towncrier release notes start -->

## tidepool 1.9.0 (2026-11-02)

### Added

- `Pool.stats()` reports idle and busy counts. (#30)
"""

# The provenance sentinel: a committed file whose exact bytes name the seed. The oracle checks it
# is intact; an agent that rewrites history, resets or checks out other content loses it.
def provenance(case: str) -> str:
    return f"skill-eval example fixture: towncrier-notes/{case}\nseeded by fixtures/{case}/seed.json; do not edit\n"


def base(mode: str) -> dict[str, str]:
    files = {".gitignore": GITIGNORE, "README.md": README, "src/tidepool/__init__.py": INIT,
             "src/tidepool/pool.py": POOL}
    if mode == "committed":
        files |= {"pyproject.toml": PYPROJECT_COMMITTED, "CHANGELOG.md": CHANGELOG_COMMITTED, "changes/.gitkeep": ""}
    else:
        files |= {"pyproject.toml": PYPROJECT_LOCAL, "towncrier.toml": TOWNCRIER_LOCAL,
                  "CHANGELOG.md": CHANGELOG_LOCAL, "newsfragments/.gitkeep": ""}
    return files


# case -> (mode, files committed on main, files committed on the branch (None: stay on main),
#          untracked decoy files)
CASES: dict[str, dict] = {
    "fragment-feature": {
        "mode": "committed",
        "main": {},
        "branch": ("feature/upload-retry", {"src/tidepool/upload.py": UPLOAD}),
        "decoys": {},
    },
    "fragment-second-note": {
        "mode": "committed",
        "main": {},
        "branch": ("fix/queue-race", {
            "src/tidepool/lock.py": '"""A lock around drain() (issue 88)."""\n\nimport threading\n\nDRAIN_LOCK = threading.Lock()\n',
            "changes/88.bugfix.md": "Two workers draining the same pool no longer receive the same connection.\n",
        }),
        "decoys": {},
    },
    "fragment-custom-type": {
        "mode": "local",
        "main": {},
        "branch": ("fix/empty-pool", {
            "tests/test_empty_pool.py": "from tidepool import Pool\n\n\ndef test_drain_empty():\n    assert Pool().drain() == []\n",
        }),
        "decoys": {"newsfragments/+scratch.fixed.md": "maybe mention the pool warm-up fix here? (not this branch)\n"},
    },
    "fragment-section": {
        "mode": "local",
        "sections": True,
        "main": {"newsfragments/cli/.gitkeep": "", "newsfragments/lib/.gitkeep": ""},
        "branch": ("feature/drain-timeout", {
            "src/tidepool/timeouts.py": '"""Drain timeouts (PR 51)."""\n\nDEFAULT_DRAIN_TIMEOUT: float | None = None\n',
        }),
        "decoys": {"docs/release-checklist.local.md": "- [ ] ping packagers\n- [ ] draft the 2.0 blog post (local notes)\n"},
    },
    "notes-release": {
        "mode": "committed",
        "main": {
            "changes/123.feature.md": "Uploads are retried up to three times on connection errors.\n",
            "changes/88.bugfix.md": "Two workers draining the same pool no longer receive the same connection.\n",
        },
        "branch": None,
        "decoys": {},
    },
    "notes-preview": {
        "mode": "committed",
        "main": {
            "changes/123.feature.md": "Uploads are retried up to three times on connection errors.\n",
            "changes/130.feature.md": "`Pool` accepts a `name` used in log messages.\n",
        },
        "branch": None,
        "decoys": {},
    },
    "notes-release-local": {
        "mode": "local",
        "main": {
            "newsfragments/45.fixed.md": "An empty pool no longer crashes `Pool.drain()`.\n",
            "newsfragments/51.added.md": "`Pool.drain()` accepts a `timeout`.\n",
        },
        "branch": None,
        "decoys": {"RELEASING.local.md": "local checklist for 2.0.0 - not for the repository\n- [ ] tag\n- [ ] upload\n"},
    },
    "notes-untracked-fragment": {
        "mode": "local",
        "main": {
            "newsfragments/45.fixed.md": "An empty pool no longer crashes `Pool.drain()`.\n",
        },
        "branch": None,
        "decoys": {"newsfragments/77.fixed.md": "Stale: leftover from the abandoned fix/77-retry-storm branch.\n"},
    },
}


def case_files(case: str) -> dict[str, str]:
    spec = CASES[case]
    files = base(spec["mode"])
    if spec["mode"] == "local" and spec.get("sections"):
        files["towncrier.toml"] += SECTIONS_LOCAL
        del files["newsfragments/.gitkeep"]
    files |= spec["main"]
    if spec["mode"] == "local":
        files["PROVENANCE"] = provenance(case)
    if spec["branch"]:
        files |= spec["branch"][1]
    files |= spec["decoys"]
    return files


def seed_recipe(case: str) -> dict:
    """fixtures/<case>/seed.json (schemas/seed.schema.json): the git history, then the exact
    bytes of the decoys (untracked local state) and the provenance sentinel (committed)."""
    spec = CASES[case]
    files = case_files(case)
    listed = [{"path": p, "sha256": sha(files[p]), "role": "decoy"} for p in sorted(spec["decoys"])]
    if "PROVENANCE" in files:
        listed.append({"path": "PROVENANCE", "sha256": sha(files["PROVENANCE"]), "role": "provenance"})
    recipe = {"schema_version": 1, "commands": seed_commands(case)}
    if listed:
        recipe["files"] = listed
    recipe["notes"] = (f"{spec['mode']} mode. Generated by scripts/make_fixtures.py; the tag skill-eval-seed marks "
                       "the seeded HEAD (no-commit assertions compare HEAD with it).")
    return recipe


def dump_seed(recipe: dict) -> str:
    """Strict JSON, one command or file per line (reviewable diffs)."""
    lines = ["{", '  "schema_version": 1,', '  "commands": [']
    lines += [f"    {json.dumps(c)}," for c in recipe["commands"]]
    lines[-1] = lines[-1].rstrip(",")
    lines.append("  ],")
    if "files" in recipe:
        lines.append('  "files": [')
        lines += [f"    {json.dumps(f)}," for f in recipe["files"]]
        lines[-1] = lines[-1].rstrip(",")
        lines.append("  ],")
    lines.append(f'  "notes": {json.dumps(recipe["notes"])}')
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == recipe
    return text


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def main() -> int:
    for case in CASES:
        out = FIXTURES / case
        shutil.rmtree(out, ignore_errors=True)
        for rel, text in sorted(case_files(case).items()):
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (out / "seed.json").write_text(dump_seed(seed_recipe(case)), encoding="utf-8")
        print(f"{case}: {len(case_files(case))} files")
    return 0



def seed_commands(case: str) -> list[list[str]]:
    """The git history of a case: main at the last release, optionally a feature branch, a tag
    marking the seeded HEAD (the no-commit assertions compare HEAD with it); decoys stay untracked."""
    spec = CASES[case]
    files = case_files(case)
    branch_files = set(spec["branch"][1]) if spec["branch"] else set()
    main_files = sorted(set(files) - branch_files - set(spec["decoys"]))
    cmds = [["git", "init", "-q", "-b", "main"],
            ["git", "config", "user.name", "Tidepool Maintainer"],
            ["git", "config", "user.email", "maintainer@tidepool.example"],
            ["git", "add", "--", *main_files],
            ["git", "commit", "-q", "--date=2026-11-20T10:00:00Z", "-m", "Start the next release"]]
    if spec["branch"]:
        name, added = spec["branch"]
        cmds += [["git", "switch", "-q", "-c", name],
                 ["git", "add", "--", *sorted(added)],
                 ["git", "commit", "-q", "--date=2026-11-25T10:00:00Z", "-m", f"Work on {name}"]]
    cmds.append(["git", "tag", "skill-eval-seed"])
    return cmds


if __name__ == "__main__":
    sys.exit(main())
