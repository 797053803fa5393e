"""Versioned formats, reading side: v1 fixtures of every committed format read forever, a newer
version is one clear error, and every migration has its own test.

tests/data/v1/ is frozen: never regenerate it. When a format's version goes up, these files keep
proving that evidence and configuration written by older skill-eval still read (upgraded).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from skill_eval.checks import surface
from skill_eval.cli import main
from skill_eval.content import config, pack
from skill_eval.core import formats, schemas, strict
from skill_eval.core.errors import InputError
from skill_eval.grading import baselines, bundle, evidence

V1 = Path(__file__).parents[1] / "data" / "v1"
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
BASELINE_TRIPLE = baselines.Triple("abi-compat-review", "claude-code",
                                   "scripted:3dca3847550cd148fdb78d194bd58bf8a491331132f5a680daf270f8a997cd2a")


@pytest.fixture
def v1_repo(repo_copy: Path) -> Path:
    """This repository's content with every committed-format file replaced by its v1 fixture."""
    evals = repo_copy / "agent-evals/skills"
    shutil.copy(V1 / "skill-eval.toml", repo_copy / "skill-eval.toml")
    shutil.copy(V1 / "skill-eval-pack.json", evals / "skill-eval-pack.json")
    shutil.copy(V1 / "baseline.json", evals / "baselines" / f"{BASELINE_TRIPLE.slug()}.json")
    shutil.copy(V1 / "evidence-pending.yaml", evals / "evidence-pending.yaml")
    shutil.copy(V1 / "abicheck-cli.json", evals / "surface/abicheck-cli.json")
    return repo_copy


def test_v1_fixtures_are_v1():
    for path in (V1 / "skill-eval-pack.json", V1 / "baseline.json", V1 / "judgments.json", V1 / "abicheck-cli.json",
                 V1 / "bundles/behavioral/meta.json", V1 / "bundles/trigger/meta.json"):
        assert strict.load_json(path)["schema_version"] == 1, path
    assert strict.load_toml(V1 / "skill-eval.toml")["schema_version"] == 1
    assert strict.load_yaml(V1 / "evidence-pending.yaml")["schema_version"] == 1
    for line in (V1 / "bundles/behavioral/calls.jsonl").read_text().splitlines():
        assert json.loads(line)["schema_version"] == 1 and "inputs" not in json.loads(line)


def test_v1_config_pack_baseline_pending_surface_read(v1_repo):
    cfg = config.load(v1_repo)
    assert cfg.k == 3 and cfg.subject.name == "abicheck"
    assert pack.load_committed(cfg)
    assert baselines.load(cfg, BASELINE_TRIPLE)["skill"] == "abi-compat-review"
    assert evidence.load_pending(cfg)[0]["item"] == "review-removed-export"
    assert surface.load_reference(cfg)["tool"] == "abicheck"


@pytest.mark.parametrize("kind", ["behavioral", "trigger"])
def test_v1_bundle_reads_upgraded(tmp_path, kind):
    root = tmp_path / kind
    shutil.copytree(V1 / "bundles" / kind, root)
    b = bundle.load(root)
    assert b.problems == [], b.problems
    assert b.meta["schema_version"] == formats.FORMATS["meta"]
    assert b.meta["isolation"] == "none" and b.meta["outcome"] == "completed"
    if kind == "behavioral":
        assert b.calls and all(c.raw["inputs"] is None and c.raw["schema_version"] == formats.FORMATS["call"]
                               for c in b.calls)


def test_v1_judgments_read(tmp_path):
    root = tmp_path / "b"
    shutil.copytree(V1 / "bundles/behavioral", root)
    shutil.copy(V1 / "judgments.json", root / "judgments.json")
    from skill_eval.grading import judgments

    found = judgments.read_judgments(root, (), fixture=True)  # the one reader of judgments.json
    assert found.state == "fixture" and {j["dimension"] for j in found.doc["judgments"]} == {4, 5}
    assert {j["judge_source"] for j in found.doc["judgments"]} == {"unrecorded"}
    assert judgments.read_judgments(root, ()).state == "unsigned"  # as evidence: nothing binds it


def test_v1_bundle_grades_through_the_cli(repo_copy, tmp_path, capsys):
    root = tmp_path / "b"
    shutil.copytree(V1 / "bundles/behavioral", root)
    rc = main(["grade", "--json", "--root", str(repo_copy), str(root)])
    out = json.loads(capsys.readouterr().out)
    assert rc in (0, 1) and "error" not in out
    assert not out["checks"]["bundle"]["reasons"], out["checks"]["bundle"]


# -- newer versions: one clear line ---------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(formats.FORMATS))
def test_newer_version_is_one_clear_error(name):
    record = {"schema_version": formats.FORMATS[name] + 1}
    with pytest.raises(InputError) as exc:
        formats.upgrade(record, name, f"{name}.json")
    assert "written by a newer skill-eval" in exc.value.message and exc.value.field == "schema_version"
    assert "\n" not in exc.value.render()


