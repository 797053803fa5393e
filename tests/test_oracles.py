"""Command oracles: facts map one-to-one to declared actions; each assertion to one predicate."""

from __future__ import annotations

import copy

import pytest
from test_graders_helpers import bundle, claim, compare, grade, make_repo

from skill_eval import hashing

NOTES = b"# Review\nVerdict: COMPATIBLE\n"
H = "a" * 64


def fact(i, argv, **over):
    f = {"index": i, "argv": argv, "exit_code": 0, "stdout_sha256": H, "stderr_sha256": H, "tree_before": H,
         "tree_after": H, "git_before": H, "git_after": H, "changed_paths": [], "validation": None, "files": {}}
    f.update(over)
    return f


def good_facts():
    return {"schema_version": 1, "actions": [
        fact(0, ["git", "status", "--porcelain"]),
        fact(1, ["cat", "NOTES.md"], files={"NOTES.md": hashing.sha256_bytes(NOTES)}),
    ]}


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("repo"))


def run(cfg, tmp_path, facts, blobs=(NOTES,)):
    path = bundle(cfg, tmp_path, "oracle", [compare("COMPATIBLE")], claim("COMPATIBLE"), facts=facts, blobs=list(blobs))
    g = grade(cfg, path)
    return g.failures(), g.checks.get("oracle")


def test_all_facts_pass(cfg, tmp_path):
    f, oracle = run(cfg, tmp_path, good_facts())
    assert f == [] and oracle.status == "pass"


def mutate(fn):
    facts = copy.deepcopy(good_facts())
    fn(facts)
    return facts


@pytest.mark.parametrize("name,fn,needle", [
    ("missing", lambda f: f["actions"].pop(), "action 1 (cat NOTES.md) has no fact"),
    ("extra", lambda f: f["actions"].append(fact(2, ["true"])), "does not declare"),
    ("duplicated", lambda f: f["actions"].append(fact(1, ["cat", "NOTES.md"])), "more than one fact"),
    ("argv", lambda f: f["actions"][0].update(argv=["git", "status"]), "is not the declared"),
    ("dirty", lambda f: f["actions"][0].update(git_after="b" * 64), "git worktree digest changed"),
    ("exit", lambda f: f["actions"][0].update(exit_code=1), "exited 1"),
    ("content", lambda f: f["actions"][1].update(files={"NOTES.md": "c" * 64}), "missing"),
])
def test_bad_facts_fail(cfg, tmp_path, name, fn, needle):
    f, oracle = run(cfg, tmp_path, mutate(fn))
    assert f == ["oracle"]
    assert any(needle in r for r in oracle.reasons), oracle.reasons


def test_file_contains_checks_text(cfg, tmp_path):
    other = b"Verdict: BREAKING\n"
    facts = mutate(lambda f: f["actions"][1].update(files={"NOTES.md": hashing.sha256_bytes(other)}))
    f, oracle = run(cfg, tmp_path, facts, blobs=(other,))
    assert f == ["oracle"] and any("does not contain" in r for r in oracle.reasons)


def test_no_facts_when_scenario_has_actions(cfg, tmp_path):
    f, oracle = run(cfg, tmp_path, None)
    assert f == ["oracle"] and "facts.json is missing" in oracle.reasons[0]


def test_facts_for_a_scenario_without_actions_are_extra(cfg, tmp_path):
    path = bundle(cfg, tmp_path, "compatible", [compare("COMPATIBLE")], claim("COMPATIBLE"), facts=good_facts())
    assert grade(cfg, path).failures() == ["oracle"]


def test_managed_paths_predicate():
    from skill_eval.oracles import _git_managed_paths_only, _validation_pass

    f = fact(0, ["x"], changed_paths=["docs/a.md", "src/b.py"])
    assert _git_managed_paths_only(f, {"globs": ["docs/*", "src/*.py"]}, None) is None
    assert "outside" in _git_managed_paths_only(f, {"globs": ["docs/*"]}, None)
    assert _validation_pass(fact(0, ["x"], validation={"passed": False}), {}, None)
    assert _validation_pass(fact(0, ["x"], validation={"passed": True}), {}, None) is None
