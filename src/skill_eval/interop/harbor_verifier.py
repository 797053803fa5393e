#!/usr/bin/env python3
"""The verifier `skill-eval export harbor` ships as tests/verify.py (stdlib only, Python >= 3.9).

Harbor copies tests/ into the task container after the agent finished and runs tests/test.sh,
which runs this file. It reads tests/spec.json (written at export time, so the agent never saw
it) and grades one of two kinds, writing /logs/verifier/reward.json (`reward`: 1 or 0, and one
0/1 key per check) and /logs/verifier/oracle.json (each check's outcome and reason), which
`skill-eval import harbor` reads back:

oracle  the scenario's command oracle (DESIGN §9.3): run its `actions` in the work tree and
        evaluate every assertion's predicate the way grading/oracles.py does over the runner's
        facts: command-exit-zero, file-contains, git-worktree-clean (git state and tree digest
        unchanged across the action), git-managed-paths-only (paths changed since the agent got
        the tree, against the export-time manifest), git-head-unchanged (HEAD equals the
        seeded HEAD computed at export time).
claim   a verdict scenario: the claim the agent wrote to the claim file is checked against the
        ground truth (verdict, confidence and uncertainty kind, consumer verdict, matrix
        targets) and the fixture's files must be untouched. What needs recorded subject calls
        (dimensions 1, 3, 6's citations; 4 and 5 are judged) is not graded here.

This file is also imported by skill-eval's tests; it must not import skill_eval.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

GIT_SAFE = ["-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "core.hooksPath=/dev/null",
            "-c", "diff.external=", "-c", "status.showUntrackedFiles=all", "-c", "core.excludesFile=/dev/null",
            "-c", "core.attributesFile=/dev/null"]
ACTION_TIMEOUT = 300


def tree_state(root: Path) -> dict[str, list[str]]:
    """path -> [kind, sha256] for every file below root (the top-level .git left out); kind is
    "x" (executable), "f" (regular) or "l" (a symlink, hashed by its target: never followed)."""
    out: dict[str, list[str]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        if base == root:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*filenames, *(d for d in dirnames if (base / d).is_symlink())]:
            full = base / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = ["l", hashlib.sha256(os.readlink(full).encode()).hexdigest()]
            elif full.is_file():
                kind = "x" if full.stat().st_mode & 0o100 else "f"
                out[rel] = [kind, hashlib.sha256(full.read_bytes()).hexdigest()]
    return out


def digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def changed_paths(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[str]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def git_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_DIR": str(root / ".git"),
                "GIT_WORK_TREE": str(root), "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"})
    return env


def _git(root: Path, *args: str) -> bytes | None:
    try:
        r = subprocess.run(["git", *GIT_SAFE, *args], cwd=root, env=git_env(root), capture_output=True,
                           timeout=ACTION_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def git_head(root: Path) -> str | None:
    dot = root / ".git"
    if dot.is_symlink() or not dot.is_dir():
        return None
    out = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    return out.decode().strip() if out else None


def git_digest(root: Path) -> str | None:
    """HEAD, the full porcelain status, the staged and unstaged diffs; None (which fails every git
    predicate) without a real .git, when git fails, or when index flags hide paths from git."""
    dot = root / ".git"
    if dot.is_symlink() or not dot.is_dir():
        return None
    flags = _git(root, "ls-files", "-v")
    if flags is None or any(line[:1].islower() or line[:1] == b"S" for line in flags.splitlines()):
        return None
    parts = [_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all"),
             _git(root, "diff", "--binary", "--no-ext-diff"), _git(root, "diff", "--cached", "--binary", "--no-ext-diff")]
    if any(p is None for p in parts):
        return None
    head = git_head(root) or ""
    return hashlib.sha256(head.encode() + b"\0" + b"\0".join(p or b"" for p in parts)).hexdigest()


def glob_match(path: str, pattern: str) -> bool:
    """`*` and `?` stay inside one path segment, `**` spans segments (grading/oracles.py's rule)."""
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


def run_actions(spec: dict[str, Any], root: Path, logs: Path) -> list[dict[str, Any]]:
    """Execute each action in order and record what the predicates read."""
    watch: dict[int, set[str]] = {}
    for a in spec["oracle"].values():
        if a["predicate"] == "file-contains" and a.get("path"):
            watch.setdefault(a["action"], set()).add(a["path"])
    home = Path(tempfile.mkdtemp(prefix="skill-eval-home-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"})
    facts = []
    for i, argv in enumerate(spec["actions"]):
        fact: dict[str, Any] = {"index": i, "argv": argv, "head": git_head(root),
                                "git_before": git_digest(root), "tree_before": tree_state(root)}
        try:
            r = subprocess.run(argv, cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=ACTION_TIMEOUT, check=False)
            code, out, err = r.returncode, r.stdout, r.stderr
        except FileNotFoundError as exc:
            code, out, err = 127, b"", str(exc).encode()
        except (OSError, subprocess.TimeoutExpired) as exc:
            code, out, err = 126, b"", str(exc).encode()
        (logs / f"action-{i}.out").write_bytes(out)
        (logs / f"action-{i}.err").write_bytes(err)
        fact.update(exit_code=code, git_after=git_digest(root), tree_after=tree_state(root), files={})
        for rel in sorted(watch.get(i, ())):
            p = root / rel
            if p.is_file() and not p.is_symlink():
                fact["files"][rel] = p.read_bytes()
        facts.append(fact)
    return facts


def predicate(name: str, a: dict[str, Any], fact: dict[str, Any], spec: dict[str, Any]) -> str | None:
    """Why the assertion fails (None: it holds)."""
    pred = a["predicate"]
    if pred == "command-exit-zero":
        return None if fact["exit_code"] == 0 else f"exited {fact['exit_code']}"
    if pred == "git-worktree-clean":
        if fact["exit_code"] != 0:
            return f"exited {fact['exit_code']}"
        if fact["git_before"] is None or fact["git_after"] is None:
            return "no git worktree digest (no repository, git failed, or index flags hide paths)"
        if fact["git_before"] != fact["git_after"]:
            return "the git worktree state changed"
        if digest(fact["tree_before"]) != digest(fact["tree_after"]):
            return "the work tree changed although git reported no change"
        return None
    if pred == "git-managed-paths-only":
        globs = a.get("globs") or []
        if not globs:
            return "the assertion declares no globs"
        changed = changed_paths(spec["baseline"], fact["tree_after"])
        outside = [p for p in changed if not any(glob_match(p, g) for g in globs)]
        return f"changed paths outside {globs}: {outside}" if outside else None
    if pred == "file-contains":
        data = fact["files"].get(a["path"])
        if data is None:
            return f"no file {a['path']!r} after action {a['action']}"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return f"{a['path']} is not UTF-8"
        return None if a["text"] in text else f"{a['path']} does not contain {a['text']!r}"
    if pred == "git-head-unchanged":
        seeded = spec.get("seed_head")
        if not seeded:
            return "no seeded HEAD (the scenario needs a seed recipe that commits)"
        if fact["head"] is None:
            return "no HEAD when the action started"
        return None if fact["head"] == seeded else f"HEAD moved from the seeded {seeded[:12]} to {fact['head'][:12]}"
    return f"predicate {pred!r} has no form in this verifier"


def grade_oracle(spec: dict[str, Any], root: Path, logs: Path) -> dict[str, tuple[bool, str]]:
    facts = run_actions(spec, root, logs)
    results = {}
    for name, a in sorted(spec["oracle"].items()):
        why = predicate(name, a, facts[a["action"]], spec)
        results[name] = (why is None, why or "holds")
    return results


def _claim_problem(value: Any, expected: dict[str, Any]) -> str | None:
    """The claim envelope's shape (content/claim.py is the full, strict reader: import re-checks)."""
    if not isinstance(value, dict):
        return "the claim file is not a JSON object"
    known = {"verdict", "confident", "uncertainty", "evidence", "consumer_verdict", "matrix"}
    extra = sorted(set(value) - known)
    if extra:
        return f"unknown key(s) {extra}"
    if not isinstance(value.get("confident"), bool):
        return "`confident` must be true or false"
    verdict = value.get("verdict")
    if verdict is not None and verdict not in expected["verdicts"]:
        return f"verdict {verdict!r} is not one of {expected['verdicts']}"
    if value["confident"] and (verdict is None or "uncertainty" in value):
        return "a confident claim needs a verdict and no uncertainty"
    if not value["confident"]:
        u = value.get("uncertainty")
        if not isinstance(u, dict) or u.get("kind") not in expected["uncertainty_kinds"]:
            return "an unconfident claim needs uncertainty.kind from " + ", ".join(expected["uncertainty_kinds"])
    ev = value.get("evidence")
    if not isinstance(ev, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in ev):
        return "`evidence` must be a list of call numbers"
    return None


def grade_claim(spec: dict[str, Any], root: Path, logs: Path) -> dict[str, tuple[bool, str]]:
    exp = spec["claim"]
    path = root / exp["file"]
    results: dict[str, tuple[bool, str]] = {}
    value: Any = None
    if not path.is_file() or path.is_symlink():
        why: str | None = f"no claim file {exp['file']} in the work tree"
    else:
        try:
            value = json.loads(path.read_bytes().decode("utf-8"), object_pairs_hook=_no_duplicates)
            why = _claim_problem(value, exp)
        except (UnicodeDecodeError, ValueError) as exc:
            why = f"the claim file is not strict JSON: {exc}"
        (logs / "claim.json").write_bytes(path.read_bytes()[:1_000_000])
    results["claim-present"] = (why is None, why or "a well-formed claim envelope")
    ok = why is None
    c = value if ok else {}
    want_v, want_conf = exp["verdict"], exp["confident"]
    got = (c.get("verdict"), c.get("confident"))
    results["verdict-matches-truth"] = (
        ok and got == (want_v, want_conf),
        f"claimed verdict {got[0]!r} (confident {got[1]!r}); the truth is {want_v!r} (confident {want_conf!r})")
    if exp.get("uncertainty_kind"):
        kind = (c.get("uncertainty") or {}).get("kind") if ok else None
        results["uncertainty-kind"] = (kind == exp["uncertainty_kind"],
                                       f"uncertainty kind {kind!r}; expected {exp['uncertainty_kind']!r}")
    if "consumer_verdict" in exp:
        cv = c.get("consumer_verdict") if ok else None
        results["consumer-verdict"] = (ok and "consumer_verdict" in c and cv == exp["consumer_verdict"],
                                       f"consumer verdict {cv!r}; expected {exp['consumer_verdict']!r}")
    if exp.get("matrix_required"):
        targets = ((c.get("matrix") or {}).get("targets") if ok else None) or []
        states = {t.get("name"): t.get("state") for t in targets if isinstance(t, dict)}
        missing = [t for t in exp["matrix_required"] if t not in states]
        wrong = [t for t in exp.get("matrix_unrun", []) if states.get(t) == "ran"]
        good = ok and not missing and not wrong
        results["matrix-targets"] = (good, "every required target listed, unrun ones not reported as ran" if good else
                                     f"missing targets {missing}, unrun targets reported as ran {wrong}")
    changed = [p for p in changed_paths(spec["baseline"], tree_state(root)) if p != exp["file"]]
    touched = [p for p in changed if p in spec["baseline"]]
    results["inputs-untouched"] = (not touched, f"fixture files changed: {touched}" if touched else "fixture files intact")
    return results


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    spec = json.loads((here / "spec.json").read_text(encoding="utf-8"))
    root = Path(os.environ.get("SKILL_EVAL_TASK_WORKDIR") or spec["workdir"])
    logs = Path(os.environ.get("SKILL_EVAL_TASK_LOGS") or "/logs/verifier")
    logs.mkdir(parents=True, exist_ok=True)
    try:
        results = grade_oracle(spec, root, logs) if spec["kind"] == "oracle" else grade_claim(spec, root, logs)
        error = None
    except Exception as exc:  # noqa: BLE001 - a verifier crash is a failed grade, never a missing reward
        results, error = {}, f"{type(exc).__name__}: {exc}"
    passed = bool(results) and error is None and all(ok for ok, _ in results.values())
    for name, (ok, why) in results.items():
        print(f"{'PASS' if ok else 'FAIL'} {name}: {why}")
    if error:
        print(f"ERROR {error}")
    rewards = {"reward": int(passed), **{name: int(ok) for name, (ok, _) in results.items()}}
    (logs / "oracle.json").write_text(json.dumps({
        "schema_version": 1, "scenario": spec["scenario"], "kind": spec["kind"], "passed": passed, "error": error,
        "checks": {name: {"passed": ok, "reason": why} for name, (ok, why) in results.items()},
        "not_graded": spec.get("not_graded", [])}, indent=1, sort_keys=True))
    (logs / "reward.json").write_text(json.dumps(rewards, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