def test_newer_config_through_the_cli(mini_repo, capsys):
    path = mini_repo / "skill-eval.toml"
    path.write_text(path.read_text().replace("schema_version = 1", "schema_version = 7"))
    assert main(["pack", "--check", "--root", str(mini_repo)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "skill-eval.toml: schema_version: written by a newer skill-eval" in err


def test_newer_meta_in_a_bundle(tmp_path):
    root = tmp_path / "b"
    shutil.copytree(V1 / "bundles/behavioral", root)
    meta = json.loads((root / "meta.json").read_text())
    meta["schema_version"] = formats.FORMATS["meta"] + 1
    meta["renamed_field"] = meta.pop("runner_version")
    (root / "meta.json").write_text(json.dumps(meta))
    problems = [str(p) for p in bundle.load(root).problems]
    assert problems == [f"meta.json: schema_version: written by a newer skill-eval (meta format version "
                        f"{formats.FORMATS['meta'] + 1}; this one reads up to {formats.FORMATS['meta']})"]


def test_newer_pack_through_the_cli(repo_copy, capsys):
    path = repo_copy / "agent-evals/skills/skill-eval-pack.json"
    doc = json.loads(path.read_text())
    doc["schema_version"] = 99
    path.write_text(json.dumps(doc))
    assert main(["pack", "--check", "--root", str(repo_copy)]) == 2
    assert "skill-eval-pack.json: schema_version: written by a newer skill-eval" in capsys.readouterr().err


def test_missing_migration_is_an_error(monkeypatch):
    monkeypatch.setitem(formats.FORMATS, "pack", 3)
    with pytest.raises(InputError, match="no longer readable"):
        formats.upgrade({"schema_version": 1}, "pack", "p.json")


@pytest.mark.parametrize("version", [None, "1", True, 1.5])
def test_version_must_be_an_integer(version):
    with pytest.raises(InputError, match="not an integer"):
        formats.upgrade({"schema_version": version}, "pack", "p.json")


# -- one test per migration -----------------------------------------------------------------------

@pytest.mark.parametrize("status,extra,reason,outcome", [
    ("complete", {"stop_reason": "completed"}, None, "completed"),
    ("incomplete", {"stop_reason": "max_turns"}, None, "budget_stop"),
    ("incomplete", {"stop_reason": "budget"}, None, "budget_stop"),
    ("incomplete", {}, "max_turns: 40 turns used", "budget_stop"),
    ("incomplete", {"stop_reason": "incomplete"}, None, "infra_error"),
    # a v1 timeout does not say whether any turn was taken: counted against the skill (outcomes.derive),
    # which can only make it look worse; v2 records the runner's own observation
    ("incomplete", {"timed_out": True}, "timeout", "budget_stop"),
    ("error", {}, "agent crashed", "agent_error"),
])
def test_meta_1_to_2(status, extra, reason, outcome):
    v1 = {"schema_version": 1, "status": status, "extra": extra, **({"status_reason": reason} if reason else {})}
    v2 = formats.upgrade(v1, "meta", "meta.json")
    assert v2["schema_version"] == 2 and v2["isolation"] == "none" and v2["outcome"] == outcome
    assert v1["schema_version"] == 1 and "outcome" not in v1  # the input record is not mutated


def test_meta_1_to_2_validates_against_the_current_schema():
    v1 = strict.load_json(V1 / "bundles/behavioral/meta.json")
    assert schemas.errors(formats.upgrade(v1, "meta", "meta.json"), "meta") == []


def test_facts_1_to_2():
    v1 = strict.load_json(V1 / "facts.json")
    assert v1["schema_version"] == 1
    v2 = formats.upgrade(v1, "facts", "facts.json")
    assert v2["schema_version"] == 2 and "seed" not in v2 and "case" not in v2
    assert schemas.errors(v2, "facts") == []


def test_call_1_to_2():
    v1 = json.loads((V1 / "bundles/behavioral/calls.jsonl").read_text().splitlines()[0])
    v2 = formats.upgrade(v1, "call", "calls.jsonl:1")
    assert v2["schema_version"] == 2 and v2["inputs"] is None
    assert schemas.errors(v2, "call") == []


# -- every schema pins the version this skill-eval writes; writers take it from FORMATS -----------

@pytest.mark.parametrize("name", sorted(n for n in formats.FORMATS if (SCHEMAS / f"{n}.schema.json").is_file()))
def test_schema_const_matches_formats(name):
    pinned = json.loads((SCHEMAS / f"{name}.schema.json").read_text())["properties"]["schema_version"]
    if "enum" in pinned:  # transitional meta/call schemas (until the v2 writers land): the current version is the newest
        assert max(pinned["enum"]) == formats.FORMATS[name] and name in ("meta", "call")
    else:
        assert pinned == {"const": formats.FORMATS[name]}


@pytest.mark.parametrize("module", ["content/pack.py", "grading/evidence.py", "grading/baselines.py", "checks/surface.py"])
def test_writers_take_versions_from_formats(module):
    text = (Path(pack.__file__).parents[1] / module).read_text()
    assert '"schema_version": 1' not in text and '"schema_version": FORMATS' not in text.replace("formats.FORMATS", "")
    assert "formats.FORMATS[" in text
