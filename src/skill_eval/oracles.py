"""Command oracles (DESIGN §9.3): scenario assertions graded over runner-recorded facts.

The runner executes the scenario's `actions` after the agent finishes and records what
happened in facts.json; the agent and the adapter supply neither assertion names nor
grades. Facts must correspond one-to-one to the declared actions — a missing, extra,
duplicated or argv-mismatched fact is a failure, because a grade derived from the wrong
command proves nothing. Each assertion then maps to exactly one predicate.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from skill_eval import hashing, strict
from skill_eval.bundle import Bundle
from skill_eval.content import Scenario
from skill_eval.errors import SkillEvalError, message_of
from skill_eval.vocab import CheckStatus

PREDICATES = ("command-exit-zero", "validation-pass", "git-worktree-clean", "git-managed-paths-only", "file-contains")
BLOB_DIR = "facts/blobs"


def _command_exit_zero(fact: dict[str, Any], spec: dict[str, Any], bundle: Bundle) -> str | None:
    return None if fact["exit_code"] == 0 else f"exited {fact['exit_code']}"


def _validation_pass(fact: dict[str, Any], spec: dict[str, Any], bundle: Bundle) -> str | None:
    v = fact["validation"]
    if v is None:
        return "no validation result was recorded"
    return None if v.get("passed") is True else "the validation result did not pass"


def _git_worktree_clean(fact: dict[str, Any], spec: dict[str, Any], bundle: Bundle) -> str | None:
    if fact["exit_code"] != 0:
        return f"exited {fact['exit_code']}"
    if fact["git_before"] is None or fact["git_after"] is None:
        return "no git worktree digest was recorded"
    if fact["git_before"] != fact["git_after"]:
        return "the git worktree digest changed"
    return None


def _git_managed_paths_only(fact: dict[str, Any], spec: dict[str, Any], bundle: Bundle) -> str | None:
    globs = spec.get("globs")
    if not globs:
        return "the assertion declares no globs"
    outside = [p for p in fact["changed_paths"] if not any(fnmatch.fnmatchcase(p, g) for g in globs)]
    return f"changed paths outside {globs}: {outside}" if outside else None


def _file_contains(fact: dict[str, Any], spec: dict[str, Any], bundle: Bundle) -> str | None:
    path, text = spec.get("path"), spec.get("text")
    if not path or text is None:
        return "the assertion needs both path and text"
    digest = fact["files"].get(path)
    if digest is None:
        return f"no fact records the file {path!r}"
    try:
        data = bundle.read_captured(f"{BLOB_DIR}/{digest}", digest)
        content = strict.decode_utf8(data, path)
    except SkillEvalError as exc:
        return message_of(exc)
    return None if text in content else f"{path} does not contain {text!r}"


_IMPL = {
    "command-exit-zero": _command_exit_zero,
    "validation-pass": _validation_pass,
    "git-worktree-clean": _git_worktree_clean,
    "git-managed-paths-only": _git_managed_paths_only,
    "file-contains": _file_contains,
}


def grade(bundle: Bundle, scenario: Scenario | None) -> tuple[CheckStatus, list[str], dict[str, bool]]:
    """(status, reasons, per-assertion pass) with status pass | fail | not_applicable."""
    actions = scenario.actions if scenario else ()
    oracle = scenario.oracle if scenario else {}
    facts = bundle.facts
    file_problems = [str(p) for p in bundle.problems if p.file == "facts.json"]
    if not actions and not oracle:
        if file_problems:
            return "fail", file_problems, {}
        if facts is not None and facts["actions"]:
            return "fail", [f"facts.json records {len(facts['actions'])} action(s) but the scenario declares none"], {}
        return "not_applicable", [], {}
    if file_problems:
        return "fail", file_problems, {}
    if facts is None:
        return "fail", ["facts.json is missing: the scenario's actions were not executed by the runner"], {}
    reasons: list[str] = []
    by_index: dict[int, dict[str, Any]] = {}
    for fact in facts["actions"]:
        i = fact["index"]
        if i in by_index:
            reasons.append(f"action {i} has more than one fact")
        elif i >= len(actions):
            reasons.append(f"fact for action {i}, which the scenario does not declare")
        by_index.setdefault(i, fact)
    for i, argv in enumerate(actions):
        fact = by_index.get(i)
        if fact is None:
            reasons.append(f"action {i} ({' '.join(argv)}) has no fact")
        elif tuple(fact["argv"]) != tuple(argv):
            reasons.append(f"action {i}: recorded argv {fact['argv']} is not the declared {list(argv)}")
    results: dict[str, bool] = {}
    for name, spec in sorted(oracle.items()):
        idx = spec["action"]
        fact = by_index.get(idx)
        if not (idx < len(actions) and fact is not None and tuple(fact["argv"]) == tuple(actions[idx])):
            results[name] = False
            reasons.append(f"assertion {name!r}: no valid fact for action {spec['action']}")
            continue
        impl = _IMPL.get(spec["predicate"])
        why = f"unknown predicate {spec['predicate']!r}" if impl is None else impl(fact, spec, bundle)
        results[name] = why is None
        if why:
            reasons.append(f"assertion {name!r} ({spec['predicate']}, action {spec['action']}): {why}")
    return ("fail" if reasons else "pass"), reasons, results


def blob_name(data: bytes) -> str:
    """Where a runner stores a file's content for file-contains: facts/blobs/<sha256>."""
    return f"{BLOB_DIR}/{hashing.sha256_bytes(data)}"
