"""Command oracles (DESIGN §9.3): scenario assertions graded over runner-recorded facts.

The runner executes the scenario's `actions` after the agent finishes and records what
happened in facts.json; the agent and the adapter supply neither assertion names nor
grades. Facts must correspond one-to-one to the declared actions — a missing, extra,
duplicated or argv-mismatched fact is a failure, because a grade derived from the wrong
command proves nothing. Each assertion then maps to exactly one predicate.
"""

from __future__ import annotations

import re
from typing import Any

from skill_eval.content.evals import Scenario
from skill_eval.core import hashing, strict
from skill_eval.core.errors import SkillEvalError, message_of
from skill_eval.core.vocab import CheckStatus
from skill_eval.grading.bundle import Bundle, is_sha256

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
    if fact["tree_before"] != fact["tree_after"]:
        # the runner's own tree digest: git's view can be narrowed by the agent's index flags/config
        return "the work tree changed (runner tree digest) although git reported no change"
    return None


def _git_managed_paths_only(fact: dict[str, Any], spec: dict[str, Any], bundle: Bundle) -> str | None:
    globs = spec.get("globs")
    if not globs:
        return "the assertion declares no globs"
    outside = [p for p in fact["changed_paths"] if not any(_glob_match(p, g) for g in globs)]
    return f"changed paths outside {globs}: {outside}" if outside else None


def _git_head_unchanged(fact: dict[str, Any], spec: dict[str, Any], bundle: Bundle) -> str | None:
    """No commit (or reset) since seeding: HEAD's object id when the action started equals the one the
    runner recorded right after the seed recipe. Unlike `git merge-base --is-ancestor HEAD <tag>`, the
    agent cannot satisfy it by moving a tag or a branch."""
    seed = (bundle.facts or {}).get("seed") if bundle is not None else None
    seeded = seed.get("head") if isinstance(seed, dict) else None
    if seeded is None:
        return "no HEAD was recorded after seeding (the scenario needs a seed recipe that commits)"
    head = fact.get("head")
    if head is None:
        return "no HEAD was recorded for this action"
    return None if head == seeded else f"HEAD moved from the seeded {seeded[:12]} to {head[:12]}: a commit or reset was made"


def _glob_match(path: str, pattern: str) -> bool:
    """Path glob where `*` and `?` stay inside one path segment and `**` spans segments
    (fnmatch's `*` crosses `/`, so `changes/*.md` would admit `changes/a/b.md`)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.fullmatch("".join(out), path) is not None


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
    "git-head-unchanged": _git_head_unchanged,
}


def receipt_problems(bundle: Bundle, scenario: Scenario | None) -> list[str]:
    """Why facts.json is not the runner's receipt of exactly this scenario (empty: it is).

    Missing, extra, duplicated or argv-mismatched action facts; a seed block that does not
    match the fixture's seed.json one-to-one (commands, exit codes, the listed files' bytes); a
    `case` naming another scenario. Assertion outcomes are not receipt problems: a receipt can
    be faithful and still record a failing command."""
    actions = scenario.actions if scenario else ()
    oracle = scenario.oracle if scenario else {}
    seed = getattr(scenario, "seed", None)
    facts = bundle.facts
    file_problems = [str(p) for p in bundle.problems if p.file == "facts.json"]
    if file_problems:
        return file_problems
    if not actions and not oracle and seed is None:
        if facts is not None and facts["actions"]:
            return [f"facts.json records {len(facts['actions'])} action(s) but the scenario declares none"]
        return _seed_problems(facts.get("seed"), None) if facts is not None else []
    if facts is None:
        what = "actions were" if actions or oracle or seed is None else f"seed recipe ({seed.source}) was"
        return [f"facts.json is missing: the scenario's {what} not executed by the runner"]
    reasons: list[str] = []
    seen: set[int] = set()
    for fact in facts["actions"]:
        i = fact["index"]
        if i in seen:
            reasons.append(f"action {i} has more than one fact")
        elif i >= len(actions):
            reasons.append(f"fact for action {i}, which the scenario does not declare")
        seen.add(i)
    by_index = _by_index(facts)
    for i, argv in enumerate(actions):
        fact = by_index.get(i)
        if fact is None:
            reasons.append(f"action {i} ({' '.join(argv)}) has no fact")
        elif tuple(fact["argv"]) != tuple(argv):
            reasons.append(f"action {i}: recorded argv {fact['argv']} is not the declared {list(argv)}")
    if scenario is not None and facts.get("case") not in (None, scenario.id):
        reasons.append(f"facts.json is the receipt of case {facts['case']!r}, not {scenario.id!r}")
    reasons += _seed_problems(facts.get("seed"), seed)
    reasons += digest_problems(bundle, facts)
    return reasons


# -- the receipt's digests, compared whole ------------------------------------------------------
EMPTY_SHA256 = hashing.sha256_bytes(b"")
_REDERIVE = "re-record the run (the runner computes every digest; none is edited by hand)"


def _placeholder(value: str) -> bool:
    """A digest no hash function produced: one character repeated ("0" * 64, "f" * 40, ...)."""
    return len(set(value)) == 1


def _digest_fields(facts: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(field, value, is_commit_id) for every digest facts.json holds (null ones left out)."""
    out: list[tuple[str, str, bool]] = []
    for j, fact in enumerate(facts["actions"]):
        for key in ("stdout_sha256", "stderr_sha256", "tree_before", "tree_after", "git_before", "git_after"):
            if fact.get(key) is not None:
                out.append((f"actions[{j}].{key}", fact[key], False))
        out += [(f"actions[{j}].files[{path!r}]", digest, False) for path, digest in sorted(fact["files"].items())]
        if fact.get("head") is not None:
            out.append((f"actions[{j}].head", fact["head"], True))
    seed = facts.get("seed")
    if seed is not None:
        for j, cmd in enumerate(seed["commands"]):
            out += [(f"seed.commands[{j}].{key}", cmd[key], False) for key in ("stdout_sha256", "stderr_sha256")]
        out += [(f"seed.files[{path!r}]", digest, False) for path, digest in sorted(seed["files"].items()) if digest]
        out.append(("seed.tree_after", seed["tree_after"], False))
        if seed.get("head") is not None:
            out.append(("seed.head", seed["head"], True))
    return out


