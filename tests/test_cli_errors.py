"""Bad input never produces a traceback: one line, naming the file, exit 1 or 2."""

import pytest

from skill_eval.cli import main


def one_line_error(capsys):
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in captured.err + captured.out
    assert err.count("\n") == 0, err
    return err


@pytest.mark.parametrize(
    "rel,text,needle",
    [
        ("evals/scenarios.yaml", "schema_version: 1\nscenarios: [\n", "scenarios.yaml: invalid YAML at line"),
        ("evals/scenarios.yaml", "schema_version: 1\nschema_version: 1\nscenarios: []\n", "duplicate key 'schema_version'"),
        ("evals/ground_truth.json", '{"schema_version": 1, "cases": {}, "cases": {}}', "duplicate JSON key 'cases'"),
        ("evals/ground_truth.json", '{"schema_version": 1, "subject": "x", "cases": {"case-one": {}}', "ground_truth.json: invalid JSON"),
        ("evals/trigger_corpus.yaml", "schema_version: 1\nprompts: []\nextra: 1\n", "Additional properties are not allowed ('extra'"),
        ("skill-eval.toml", "schema_version = 1\nbogus = 2\n", "skill-eval.toml: field (top level)"),
        ("evals/rubric.yaml", "schema_version: 1\nversion: '1'\ndimensions: []\n", "rubric.yaml: field dimensions"),
    ],
)
def test_malformed_inputs(mini_repo, capsys, rel, text, needle):
    (mini_repo / rel).write_text(text)
    rc = main(["pack", "--check", "--root", str(mini_repo)])
    assert rc == 2
    assert needle in one_line_error(capsys)


def test_bad_utf8_in_skill(mini_repo, capsys):
    (mini_repo / "skills-src/beta/SKILL.md").write_bytes(b"---\nname: beta\ndescription: \xff\n---\n")
    # L0: that skill's own finding (the other skills are still checked), not an abort
    assert main(["check-skills", "--root", str(mini_repo)]) == 1
    assert "error: skills-src/beta/SKILL.md: invalid UTF-8 at byte 28" in capsys.readouterr().out
    # anything that must read the skill (the pack) still fails closed with one line
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "invalid UTF-8" in one_line_error(capsys)


def test_symlink_in_hashed_tree(mini_repo, capsys):
    (mini_repo / "evals/fixtures/case-one/link").symlink_to(mini_repo / "evals/fixtures/case-one/old.w")
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    err = one_line_error(capsys)
    assert "case-one" in err and "link is a symlink" in err


def test_scenario_missing_fixture(mini_repo, capsys):
    p = mini_repo / "evals/scenarios.yaml"
    p.write_text(p.read_text().replace("fixture: case-two", "fixture: case-nine"))
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "fixture 'case-nine' has no ground-truth case" in one_line_error(capsys)


def test_scenario_fixture_dir_deleted(mini_repo, capsys):
    import shutil

    shutil.rmtree(mini_repo / "evals/fixtures/case-two")
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "fixture directory fixtures/case-two/ is missing" in one_line_error(capsys)


def test_unknown_skill_in_scenario(mini_repo, capsys):
    p = mini_repo / "evals/scenarios.yaml"
    p.write_text(p.read_text().replace("skill: beta", "skill: gamma"))
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "skill 'gamma' does not exist" in one_line_error(capsys)


def test_category_a_may_not_restate_truth(mini_repo, capsys):
    p = mini_repo / "evals/scenarios.yaml"
    p.write_text(p.read_text().replace("invocation_class: single-pair, probe: evidence-free}", "invocation_class: single-pair, expected: {verdict: OK}}"))
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    assert "scenarios.yaml" in one_line_error(capsys)


def test_no_config(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["pack", "--check"]) == 2
    assert "no skill-eval.toml" in one_line_error(capsys)


def test_unknown_command_is_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2


def test_every_command_has_help_and_json(capsys):
    from skill_eval.cli import available_commands, build_parser

    for name in available_commands():
        parser = build_parser(name)
        sub = parser._subparsers._group_actions[0].choices[name]
        helptext = sub.format_help()
        assert "--json" in helptext and "--root" in helptext, name
