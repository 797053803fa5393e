"""Issue 25 item 3 (registry): what the runner may execute, and actions no assertion uses.

A scenario's actions and setup and a fixture's seed.json commands run on the runner's side, so
they come from an allow-list: git and the configured subject by default, extended by
`[evals] action_commands`. Every action is read by an oracle assertion (or belongs in `setup`).
Each refusal is one line naming the file, the scenario, the index and the fix.
"""

from __future__ import annotations

import json

import pytest
from oracle_host import TOML, make_host, oracle_scenario, scenarios

from skill_eval.cli import main
from skill_eval.content import config, evals, registry
from skill_eval.core.errors import ConfigError, SkillEvalError

NO_CAT = TOML.replace('action_commands = ["cat"]', "action_commands = []")


def first_error(cfg: config.Config) -> SkillEvalError:
    with pytest.raises(SkillEvalError) as info:
        evals.load_scenarios(cfg)
    err = info.value
    assert err.fix and "\n" not in err.render(), err.render()
    return err


def with_action(argv: list[str], *, used: bool = True) -> list[dict]:
    recs = scenarios()
    recs[0]["actions"] = [*recs[0]["actions"], argv]
    if used:
        recs[0]["oracle"]["extra"] = {"predicate": "command-exit-zero", "action": len(recs[0]["actions"]) - 1}
    return recs


def test_the_default_allow_list_is_git_and_the_subject(tmp_path):
    cfg = make_host(tmp_path, toml=NO_CAT, records=[oracle_scenario("notes-add", "committed",
                    actions=[["git", "status", "--porcelain"], ["notes-tool", "check"]])])
    assert registry.allowed_commands(cfg) == {"git", "notes-tool"}
    assert [s.id for s in evals.load_scenarios(cfg)] == ["notes-add-committed"]


def test_rm_rf_root_is_refused_naming_scenario_index_and_fix(tmp_path):
    cfg = make_host(tmp_path, records=with_action(["rm", "-rf", "/"]))
    err = first_error(cfg)
    assert isinstance(err, ConfigError)
    assert err.field == "scenarios.0.actions.2"
    assert err.message.startswith("notes-add-committed: action 2 (rm -rf /) runs 'rm'")
    assert "action_commands" in err.fix and "scenarios.yaml" in err.render()


@pytest.mark.parametrize("argv", [["/usr/bin/git", "status"], ["sh", "-c", "git status"], ["env", "git", "status"]])
def test_only_the_listed_names_run(argv, tmp_path):
    cfg = make_host(tmp_path, records=with_action(argv))
    assert first_error(cfg).field == "scenarios.0.actions.2"


def test_config_extends_the_allow_list(tmp_path):
    toml = TOML.replace('action_commands = ["cat"]', 'action_commands = ["cat", "make"]')
    cfg = make_host(tmp_path, toml=toml, records=with_action(["make", "check"]))
    assert cfg.action_commands == ("cat", "make")
    assert len(evals.load_scenarios(cfg)) == 4


def test_cat_is_refused_unless_configured(tmp_path):
    """The synthetic host reads NOTES.md with `cat` because its config allows it; without that, refused."""
    err = first_error(make_host(tmp_path, toml=NO_CAT))
    assert err.field == "scenarios.0.actions.1" and "runs 'cat'" in err.message


def test_setup_commands_are_held_to_the_same_list(tmp_path):
    recs = scenarios()
    recs[0]["setup"] = [["git", "status"], ["curl", "https://example.invalid"]]
    err = first_error(make_host(tmp_path, records=recs))
    assert err.field == "scenarios.0.setup.1" and "setup 1 (curl https://example.invalid) runs 'curl'" in err.message


def test_a_seed_command_outside_the_list_is_refused_and_config_allows_it(tmp_path):
    seed = {"schema_version": 1, "commands": [["git", "init", "-q"], ["make", "fixture"]]}
    cfg = make_host(tmp_path)
    (cfg.evals_dir / "fixtures" / "notes-add-committed" / "seed.json").write_text(json.dumps(seed))
    err = first_error(cfg)
    assert err.field == "commands.1" and "command 1 runs 'make'" in err.message and "action_commands" in err.fix
    assert "seed.json" in err.render()
    toml = TOML.replace('action_commands = ["cat"]', 'action_commands = ["cat", "make"]')
    cfg2 = make_host(tmp_path / "b", toml=toml)
    (cfg2.evals_dir / "fixtures" / "notes-add-committed" / "seed.json").write_text(json.dumps(seed))
    assert len(evals.load_scenarios(cfg2)) == 4


def test_an_action_no_assertion_uses_is_refused(tmp_path):
    cfg = make_host(tmp_path, records=with_action(["git", "log", "--oneline"], used=False))
    err = first_error(cfg)
    assert err.field == "scenarios.0.actions.2"
    assert err.message == "notes-add-committed: action 2 (git log --oneline) is used by no oracle assertion"
    assert "`action: 2`" in err.fix and "setup" in err.fix


def test_the_registry_command_lists_every_refusal(tmp_path, capsys):
    recs = with_action(["rm", "-rf", "/"], used=False)
    cfg = make_host(tmp_path, records=recs)
    assert main(["registry", "--root", str(cfg.root)]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "actions.2" in text and "runs 'rm'" in text and "is used by no oracle assertion" in text


@pytest.mark.parametrize("value", ['["/bin/rm"]', '["rm -rf"]', '"rm"', '[""]', '["cat", "cat"]'])
def test_action_commands_must_be_plain_program_names(value, tmp_path):
    toml = TOML.replace('action_commands = ["cat"]', f"action_commands = {value}")
    with pytest.raises(SkillEvalError) as info:
        make_host(tmp_path, toml=toml)
    assert "evals.action_commands" in info.value.render() and "\n" not in info.value.render()


def test_the_golden_corpus_scenarios_are_not_runnable_and_skip_the_list():
    """golden/scenarios.yaml reads REVIEW.md with `cat`; make_golden.py replays it, the runner never runs it."""
    from conftest import REPO
    cfg = config.load(REPO)
    golden = evals.load_golden_scenarios(cfg, evals.load_ground_truth(cfg))
    assert any(a[0] == "cat" for s in golden for a in s.actions)
    assert "cat" not in registry.allowed_commands(cfg)
