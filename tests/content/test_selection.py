from conftest import git_commit_all

from skill_eval.cli import main
from skill_eval.content import config, selection


def test_no_base_selects_every_skill_risk(mini_repo):
    cfg = config.load(mini_repo)
    suite = selection.select(cfg, "risk")
    assert suite.skills == ("alpha", "beta")
    # B always; A with non-green truth; green floor (alpha-same is green truth)
    assert {s.id: suite.reasons[s.id] for s in suite.scenarios} == {
        "alpha-break": "truth is not green",
        "alpha-same": "green floor (evidence-free probe)",
        "beta-unsure": "category B",
    }
    assert len(suite.prompts) == 3
    expected = selection.expected_bundles(cfg, suite)
    assert len(expected) == (3 + 3) * 3 and {e.k for e in expected} == {0, 1, 2}


def test_base_selects_only_moved_skill(mini_repo):
    cfg = config.load(mini_repo)
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "edit\n")
    from skill_eval.content import pack

    pack.write(cfg)
    suite = selection.select(config.load(mini_repo), "risk", base="HEAD")
    assert suite.moved == ("skill:beta",)
    assert suite.skills == ("beta",)
    assert [s.id for s in suite.scenarios] == ["beta-unsure"]


def test_base_with_no_change_selects_nothing(mini_repo):
    suite = selection.select(config.load(mini_repo), "risk", base="HEAD")
    assert suite.skills == () and suite.scenarios == () and suite.prompts == ()


def test_surface_change_selects_everything(mini_repo):
    p = mini_repo / "evals/surface/cli.json"
    p.write_text(p.read_text().replace('"1.0"', '"2.0"'))
    suite = selection.select(config.load(mini_repo), "full", base="HEAD")
    assert "surface" in suite.moved and suite.skills == ("alpha", "beta")


def test_shared_fragment_selects_citing_skill_only(mini_repo):
    (mini_repo / "skills-src/shared/b.md").write_text("changed\n")
    from skill_eval.content import pack

    pack.write(config.load(mini_repo))
    git_commit_all(mini_repo, "frag")
    suite = selection.select(config.load(mini_repo), "risk", base="HEAD~1")
    assert suite.skills == ("alpha",)


def test_bad_base_is_usage_error(mini_repo, capsys):
    assert main(["select", "--root", str(mini_repo), "--base", "no-such-ref"]) == 2
    assert "is not a commit" in capsys.readouterr().err


def test_select_json(mini_repo, capsys):
    import json

    assert main(["select", "--root", str(mini_repo), "--suite", "full", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["k"] == 3 and len(out["scenarios"]) == 3 and len(out["expected_bundles"]) == 18