def digest_problems(bundle: Bundle, facts: dict[str, Any]) -> list[str]:
    """Every digest of every action and seed command: well-formed, never a placeholder, and equal to
    whatever the bundle can re-derive it from.

    Re-derived: the tree and git digests chain from one action to the next (the runner takes the
    next `*_before` right after the previous `*_after`, nothing runs between); HEAD cannot move across
    an action whose git digest (which covers HEAD) did not change; one tree digest means one set of
    changed paths and one content for each watched file; every watched file's bytes are stored at
    facts/blobs/<sha256>; `git rev-parse [--verify] HEAD` printed the recorded HEAD and a line feed;
    `git diff --quiet` prints nothing; a validation result was parsed from a non-empty stdout.
    Stream digests of other commands (and of every seed command) are not stored anywhere else in the
    bundle: they are checked for form only."""
    reasons = []
    for name, value, commit in _digest_fields(facts):
        ok = (len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)) if commit else is_sha256(value)
        if not ok or _placeholder(value):
            what = "a 40/64-hex commit id" if commit else "a 64-hex sha256"
            reasons.append(f"facts.json: {name} is {value[:16]!r}…, not {what} the runner computed; {_REDERIVE}")
    acts = sorted(facts["actions"], key=lambda f: f["index"])
    for a, b in zip(acts, acts[1:], strict=False):
        for after, before in (("tree_after", "tree_before"), ("git_after", "git_before")):
            if a[after] != b[before]:
                reasons.append(f"facts.json: action {b['index']}'s {before} is not action {a['index']}'s {after} (nothing "
                               f"runs between two actions); {_REDERIVE}")
        if a["git_before"] is not None and a["git_before"] == a["git_after"] and a.get("head") != b.get("head"):
            reasons.append(f"facts.json: action {b['index']}'s head differs from action {a['index']}'s although action "
                           f"{a['index']} left the git state (HEAD included) unchanged; {_REDERIVE}")
    by_tree: dict[str, dict[str, Any]] = {}
    for fact in acts:
        first = by_tree.setdefault(fact["tree_after"], fact)
        both = (set(first["files"]) & set(fact["files"])) - {p for p in fact["files"] if p.startswith(".git/")}
        if sorted(first["changed_paths"]) != sorted(fact["changed_paths"]) or \
                any(first["files"][p] != fact["files"][p] for p in both):
            reasons.append(f"facts.json: actions {first['index']} and {fact['index']} end in the same tree_after but "
                           f"record different changed_paths or watched-file digests; {_REDERIVE}")
        reasons += _stream_problems(fact)
    for digest in sorted({d for fact in acts for d in fact["files"].values() if is_sha256(d)}):
        try:
            bundle.read_captured(f"{BLOB_DIR}/{digest}", digest)
        except SkillEvalError as exc:
            reasons.append(f"facts.json: a watched file's bytes are not stored intact ({message_of(exc)}); {_REDERIVE}")
    return reasons


