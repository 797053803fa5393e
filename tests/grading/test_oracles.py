"""Command oracles: facts map one-to-one to declared actions; each assertion to one predicate."""

from __future__ import annotations

import copy

import pytest
from test_graders_helpers import bundle, claim, compare, grade, make_repo

from skill_eval.core import hashing

NOTES = b"# Review\nVerdict: COMPATIBLE\n"
H = hashing.sha256_bytes(b"a recorded stream")  # a digest, not a placeholder ("a" * 64 is refused)


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
    from skill_eval.grading.oracles import _git_managed_paths_only, _validation_pass

    f = fact(0, ["x"], changed_paths=["docs/a.md", "src/b.py"])
    assert _git_managed_paths_only(f, {"globs": ["docs/*", "src/*.py"]}, None) is None
    assert "outside" in _git_managed_paths_only(f, {"globs": ["docs/*"]}, None)
    assert _validation_pass(fact(0, ["x"], validation={"passed": False}), {}, None)
    assert _validation_pass(fact(0, ["x"], validation={"passed": True}), {}, None) is None


# -- verdict-free (oracle-only) scenarios on the synthetic host (tests/oracle_host.py) ------------

from oracle_host import make_host, oracle_scenario, scenarios  # noqa: E402
from test_graders_helpers import activated, meta  # noqa: E402

from skill_eval.grading import baselines, gates  # noqa: E402
from skill_eval.grading.graders import Catalog, grade_bundle  # noqa: E402

HELLO = b"# Notes\nhello\n"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    recs = scenarios()
    recs[0] = oracle_scenario("notes-add", "committed", actions=[["git", "status", "--porcelain"], ["cat", "NOTES.md"],
                                                                 ["notes-tool", "check"]])
    recs[0]["oracle"]["worktree-clean"]["zero_tolerance"] = True
    recs[0]["oracle"]["tool-check-passes"] = {"predicate": "command-exit-zero", "action": 2}
    cfg = make_host(tmp_path_factory.mktemp("host"), records=recs)
    return cfg, Catalog(cfg)


def host_facts(sc, **over):
    """The runner's receipt of `sc` with every assertion holding; `over` edits it (see each test)."""
    seed = {"commands": [{"index": i, "argv": list(c), "exit_code": 0, "stdout_sha256": H, "stderr_sha256": H}
                         for i, c in enumerate(sc.seed.commands)],
            "files": {f.path: f.sha256 for f in sc.seed.files}, "tree_after": H}
    actions = [fact(i, list(a)) for i, a in enumerate(sc.actions)]
    actions[1]["files"] = {"NOTES.md": hashing.sha256_bytes(HELLO)}
    facts = {"schema_version": 1, "case": sc.id, "seed": seed, "actions": actions}
    for key, fn in over.items():
        fn(facts) if callable(fn) else facts.__setitem__(key, fn)
    return facts


def host_grade(host, tmp_path, case="notes-add-committed", k=0, name="b", **over):
    cfg, cat = host
    sc = cat.scenarios[case]
    path = bundle(cfg, tmp_path, case, [], None, final="Added the note and committed it.\n", events=activated(sc.skill),
                  meta=meta(case, skill=sc.skill, k=k), facts=host_facts(sc, **over), blobs=[HELLO], name=name)
    return grade_bundle(path, cat)


def test_a_verdict_free_scenario_is_graded_by_its_oracle(host, tmp_path):
    g = host_grade(host, tmp_path)
    assert g.failures() == [] and g.passed()
    for dim in ("2", "3", "6"):
        c = g.checks[dim]
        assert c.status == "not_applicable" and "subject declares no verdict profile" in c.note, c
        assert g.to_json()["dimensions"][dim]["note"] == c.note
    assert g.checks["1"].status == "pass" and g.checks["oracle"].status == "pass"
    assert {n for n in g.checks if ":" in n} == {"oracle:notes-say-hello", "oracle:tool-check-passes",
                                                 "oracle:worktree-clean", "receipt:facts"}
    assert "oracle:worktree-clean" in g.zero_tolerance and "oracle:notes-say-hello" not in g.zero_tolerance


