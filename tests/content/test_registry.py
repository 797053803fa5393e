"""The evaluation registry (skill_eval.content.registry via evals.load_scenarios, `skill-eval registry`).

Every gate gets a bad case it must reject, with a one-line error naming file, field and fix.
The synthetic host (tests/oracle_host.py) is verdict-free: a subject with a name only, two
modes (local needs decoy + provenance bytes), two skills, one oracle scenario per skill x mode.
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from oracle_host import DECOY, SKILLS, TOML, make_host, oracle_scenario, scenarios, sha

from skill_eval.cli import main
from skill_eval.content import config, evals
from skill_eval.core.errors import ConfigError, SkillEvalError


def load(cfg):
    return evals.load_scenarios(cfg, skills=set(SKILLS))


def problems(cfg) -> list[SkillEvalError]:
    found: list[SkillEvalError] = []
    evals.load_scenarios(cfg, skills=set(SKILLS), problems=found)
    return found


def rewrite_scenarios(cfg, records):
    (cfg.evals_dir / "scenarios.yaml").write_text(yaml.safe_dump({"schema_version": 1, "scenarios": records}))


def one_error(cfg, needle: str, field: str | None = None) -> SkillEvalError:
    with pytest.raises(SkillEvalError) as info:
        load(cfg)
    err = info.value
    assert needle in err.message, err.render()
    if field is not None:
        assert err.field == field, err.render()
    assert err.fix, err.render()
    assert "\n" not in err.render()
    return err


def test_the_good_host_loads_with_no_problem(tmp_path):
    cfg = make_host(tmp_path)
    got = load(cfg)
    assert sorted((s.skill, s.mode) for s in got) == [(k, m) for k in SKILLS for m in ("committed", "local")]
    assert all(not s.verdict and s.sandbox == s.id and s.fixture == s.id for s in got)
    assert got[1].seed.commands[0] == ("git", "init", "-q") and got[1].seed.roles() == {"decoy", "provenance"}
    assert problems(cfg) == []


def test_every_skill_x_mode_must_be_covered(tmp_path):
    recs = [r for r in scenarios() if r["id"] != "notes-check-local"]
    cfg = make_host(tmp_path, records=recs)
    err = one_error(cfg, "skill 'notes-check' has no ready scenario in mode 'local'", "scenarios")
    assert "mode: local" in err.fix


def test_a_draft_does_not_cover_its_mode(tmp_path):
    recs = scenarios()
    recs[-1]["status"] = "draft"
    cfg = make_host(tmp_path, records=recs)
    one_error(cfg, "has no ready scenario in mode 'local'")


def test_duplicate_case_ids_are_refused(tmp_path):
    cfg = make_host(tmp_path)
    recs = scenarios()
    recs.append(copy.deepcopy(recs[0]))
    rewrite_scenarios(cfg, recs)
    one_error(cfg, "duplicate scenario id 'notes-add-committed'", "scenarios.4.id")


def test_fixture_and_sandbox_names_must_equal_the_case_id(tmp_path):
    recs = scenarios()
    recs[0]["fixture"] = "notes-add-local"
    cfg = make_host(tmp_path, records=recs)
    one_error(cfg, "is not the case id", "scenarios.0.fixture")
    recs = scenarios()
    recs[0]["sandbox"] = "elsewhere"
    cfg = make_host(tmp_path / "b", records=recs)
    one_error(cfg, "sandbox 'elsewhere' is not the case id", "scenarios.0.sandbox")
    recs[0]["sandbox"] = recs[0]["id"]
    rewrite_scenarios(cfg, recs)
    assert load(cfg)[0].sandbox == "notes-add-committed"


def test_modes_are_declared_and_named(tmp_path):
    recs = scenarios()
    recs[0]["mode"] = "remote"
    cfg = make_host(tmp_path, records=recs)
    one_error(cfg, "mode 'remote' is not declared", "scenarios.0.mode")
    del recs[0]["mode"]
    rewrite_scenarios(cfg, recs)
    one_error(cfg, "names no mode", "scenarios.0.mode")
    # a host without [evals.modes] refuses a scenario that names one
    plain = tmp_path / "plain"
    toml = TOML.split("[evals.modes.committed]")[0] + "[subject]\nname = \"notes-tool\"\n"
    cfg2 = make_host(plain, toml=toml, records=[oracle_scenario("notes-add", "committed")])
    one_error(cfg2, "mode 'committed' is not declared")


def test_an_oracle_case_needs_its_seed(tmp_path):
    cfg = make_host(tmp_path)
    (cfg.evals_dir / "fixtures" / "notes-add-committed" / "seed.json").unlink()
    one_error(cfg, "has no seed.json", "scenarios.0.fixture")


@pytest.mark.parametrize("seed,needle,field", [
    ({"schema_version": 1, "commands": [["git", "add", "-A"]]}, "not git init", "commands.0"),
    ({"schema_version": 1, "commands": [["git", "init"], ["sh", "-c", "touch x"]]}, "runs 'sh'", "commands.1"),
    ({"schema_version": 1, "commands": []}, "should be non-empty", None),
    ({"schema_version": 1, "commands": [["git", "init"]], "extra": 1}, "Additional properties", None),
    ({"schema_version": 2, "commands": [["git", "init"]]}, "newer", None),
])
def test_a_bad_seed_recipe_is_refused(tmp_path, seed, needle, field):
    cfg = make_host(tmp_path)
    (cfg.evals_dir / "fixtures" / "notes-add-committed" / "seed.json").write_text(json.dumps(seed))
    with pytest.raises(SkillEvalError) as info:
        load(cfg)
    assert needle in info.value.render() and "seed.json" in info.value.render()
    if field:
        assert info.value.field == field


def test_seed_json_is_strict(tmp_path):
    cfg = make_host(tmp_path)
    (cfg.evals_dir / "fixtures" / "notes-add-committed" / "seed.json").write_text(
        '{"schema_version": 1, "commands": [["git", "init"]], "commands": [["git", "init"]]}')
    with pytest.raises(SkillEvalError) as info:
        load(cfg)
    assert "duplicate" in info.value.render().lower()


def test_decoy_bytes_must_match_exactly(tmp_path):
    cfg = make_host(tmp_path)
    (cfg.evals_dir / "fixtures" / "notes-add-local" / "state" / "decoy.json").write_bytes(DECOY + b" ")
    err = one_error(cfg, "decoy file state/decoy.json has sha256", "files.0.sha256")
    assert err.source.endswith("fixtures/notes-add-local/seed.json")
    (cfg.evals_dir / "fixtures" / "notes-add-local" / "state" / "decoy.json").unlink()
    one_error(cfg, "decoy file state/decoy.json: it does not exist", "files.0.path")


def test_a_local_seed_must_carry_decoy_and_provenance(tmp_path):
    cfg = make_host(tmp_path)
    path = cfg.evals_dir / "fixtures" / "notes-add-local" / "seed.json"
    seed = json.loads(path.read_text())
    seed["files"] = [f for f in seed["files"] if f["role"] != "provenance"]
    path.write_text(json.dumps(seed))
    one_error(cfg, "mode 'local' needs provenance", "scenarios.1.mode")


def test_a_mode_init_command_must_be_run_once(tmp_path):
    toml = TOML.replace('require = ["decoys", "provenance"]', 'require = ["decoys", "provenance"]\ninit = ["notes-tool", "init", "--local"]')
    cfg = make_host(tmp_path, toml=toml)
    one_error(cfg, "does not run mode 'local''s init command", "scenarios.1.mode")
    path = cfg.evals_dir / "fixtures" / "notes-add-local" / "seed.json"
    seed = json.loads(path.read_text())
    seed["commands"].insert(1, ["notes-tool", "init", "--local"])
    path.write_text(json.dumps(seed))
    for other in ("notes-check-local",):
        (cfg.evals_dir / "fixtures" / other / "seed.json").write_text(json.dumps(seed))
    assert problems(cfg) == []


@pytest.mark.parametrize("change,needle", [
    (lambda r: r["oracle"]["worktree-clean"].update(action=5), "names action 5, which does not exist"),
    (lambda r: r["oracle"]["worktree-clean"].update(predicate="made-up"), "is not one of"),
    (lambda r: r["oracle"]["notes-say-hello"].pop("text"), "'text' is a required property"),
    (lambda r: r["oracle"]["notes-say-hello"].update(text=""), "should be non-empty"),  # "" is in every file
    (lambda r: r["oracle"]["worktree-clean"].update(globs=["*"]), "should not be valid"),
    (lambda r: r["oracle"].update({"Bad Name": {"predicate": "command-exit-zero", "action": 0}}), "does not match"),
    (lambda r: r.update(oracle={}), "should be non-empty"),
    (lambda r: r.pop("actions"), "'actions' is a required property"),
    (lambda r: r.update(expected={"verdict": None}), "scenarios.yaml: scenarios.0: "),  # expected on an oracle case
])
def test_every_assertion_maps_to_a_supported_predicate_and_a_real_action(tmp_path, change, needle):
    recs = scenarios()
    change(recs[0])
    cfg = make_host(tmp_path, records=recs)
    with pytest.raises(SkillEvalError) as info:
        load(cfg)
    assert needle in info.value.render(), info.value.render()


def test_a_verdict_question_needs_a_verdict_skill(tmp_path):
    from test_graders_helpers import truth_case

    recs = scenarios()
    recs[0].update(category="A", fixture="notes-add-committed", invocation_class="x")
    recs[0].pop("oracle")
    recs[0].pop("actions")
    cfg = make_host(tmp_path, records=recs)
    with pytest.raises(SkillEvalError) as info:
        load(cfg)
    assert "no ground-truth case" in info.value.message  # a verdict-free host has no ground truth at all
    (cfg.evals_dir / "ground_truth.json").write_text(json.dumps(
        {"schema_version": 1, "subject": "notes-tool", "cases": {"notes-add-committed": truth_case(None, 0)}}))
    one_error(cfg, "invocation_class 'x' is not in subject.invocation_classes", "scenarios.0.invocation_class")
    cfg = make_host(tmp_path / "b", toml=TOML + '\n[subject.invocation_classes.x]\ncommand = "add"\n', records=recs)
    (cfg.evals_dir / "ground_truth.json").write_text(json.dumps(
        {"schema_version": 1, "subject": "notes-tool", "cases": {"notes-add-committed": truth_case(None, 0)}}))
    one_error(cfg, "category A is a verdict question, but the subject declares no verdict profile", "scenarios.0.category")


def test_skill_eval_registry_lists_every_problem(tmp_path, capsys):
    cfg = make_host(tmp_path)
    assert main(["registry", "--root", str(cfg.root)]) == 0
    assert "registry: ok — 4 scenarios, 2 skills, modes committed, local, 0 problems" in capsys.readouterr().out
    (cfg.evals_dir / "fixtures" / "notes-add-local" / "state" / "decoy.json").write_bytes(b"changed")
    (cfg.evals_dir / "fixtures" / "notes-check-committed" / "seed.json").unlink()
    assert main(["registry", "--root", str(cfg.root), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["ok"] and len(out["problems"]) == 2
    fields = sorted(p["field"] for p in out["problems"])
    assert fields == ["files.0.sha256", "scenarios.2.fixture"]
    assert all(p["fix"] and p["source"] for p in out["problems"])


def test_the_dogfood_registry_is_clean(capsys):
    assert main(["registry"]) == 0
    assert "19 scenarios, 3 skills, modes (none declared), 0 problems" in capsys.readouterr().out


# -- the [subject] verdict profile is optional -----------------------------------------------------

def test_a_name_only_subject_has_no_verdicts(tmp_path):
    cfg = make_host(tmp_path)
    assert cfg.has_subject and not cfg.subject.has_verdicts
    assert not cfg.subject.verdict_skill("notes-add")
    assert evals.load_ground_truth(cfg) == {}


@pytest.mark.parametrize("extra,needle", [
    ('verdicts = ["OK", "BAD"]\n', "required property"),  # a partial verdict profile
    ('verdict_skills = ["notes-add"]\n', "required property"),
    ('scoping_flags = ["--only"]\n', "required property"),
])
def test_a_partial_verdict_profile_is_refused(tmp_path, extra, needle):
    root = tmp_path / "r"
    root.mkdir()
    (root / "skill-eval.toml").write_text(TOML + extra)
    with pytest.raises(SkillEvalError) as info:
        config.load(root)
    assert needle in info.value.render() and "subject" in info.value.render()


def test_verdict_skills_restrict_verdict_questions(tmp_path):
    from test_graders_helpers import make_repo

    cfg = make_repo(tmp_path)
    text = (cfg.root / "skill-eval.toml").read_text().replace(
        'evidence_commands = ["compare"]', 'evidence_commands = ["compare"]\nverdict_skills = ["abi-consumer-impact"]')
    (cfg.root / "skill-eval.toml").write_text(text)
    cfg = config.load(cfg.root)
    assert cfg.subject.verdict_skill("abi-consumer-impact") and not cfg.subject.verdict_skill("abi-compat-review")
    with pytest.raises(ConfigError) as info:
        evals.load_scenarios(cfg)
    assert "category A is a verdict question, but 'abi-compat-review' is not in subject.verdict_skills" in info.value.message
    assert info.value.field == "scenarios.0.category"


def test_verdict_skills_must_name_real_skills(tmp_path):
    from test_graders_helpers import make_repo

    cfg = make_repo(tmp_path)
    text = (cfg.root / "skill-eval.toml").read_text().replace(
        'evidence_commands = ["compare"]', 'evidence_commands = ["compare"]\nverdict_skills = ["abi-compat-review", "no-such"]')
    (cfg.root / "skill-eval.toml").write_text(text)
    cfg = config.load(cfg.root)
    with pytest.raises(ConfigError) as info:
        evals.load_scenarios(cfg, skills={"abi-compat-review"})
    assert "verdict skill 'no-such' does not exist" in info.value.message and info.value.field == "subject.verdict_skills"


def test_seed_digest_helper_matches():
    assert sha(DECOY) == sha(DECOY)  # the helper the fixtures' seed.json files are written with
