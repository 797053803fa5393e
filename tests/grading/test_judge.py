"""`skill-eval judge`: blinded, stamped, and silent on failure (no score is ever invented)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from release_helpers import record_run, setup_host, signing_key

from skill_eval import cli
from skill_eval.content.evals import load_rubric, load_scenarios
from skill_eval.core import hashing, seal
from skill_eval.grading import judge as judge_mod
from skill_eval.harness.modelserver import load_script, start_server

DATA = Path(__file__).parents[1] / "data" / "judge"


@pytest.fixture
def bundle(mini_repo, monkeypatch):
    monkeypatch.setenv(seal.KEY_ENV, str(signing_key()[0]))  # the judge signs what it appends (grading/judgments.py)
    cfg = setup_host(mini_repo)
    return cfg, record_run(cfg, "alpha-break", "skill-agent", 0, judged=False)


def test_scripted_judge_writes_stamped_entries(bundle):
    cfg, path = bundle
    rc = cli.main(["judge", str(path), "--root", str(cfg.root), "--model-server", f"scripted:{DATA / 'pass.yaml'}"])
    assert rc == 0
    doc = json.loads((path / "judgments.json").read_text())
    assert [e["dimension"] for e in doc["judgments"]] == [4, 5]
    for e in doc["judgments"]:
        assert e["passed"] is True and e["score"] == 1 and e["judge_model"].startswith("scripted:")
        assert e["rubric_version"] == load_rubric(cfg).version and len(e["prompt_sha256"]) == 64 and len(e["rubric_sha256"]) == 64
        assert e["judged_at"].endswith("Z") and "scripted openai-chat" in e["judge_version"]
    assert cli.main(["grade", str(path), "--root", str(cfg.root), "--stage", "release"]) == 0  # replayed as judged


def test_judge_prompt_is_blinded_and_its_digest_is_stamped(bundle):
    cfg, path = bundle
    rubric = load_rubric(cfg)
    sc = {s.id: s for s in load_scenarios(cfg)}["alpha-break"]
    final = (path / "final.md").read_text()
    script = load_script(DATA / "pass.yaml")
    with start_server("openai-responses", script) as h:
        entry = judge_mod.judge_one(judge_mod.Endpoint(h.url + "/v1", script.model_id), rubric, 4, sc, None, final)
        sent = h.requests[-1].body["messages"][0]["content"]
    assert entry["prompt_sha256"] == hashing.sha256_bytes(sent.encode())
    meta = json.loads((path / "meta.json").read_text())
    for secret in ("skill-agent", meta["model"], meta["agent"]["name"], meta["run_id"], "alpha/skill-agent"):
        assert secret not in sent
    assert sc.prompt in sent and "does it break?" in sent


@pytest.mark.parametrize("script", ["inconsistent.yaml", "prose.yaml"])
def test_malformed_verdict_writes_no_score(bundle, script, capsys):
    cfg, path = bundle
    rc = cli.main(["judge", str(path), "--root", str(cfg.root), "--model-server", f"scripted:{DATA / script}"])
    assert rc == 1 and not (path / "judgments.json").exists()
    assert "no score written" in capsys.readouterr().out


def test_transport_failure_writes_no_score(bundle, capsys):
    cfg, path = bundle
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc = cli.main(["judge", str(path), "--root", str(cfg.root), "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m"])
    assert rc == 1 and not (path / "judgments.json").exists()
    assert "cannot reach the judge endpoint" in capsys.readouterr().out


def test_default_targets_only_unjudged_bundles(bundle, capsys):
    cfg, path = bundle
    other = record_run(cfg, "alpha-break", "skill-agent", 1, judged=True)
    before = (other / "judgments.json").read_bytes()
    assert cli.main(["judge", "--root", str(cfg.root), "--model-server", f"scripted:{DATA / 'pass.yaml'}"]) == 0
    assert (path / "judgments.json").exists() and (other / "judgments.json").read_bytes() == before


def test_scripted_judge_never_completes_a_release_arm(bundle, tmp_path):
    from skill_eval.reporting.release import flow

    cfg, path = bundle
    for case in ("alpha-break", "beta-same"):
        for k in range(cfg.k):
            record_run(cfg, case, "skill-agent", k, judged=False)
    assert cli.main(["judge", "--root", str(cfg.root), "--model-server", f"scripted:{DATA / 'pass.yaml'}"]) == 0
    st = flow.stage(cfg, out_dir=tmp_path, session="j1", source="evidence", released_ref=None,
                    checks=[{"gate": "pack", "status": "pass"}])
    case = st.record["snapshot"]["cases"]["alpha-break"]
    assert case["state"] == "incomplete" and any("scripted judge" in r for r in case["reasons"])