def test_a_broken_assertion_fails_naming_the_case_and_the_assertion(host, tmp_path, capsys):
    from skill_eval.cli import main

    g = host_grade(host, tmp_path, actions=lambda f: f["actions"][2].update(exit_code=1))
    assert g.failures() == ["oracle"] and not g.passed()
    assert g.checks["oracle:tool-check-passes"].status == "fail" and g.checks["receipt:facts"].status == "pass"
    assert g.checks["oracle"].reasons == ["assertion 'tool-check-passes' (command-exit-zero, action 2): exited 1"]
    capsys.readouterr()
    assert main(["grade", "--root", str(host[0].root), str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "notes-add-committed" in out and "tool-check-passes" in out and "exited 1" in out


@pytest.mark.parametrize("name,edit,needle", [
    ("missing seed", lambda f: f.pop("seed"), "has no seed receipt"),
    ("missing seed command", lambda f: f["seed"]["commands"].pop(), "seed: command 2 (git commit -qm seed) has no fact"),
    ("extra seed command", lambda f: f["seed"]["commands"].append(
        {"index": 3, "argv": ["git", "gc"], "exit_code": 0, "stdout_sha256": H, "stderr_sha256": H}), "beyond the recipe"),
    ("mismatched seed argv", lambda f: f["seed"]["commands"][1].update(argv=["git", "add", "NOTES.md"]),
     "is not the recipe's"),
    ("failed seed command", lambda f: f["seed"]["commands"][0].update(exit_code=128), "the fixture was not seeded"),
    ("fabricated seed file", lambda f: f["seed"]["files"].update({"extra.txt": H}), "does not list"),
    ("other case", lambda f: f.update(case="notes-add-local"), "receipt of case 'notes-add-local'"),
    ("fabricated action", lambda f: f["actions"].append(fact(3, ["true"])), "does not declare"),
])
def test_a_receipt_that_does_not_match_grades_fail(host, tmp_path, name, edit, needle):
    g = host_grade(host, tmp_path, edit=edit)
    assert g.failures() == ["oracle"], name
    receipt = g.checks["receipt:facts"]
    assert receipt.status == "fail" and any(needle in r for r in receipt.reasons), receipt.reasons
    assert any(needle in r for r in g.checks["oracle"].reasons)


def test_local_seed_files_are_matched_byte_for_byte(host, tmp_path):
    g = host_grade(host, tmp_path, case="notes-add-local",
                   edit=lambda f: f["seed"]["files"].update({"state/decoy.json": "b" * 64}))
    assert g.failures() == ["oracle"]
    assert any("listed file 'state/decoy.json' was sha256 bbbbbbbbbbbb" in r for r in g.checks["receipt:facts"].reasons)
    g = host_grade(host, tmp_path, case="notes-add-local", edit=lambda f: f["seed"]["files"].update({"PROVENANCE": None}))
    assert any("'PROVENANCE' was absent after seeding" in r for r in g.checks["receipt:facts"].reasons)


def test_a_seed_receipt_for_a_fixture_without_seed_is_fabricated(cfg, tmp_path):
    facts = good_facts()
    facts["seed"] = {"commands": [], "files": {}, "tree_after": H}
    f, oracle = run(cfg, tmp_path, facts)
    assert f == ["oracle"] and "facts.json records a seed the fixture does not have" in oracle.reasons


def three_runs(host, tmp_path, bad: dict[int, dict]):
    """Grades of k = 0, 1, 2 of notes-add-committed; `bad[k]` edits that run's receipt."""
    return [host_grade(host, tmp_path, k=k, name=f"k{k}", **bad.get(k, {})) for k in range(3)]


def test_a_zero_tolerance_assertion_must_hold_in_every_run(host, tmp_path):
    dirty = {"edit": lambda f: f["actions"][0].update(git_after="b" * 64)}
    grades = three_runs(host, tmp_path, {1: dirty})
    assert [g.checks["oracle:worktree-clean"].status for g in grades] == ["pass", "fail", "pass"]
    assert gates.pass_k(grades, 3) == [
        "pass^k: notes-add-committed [skill-agent] fails zero-tolerance oracle assertion 'worktree-clean' in run(s) k=[1]"]
    with pytest.raises(Exception, match="zero-tolerance"):
        baselines.update(host[0], grades, gates.pass_k(grades, 3))


def test_a_normal_assertion_follows_the_baseline_rule(host, tmp_path):
    cfg = host[0]
    fail_check = {"edit": lambda f: f["actions"][2].update(exit_code=1)}
    grades = three_runs(host, tmp_path, {2: fail_check})
    assert grades[2].checks["oracle:tool-check-passes"].status == "fail"
    assert gates.pass_k(grades, 3) == []  # not zero-tolerance: one failing run in three is not a pass^k failure
    assert baselines.rates(grades, baselines.MERGE_DIMS)[baselines.triple_of(grades[0])] == {1: (3, 3), "oracle": (2, 3)}
    clean = three_runs(host, tmp_path / "clean", {})
    baselines.update(cfg, clean, gates.pass_k(clean, 3), now="2026-12-01T00:00:00Z")
    assert baselines.gate(cfg, clean) == []
    [problem] = baselines.gate(cfg, grades)
    assert "dimension oracle pass rate 2/3 is below the baseline 1.00" in problem
    assert "failed: notes-add-committed 'tool-check-passes' k=[2]" in problem


def test_a_seed_only_scenario_still_needs_its_receipt(host, tmp_path):
    """A verdict scenario whose fixture has a seed but no actions: facts.json is the seed's receipt."""
    from dataclasses import replace

    cfg, cat = host
    sc = replace(cat.scenarios["notes-add-local"], actions=(), oracle={})
    facts = host_facts(cat.scenarios["notes-add-local"])
    facts["actions"] = []
    path = bundle(cfg, tmp_path, sc.id, [], None, final="done\n", facts=facts, blobs=[HELLO])
    from skill_eval.grading import bundle as bundle_mod
    from skill_eval.grading import oracles

    b = bundle_mod.load(path)
    assert oracles.receipt_problems(b, sc) == []
    assert oracles.grade(b, sc) == ("not_applicable", [], {})
    facts.pop("seed")
    path = bundle(cfg, tmp_path, sc.id, [], None, final="done\n", facts=facts, blobs=[HELLO])
    assert "has no seed receipt" in oracles.receipt_problems(bundle_mod.load(path), sc)[0]
    path = bundle(cfg, tmp_path, sc.id, [], None, final="done\n", blobs=[HELLO])
    assert oracles.grade(bundle_mod.load(path), sc)[1] == [
        "facts.json is missing: the scenario's seed recipe (evals/fixtures/notes-add-local/seed.json) was not executed by the runner"]


def test_a_seeded_case_is_expressible_in_harbor(host):
    """A git seed recipe becomes RUN lines of the task image (tests/interop/test_harbor.py runs them)."""
    from skill_eval.interop import harbor

    assert harbor.why_not(host[1].scenarios["notes-add-local"], harbor.Subject(None, None, None)) is None


def test_an_oracle_case_of_a_verdict_skill_skips_only_the_verdict_dimensions(tmp_path):
    """verdict_skills keeps 2/3/6 for the skill's A/B cases; its category-oracle case is graded by the oracle."""
    import json

    import yaml
    from test_graders_helpers import SCENARIOS, make_repo

    from skill_eval.content import config

    cfg = make_repo(tmp_path)
    fx = cfg.evals_dir / "fixtures" / "notes-oracle"
    fx.mkdir()
    (fx / "NOTES.md").write_text("# Notes\n")
    (fx / "seed.json").write_text(json.dumps({"schema_version": 1, "commands": [["git", "init", "-q"]]}))
    rec = {"id": "notes-oracle", "skill": "abi-compat-review", "category": "oracle", "status": "ready", "prompt": "p",
           "actions": [["git", "status", "--porcelain"]],
           "oracle": {"tree-clean": {"predicate": "git-worktree-clean", "action": 0}}}
    (cfg.evals_dir / "scenarios.yaml").write_text(yaml.safe_dump({"schema_version": 1, "scenarios": [*SCENARIOS, rec]}))
    cfg = config.load(cfg.root)
    facts = {"schema_version": 1, "case": "notes-oracle", "actions": [fact(0, ["git", "status", "--porcelain"])],
             "seed": {"commands": [{"index": 0, "argv": ["git", "init", "-q"], "exit_code": 0, "stdout_sha256": H,
                                    "stderr_sha256": H}], "files": {}, "tree_after": H}}
    path = bundle(cfg, tmp_path, "notes-oracle", [], None, final="done\n", facts=facts, meta=meta("notes-oracle"))
    g = grade(cfg, path)
    assert g.failures() == [] and g.checks["oracle"].status == "pass"
    assert {d: g.checks[d].status for d in "1236"} == {"1": "pass", "2": "not_applicable", "3": "not_applicable",
                                                        "6": "not_applicable"}
    assert "it is a category oracle scenario" in g.checks["6"].note
    # the same skill's verdict questions keep every dimension
    g = grade(cfg, bundle(cfg, tmp_path, "breaking", [compare("BREAKING")], claim("BREAKING"), name="v"))
    assert all(g.checks[d].status == "pass" for d in "1236"), g.failures()
