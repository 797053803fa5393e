"""Judging belongs to the staged flow (issue 28 item 1): a session is judged before its stage is sealed.

On release_helpers' mini host: unjudged runs recorded into a session's raw/ stage as incomplete;
`release stage --from-session --force --judge-*` judges them (a loopback judge, not scripted) and
re-stages without running anything; the judged bundles still verify as signed (judgments.json is
outside the bundle's seal by design); a judgment written after staging is refused on resume.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from release_helpers import SKILL, commit_evidence, record_run, setup_host, signing_key

from skill_eval import cli
from skill_eval.commands import pr as pr_cmd
from skill_eval.core import seal
from skill_eval.core.errors import CheckFailed
from skill_eval.grading import regrade
from skill_eval.harness.modelserver.common import Provider, Reply, ServerHandle, json_reply
from skill_eval.harness.modelserver.script import parse_script
from skill_eval.reporting.release import flow
from skill_eval.reporting.release import stage as stage_mod

GATES = [{"gate": g, "status": "pass"} for g in ("check_skills", "evidence", "pack")]
NULL_SCRIPT = parse_script(json.dumps({"schema_version": 1, "turns": [{"final": "-"}]}).encode(), "null.json", yaml=False)


class Judge(Provider):
    """A loopback judge endpoint serving a panel: every dimension passes, except that the models in
    `failing` score 0; it counts the requests it answered and keeps the prompts."""

    kind = "openai-responses"

    def __init__(self, failing: tuple[str, ...] = ()) -> None:
        super().__init__(NULL_SCRIPT)
        self.asked = 0
        self.failing = failing
        self.prompts: list[str] = []

    def respond(self, method: str, path: str, body: Any) -> Reply:
        self.asked += 1
        self.prompts.append(body["messages"][0]["content"])
        score = 0 if body["model"] in self.failing else 1
        message = {"role": "assistant", "content": json.dumps({"score": score, "passed": score == 1, "rationale": "ok"})}
        return json_reply({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


@pytest.fixture
def cfg(mini_repo, monkeypatch):
    monkeypatch.setattr(pr_cmd, "credential_free_checks", lambda cfg, skip=(): list(GATES))
    monkeypatch.setenv(seal.KEY_ENV, str(signing_key()[0]))  # the judge signs what it appends (grading/judgments.py)
    return setup_host(mini_repo)


def _session(cfg, out):
    raw = out / "s1" / "raw"
    for case in SKILL:
        for arm in ("skill-agent", "baseline"):
            record_run(cfg, case, arm, 0, judged=False, root=raw, run_id="release-s1")
    return raw


def test_a_session_is_judged_before_its_stage_is_sealed(cfg, tmp_path):
    out = tmp_path / "rel"
    raw = _session(cfg, out)
    root = ["--root", str(cfg.root), "--session", "s1", "--out", str(out)]
    assert cli.main(["release", "stage", *root, "--from-session"]) == 0
    st = stage_mod.decode(out / "s1" / "stage.json")
    assert {c["state"] for c in st["snapshot"]["cases"].values()} == {"incomplete"}
    assert all("not judged" in c["reasons"][0] for c in st["snapshot"]["cases"].values())
    judge = Judge()
    with ServerHandle(judge) as server:
        assert cli.main(["release", "stage", *root, "--from-session", "--force", "--judge-base-url", server.url + "/v1",
                         "--judge-model", "judge-m", "--judge-model", "judge-n"]) == 0
    assert judge.asked == 2 * 2 * 2 * len(SKILL)  # two judges x dimensions 4 and 5 of every run, nothing recorded again
    assert all('"evidence_tiers"' in p for p in judge.prompts)  # each judge is given the recorded report
    st = stage_mod.decode(out / "s1" / "stage.json")
    assert {c["state"] for c in st["snapshot"]["cases"].values()} == {"complete"}
    assert st["snapshot"]["bindings"]["judges"] == ["judge-m + judge-n"]
    bundle = raw / "alpha/skill-agent/release-s1/alpha-break/0"
    assert (bundle / "judgments.json").is_file()
    assert seal.verify(bundle, "alpha/skill-agent/release-s1/alpha-break/0", regrade.signers_of(cfg)).state == "signed"
    ws = yaml.safe_load((out / "s1" / "worksheet.yaml").read_text())
    for row in ws["cases"]:
        row["comparison"], row["review"] = "candidate-only", "reviewed"
    (out / "ws.yaml").write_text(yaml.safe_dump(ws))
    r = flow.resume(cfg, out / "s1" / "stage.json", out / "ws.yaml")
    assert r.record["outcome"] == "pass", r.record["reasons"]  # judged before sealing: the flow completes
    assert r.record["lift"]["skills"]["alpha"]["baseline"]["n_paired"] == 2


def test_a_panel_that_disagrees_leaves_the_release_case_incomplete(cfg, tmp_path, capsys):
    out = tmp_path / "rel"
    _session(cfg, out)
    with ServerHandle(Judge(failing=("judge-n",))) as server:
        rc = cli.main(["release", "stage", "--root", str(cfg.root), "--session", "s1", "--out", str(out), "--from-session",
                       "--judge-base-url", server.url + "/v1", "--judge-model", "judge-m", "--judge-model", "judge-n"])
    text = capsys.readouterr().out
    assert rc == 0 and "agreement dimension 4: cohen kappa" in text and "needs human review" in text
    st = stage_mod.decode(out / "s1" / "stage.json")
    for case in st["snapshot"]["cases"].values():  # the panel split on every item: no case passes
        assert case["state"] == "incomplete"
        assert any("needs human review" in r for r in case["reasons"]), case["reasons"]


def test_a_release_refuses_a_single_judge(cfg, tmp_path, capsys):
    out = tmp_path / "rel"
    _session(cfg, out)
    rc = cli.main(["release", "stage", "--root", str(cfg.root), "--session", "s1", "--out", str(out), "--from-session",
                   "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "judge-m"])
    assert rc == 2 and "panel of at least 2 judge models" in capsys.readouterr().err
    assert not (out / "s1" / "stage.json").exists()


def test_a_judgment_written_after_staging_is_refused_by_name(cfg, tmp_path):
    out = tmp_path / "rel"
    raw = _session(cfg, out)
    assert cli.main(["release", "stage", "--root", str(cfg.root), "--session", "s1", "--out", str(out), "--from-session"]) == 0
    bundle = raw / "beta/baseline/release-s1/beta-same/0"
    (bundle / "judgments.json").write_text(json.dumps({"schema_version": 1, "judgments": []}))
    with pytest.raises(CheckFailed, match="added judgments: raw/beta/baseline/release-s1/beta-same/0/judgments.json"):
        flow.recheck(cfg, out / "s1" / "stage.json")


@pytest.mark.parametrize("flags", [["--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1"], ["--run", "--from-session"]])
def test_judging_needs_a_session_and_run_excludes_from_session(cfg, tmp_path, flags, capsys):
    rc = cli.main(["release", "stage", "--root", str(cfg.root), "--session", "s1", "--out", str(tmp_path), *flags])
    assert rc == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_bad_judge_setting_is_refused_before_anything_is_recorded(cfg, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NO_SUCH_JUDGE_KEY", raising=False)
    rc = cli.main(["release", "stage", "--root", str(cfg.root), "--session", "s1", "--out", str(tmp_path), "--run",
                   "--agent", "scripted", "--model-server", "scripted:evals/none.yaml", "--judge-base-url", "http://127.0.0.1:9/v1",
                   "--judge-model", "m", "--judge-api-key-env", "NO_SUCH_JUDGE_KEY"])
    assert rc == 2 and "NO_SUCH_JUDGE_KEY is not set" in capsys.readouterr().err
    assert not (tmp_path / "s1").exists()


def test_the_panel_can_live_in_the_config_and_flags_replace_it(cfg, tmp_path, capsys):
    out = tmp_path / "rel"
    _session(cfg, out)
    root = ["--root", str(cfg.root), "--session", "s1", "--out", str(out), "--from-session"]
    rc = cli.main(["release", "stage", *root, "--judge"])  # no [judge] table yet: refused before anything is judged
    assert rc == 2 and "[judge] models" in capsys.readouterr().err and not (out / "s1" / "stage.json").exists()
    judge = Judge(failing=("judge-flag",))
    with ServerHandle(judge) as server:
        toml = cfg.root / "skill-eval.toml"
        toml.write_text(toml.read_text() + f'\n[judge]\nmodels = ["judge-m", "judge-n"]\nbase_urls = ["{server.url}/v1"]\n'
                        "kappa_floor = 0.5\n")
        commit_evidence(cfg.root)
        assert cli.main(["release", "stage", *root, "--judge"]) == 0
        assert judge.asked == 2 * 2 * 2 * len(SKILL)
        st = stage_mod.decode(out / "s1" / "stage.json")
        assert {c["state"] for c in st["snapshot"]["cases"].values()} == {"complete"}
        assert st["snapshot"]["bindings"]["judges"] == ["judge-m + judge-n"]
        from skill_eval.commands import judge as judge_cmd
        from skill_eval.content import config

        loaded = config.load(cfg.root)
        flags = judge_cmd.settings(loaded, None, ["judge-flag", "judge-x"], None, None, None)
        assert (flags.models, flags.base_urls, flags.kappa_floor, flags.from_config) == (["judge-flag", "judge-x"], None, 0.5, False)
        assert judge_cmd.settings(loaded, None, None, None, None, 0.9).kappa_floor == 0.9


def test_a_bad_judge_table_is_a_config_error_naming_the_field(cfg, tmp_path, capsys):
    toml = cfg.root / "skill-eval.toml"
    toml.write_text(toml.read_text() + '\n[judge]\nmodels = ["judge-m"]\nbase_urls = ["ftp://nowhere"]\n')
    rc = cli.main(["release", "stage", "--root", str(cfg.root), "--session", "s1", "--out", str(tmp_path), "--from-session", "--judge"])
    err = capsys.readouterr().err
    assert rc == 2 and "base_urls" in err and len(err.strip().splitlines()) == 1
