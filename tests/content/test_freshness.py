import json
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.content import config, freshness


def make_meta(cfg, *, kind="behavioral", scenario="alpha-break", skill="alpha", observed=None):
    cur = freshness.current(cfg)
    meta = {
        "schema_version": 1, "kind": kind, "arm": "skill-agent", "run_id": "r1", "k": 0, "skill": skill,
        "agent": {"name": "scripted", "version": "0"}, "model": "scripted:" + "0" * 64, "adapter_tier": "1",
        "runner_version": "0.1.0", "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:01Z",
        "status": "complete", "observed_inputs": observed or [],
    }
    keys = freshness.required_keys({"kind": kind, "scenario": scenario, "skill": skill, "arm": "skill-agent"}, cur)
    meta["digests"] = {k: cur.digest(k) for k in keys}
    if kind == "behavioral":
        meta["scenario"] = scenario
    else:
        meta["prompt_id"] = "p-alpha"
        meta["skill"] = None
    return meta


def write_bundle(root: Path, meta: dict) -> Path:
    b = root / "evals/evidence" / (meta["skill"] or "trigger") / meta["arm"] / meta["run_id"] / (meta.get("scenario") or meta["prompt_id"]) / str(meta["k"])
    b.mkdir(parents=True)
    (b / "meta.json").write_text(json.dumps(meta))
    return b


def problems(cfg, meta):
    return freshness.check_bundle_freshness(cfg, meta)


def test_fresh_bundles_accepted(mini_repo):
    cfg = config.load(mini_repo)
    obs = [{"path": "evals/fixtures/case-one/old.w", "sha256": "0" * 64}, {"path": "skills-src/alpha/SKILL.md", "sha256": "0" * 64}]
    assert problems(cfg, make_meta(cfg, observed=obs)) == []
    assert problems(cfg, make_meta(cfg, kind="trigger")) == []


STALE = [
    ("skill", "skills-src/alpha/SKILL.md", lambda t: t + "edit\n", "skill:alpha: stale"),
    ("shared fragment", "skills-src/shared/b.md", lambda t: t + "edit\n", "skill:alpha: stale"),
    ("scenario", "evals/scenarios.yaml", lambda t: t.replace('"does it break?"', '"does it break now?"'), "scenario:alpha-break: stale"),
    ("fixture byte", "evals/fixtures/case-one/new.w", lambda t: "NEW\n", "scenario:alpha-break: stale"),
    ("ground truth", "evals/ground_truth.json", lambda t: t.replace('"description": "break"', '"description": "breaks"'), "scenario:alpha-break: stale"),
    ("harness", "evals/prompts/behavioral.md", lambda t: "x {prompt}\n", "harness: stale"),
    ("surface", "evals/surface/cli.json", lambda t: t.replace('"1.0"', '"1.1"'), "surface: stale"),
]


@pytest.mark.parametrize("label,rel,edit,needle", STALE, ids=[s[0] for s in STALE])
def test_stale_behavioral_rejected(mini_repo, label, rel, edit, needle):
    cfg = config.load(mini_repo)
    meta = make_meta(cfg)
    p = mini_repo / rel
    p.write_text(edit(p.read_text()))
    found = problems(config.load(mini_repo), meta)
    assert any(needle in f for f in found), found


def test_stale_corpus_rejects_trigger_bundle(mini_repo):
    cfg = config.load(mini_repo)
    meta = make_meta(cfg, kind="trigger")
    p = mini_repo / "evals/trigger_corpus.yaml"
    p.write_text(p.read_text().replace("orders table", "orders"))
    assert any("corpus: stale" in f for f in problems(cfg, meta))


def test_unrelated_skill_edit_keeps_evidence_fresh(mini_repo):
    cfg = config.load(mini_repo)
    meta = make_meta(cfg)  # alpha's evidence
    p = mini_repo / "skills-src/beta/SKILL.md"
    p.write_text(p.read_text() + "edit\n")
    assert problems(cfg, meta) == []


def test_unrouted_observed_input_rejected(mini_repo):
    cfg = config.load(mini_repo)
    meta = make_meta(cfg, observed=[{"path": "README.md", "sha256": "0" * 64}])
    assert any("routes to no digest" in f for f in problems(cfg, meta))


def test_observed_input_routed_to_unrecorded_digest(mini_repo):
    cfg = config.load(mini_repo)
    meta = make_meta(cfg, observed=[{"path": "skills-src/beta/SKILL.md", "sha256": "0" * 64}])
    assert any("none of which the bundle recorded" in f for f in problems(cfg, meta))


def test_missing_required_digest(mini_repo):
    cfg = config.load(mini_repo)
    meta = make_meta(cfg)
    del meta["digests"]["surface"]
    assert "meta.json records no surface digest" in problems(cfg, meta)


def test_removed_scenario(mini_repo):
    cfg = config.load(mini_repo)
    meta = make_meta(cfg)
    meta["digests"]["scenario:gone"] = "0" * 64
    assert any("scenario:gone: no such entry" in f for f in problems(cfg, meta))


def test_mapping_round_trip(mini_repo):
    cfg = config.load(mini_repo)
    cur = freshness.current(cfg)
    assert freshness.check_mapping(cur) == []
    cur.entries["corpus"] = cur.entries["corpus"].__class__("corpus", "0" * 64, (), {"x": "0" * 64})
    assert freshness.check_mapping(cur) == ["corpus: maps to no skill"]


def test_cli_reports_stale_bundle_and_skill(mini_repo, capsys):
    cfg = config.load(mini_repo)
    write_bundle(mini_repo, make_meta(cfg))
    assert main(["freshness", "--root", str(mini_repo)]) == 0
    capsys.readouterr()
    p = mini_repo / "skills-src/alpha/SKILL.md"
    p.write_text(p.read_text() + "edit\n")
    assert main(["freshness", "--root", str(mini_repo)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("  fix: re-record the evidence of alpha: `make eval-risk`")  # the fix first
    assert "  alpha: 1 bundle stale (moved: skill:alpha)" in out
    assert main(["freshness", "--root", str(mini_repo), "--verbose"]) == 1
    assert "skill:alpha: stale" in capsys.readouterr().out


def test_cli_unreadable_meta(mini_repo, capsys):
    cfg = config.load(mini_repo)
    b = write_bundle(mini_repo, make_meta(cfg))
    (b / "meta.json").write_text('{"kind": "behavioral", "kind": "trigger"}')
    assert main(["freshness", "--root", str(mini_repo)]) == 1
    assert "duplicate JSON key" in capsys.readouterr().out
