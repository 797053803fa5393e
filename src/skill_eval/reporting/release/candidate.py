"""The release candidate: the clean, attached, tested HEAD the seed asks a release to be made from.

`release stage` inspects the repository that holds the host before anything is recorded or staged:

  - no tracked change (staged or not) and no untracked file that .gitignore does not ignore, in
    the whole repository (the candidate is the repository's HEAD, not only the host's folder);
  - HEAD attached to a branch, or detached exactly at a tag, or at the commit CI names
    (GITHUB_SHA, or the commit GITHUB_REF resolves to: CI checks pull requests out detached);
  - at least one commit.

Anything else is refused (exit 1), naming each problem, unless the maintainer passes an explicit
waiver (`--allow-dirty-candidate REASON`; never `--force`, which the nox session always passes).
The waiver does not hide the problems: the stage records the candidate (head, ref, problems,
waiver) under its seal and the report shows it beside the outcome. A stage written through the
library without a decision (`settle`) records the inspection as it was; `report.decide` fails a
release whose candidate was not clean and not waived, so no path leads from a dirty tree to a pass.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from skill_eval.core import gitrepo
from skill_eval.core.errors import CheckFailed, InputError

MAX_LISTED = 8
CI_VARS = ("GITHUB_SHA", "GITHUB_REF")


def _git(root: Path, *args: str) -> str | None:
    return gitrepo.text(root, *args)


def _changes(root: Path) -> list[str]:
    """Tracked changes and non-ignored untracked files, repository-relative (git status --porcelain -z)."""
    out = gitrepo.git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    if out.returncode != 0:
        return [f"git status failed: {out.stderr.decode(errors='replace').strip() or out.returncode}"]
    entries = out.stdout.decode(errors="replace").split("\0")
    problems, i = [], 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # a rename or copy names its source in the next entry
            i += 1
        problems.append(f"untracked file not ignored: {path}" if code == "??" else f"tracked change ({code.strip()}): {path}")
    return problems


def _ref(root: Path, head: str) -> tuple[str | None, list[str]]:
    """(the ref the candidate is, problems): the branch, else a tag at HEAD, else the ref CI names."""
    branch = _git(root, "symbolic-ref", "-q", "HEAD")
    if branch:
        return branch, []
    tags = sorted(filter(None, (_git(root, "tag", "--points-at", "HEAD") or "").splitlines()))
    if tags:
        return f"refs/tags/{tags[0]}", []
    sha, ref = (os.environ.get(v, "").strip() for v in CI_VARS)
    if sha and sha == head:
        return ref or sha, []
    if ref and _git(root, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}") == head:
        return ref, []
    named = ", ".join(f"{v}={os.environ[v]}" for v in CI_VARS if os.environ.get(v)) or "neither is set"
    return None, [f"detached HEAD at {head[:12]} is neither exactly a tag nor the commit CI names (GITHUB_SHA / GITHUB_REF: "
                  f"{named})"]


def inspect(root: Path) -> dict[str, Any]:
    """{"head", "ref", "problems"} of the repository holding `root` (problems empty: a clean candidate)."""
    head = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    if not head:
        return {"head": None, "ref": None, "problems": ["no commit: HEAD does not resolve (or this is not a git repository)"]}
    ref, problems = _ref(root, head)
    changes = _changes(root)
    listed = changes[:MAX_LISTED] + ([f"... and {len(changes) - MAX_LISTED} more change(s)"] if len(changes) > MAX_LISTED else [])
    return {"head": head, "ref": ref, "problems": problems + listed}


def settle(state: dict[str, Any], waiver: str | None) -> dict[str, Any]:
    """The stage's candidate record: refused (CheckFailed) when it has problems and no waiver names a reason."""
    if waiver is not None and not waiver.strip():
        raise InputError("the waiver needs a reason", field="--allow-dirty-candidate",
                         fix='say why, e.g. --allow-dirty-candidate "rehearsal on a working copy"')
    if state["problems"] and waiver is None:
        raise CheckFailed("the release candidate is not a clean tested HEAD: " + "; ".join(state["problems"]),
                          fix="commit (or stash) the changes, add build output to .gitignore, check out a branch or tag; "
                              "or record the exception with --allow-dirty-candidate REASON (shown in the report)")
    return {**state, "clean": not state["problems"], "waiver": waiver.strip() if waiver and state["problems"] else None}


def unsettled(state: dict[str, Any]) -> dict[str, Any]:
    """The record of an inspection nobody decided on (a library caller's stage): kept as it was, never waived."""
    return {**state, "clean": not state["problems"], "waiver": None}


def problem(record: dict[str, Any]) -> str | None:
    """Why a staged candidate blocks the release (None: clean, or waived)."""
    if record["clean"] or record["waiver"]:
        return None
    return "the candidate was not a clean tested HEAD and no waiver was recorded: " + "; ".join(record["problems"][:3])


def describe(record: dict[str, Any] | None) -> str:
    """One line for the report: the candidate's head and ref, and the recorded exception if any."""
    if record is None:
        return "not recorded (a report from before candidates were inspected)"
    where = f"`{record['head'] or 'none'}` ({record['ref'] or 'no ref'})"
    if not record["problems"]:
        return f"{where}, clean"
    state = f"WAIVED ({record['waiver']})" if record["waiver"] else "NOT CLEAN, not waived"
    return f"{where}, {state}: " + "; ".join(record["problems"])