def _stream_problems(fact: dict[str, Any]) -> list[str]:
    argv, i = fact["argv"], fact["index"]
    want: str | None = None
    why = ""
    if argv in (["git", "rev-parse", "--verify", "HEAD"], ["git", "rev-parse", "HEAD"]) and fact["exit_code"] == 0 \
            and isinstance(fact.get("head"), str):
        want, why = hashing.sha256_bytes(f"{fact['head']}\n".encode()), f"HEAD {fact['head'][:12]} and a line feed"
    elif argv[:2] == ["git", "diff"] and "--quiet" in argv[2:argv.index("--") if "--" in argv else len(argv)]:
        want, why = EMPTY_SHA256, "nothing (git diff --quiet prints nothing)"
    out = []
    if want is not None and fact["stdout_sha256"] != want:
        out.append(f"facts.json: action {i}'s stdout_sha256 is not the digest of what {' '.join(argv)} prints: {why}; "
                   f"{_REDERIVE}")
    if fact["validation"] is not None and fact["stdout_sha256"] == EMPTY_SHA256:
        out.append(f"facts.json: action {i} records a validation result but an empty stdout (the result is parsed "
                   f"from stdout); {_REDERIVE}")
    return out


def _by_index(facts: dict[str, Any]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for fact in facts["actions"]:
        out.setdefault(fact["index"], fact)
    return out


def _seed_problems(recorded: dict[str, Any] | None, seed: Any) -> list[str]:
    """The seed block must be the receipt of exactly the fixture's seed.json recipe."""
    if seed is None:
        return ["facts.json records a seed the fixture does not have"] if recorded is not None else []
    if recorded is None:
        return [f"facts.json has no seed receipt: {seed.source} was not executed by the runner"]
    reasons = []
    got = recorded["commands"]
    if [c["index"] for c in got] != list(range(len(got))):
        reasons.append(f"seed: command facts are indexed {[c['index'] for c in got]}, not 0..{len(got) - 1}")
    for i, argv in enumerate(seed.commands):
        fact = got[i] if i < len(got) else None
        if fact is None:
            reasons.append(f"seed: command {i} ({' '.join(argv)}) has no fact")
        elif tuple(fact["argv"]) != tuple(argv):
            reasons.append(f"seed: command {i}: recorded argv {fact['argv']} is not the recipe's {list(argv)}")
        elif fact["exit_code"] != 0:
            reasons.append(f"seed: command {i} ({' '.join(argv)}) exited {fact['exit_code']}: the fixture was not seeded")
    if len(got) > len(seed.commands):
        reasons.append(f"seed: {len(got) - len(seed.commands)} command fact(s) beyond the recipe's {len(seed.commands)}")
    want = {f.path: f.sha256 for f in seed.files}
    files = recorded["files"]
    for path in sorted(set(files) - set(want)):
        reasons.append(f"seed: a fact for file {path!r}, which {seed.source} does not list")
    for path, digest in sorted(want.items()):
        if path not in files:
            reasons.append(f"seed: no fact for listed file {path!r}")
        elif files[path] != digest:
            state = "absent" if files[path] is None else f"sha256 {files[path][:12]}…"
            reasons.append(f"seed: listed file {path!r} was {state} after seeding, not the recipe's {digest[:12]}…")
    return reasons


def grade(bundle: Bundle, scenario: Scenario | None, receipt: list[str] | None = None
          ) -> tuple[CheckStatus, list[str], dict[str, bool]]:
    """(status, reasons, per-assertion pass) with status pass | fail | not_applicable.

    The reasons are the receipt's problems (`receipt_problems`, or `receipt` when the caller
    already has them) then each failing assertion's; an assertion whose action has no valid fact
    fails too."""
    actions = scenario.actions if scenario else ()
    oracle = scenario.oracle if scenario else {}
    reasons = list(receipt) if receipt is not None else receipt_problems(bundle, scenario)
    facts = bundle.facts
    if not actions and not oracle:
        return ("fail" if reasons else "not_applicable"), reasons, {}
    if facts is None or any(p.file == "facts.json" for p in bundle.problems):
        return "fail", reasons, {name: False for name in oracle}
    by_index = _by_index(facts)
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


