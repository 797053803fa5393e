"""`import harbor`: a Harbor job directory, written by harbor's own models, read back as labelled bundles.

The trials' verifier/ outputs come from running the exported tasks' real verifiers; the job's and
trials' config.json / result.json are written by harbor 0.26.0's pydantic models in the harbor venv
(tests/interop/harbor_side.py), so the shape read is the real one.
"""

import json
import subprocess
from pathlib import Path

from test_harbor import HARBOR_PY, SIDE, _mini_host, container, export, needs_harbor, verify

from skill_eval.cli import main
from skill_eval.interop import harbor


def _job(tmp_path: Path, host: Path, capsys) -> Path:
    """A Harbor job over two exported tasks, its trial and job files written by harbor's own models;
    each trial's verifier/ outputs come from running the task's real verifier."""
    export(host, tmp_path / "tasks", capsys)
    job = tmp_path / "jobs" / "2026-12-01__12-00-00"
    trials = []
    for i, (name, claim) in enumerate([("alpha-break", {"confident": True, "evidence": [1]}), ("alpha-fix", None),
                                       ("alpha-break", {"verdict": "OK", "confident": True, "evidence": []})]):
        task, app = tmp_path / "tasks" / name, tmp_path / f"app{i}"
        container(task, app)
        if claim is not None:
            truth = json.loads((task / "tests/spec.json").read_text())["claim"]["verdict"]
            (app / harbor.CLAIM_FILE).write_text(json.dumps({"verdict": truth, **claim}))
        trial = f"{name}__t{i}"
        verify(task, app, job / trial / "verifier")
        trials.append({"task": str(task), "trial": trial, "agent": "claude-code", "model": "anthropic/claude-sonnet-4"})
    trials.append({"task": str(tmp_path / "tasks" / "beta-unsure"), "trial": "beta-unsure__t3", "agent": "claude-code",
                   "model": "anthropic/claude-sonnet-4", "exception": "AgentTimeoutError"})
    r = subprocess.run([str(HARBOR_PY), str(SIDE), "job", str(job), json.dumps({"trials": trials})],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return job


@needs_harbor
def test_import_harbor_job_writes_labelled_bundles(mini_repo, tmp_path, capsys):
    host = _mini_host(mini_repo)
    job = _job(tmp_path, host, capsys)
    assert main(["import", "harbor", str(job), "--root", str(host), "--dry-run"]) == 0
    assert "would write 4 bundle(s) from 4 trial(s)" in capsys.readouterr().out
    assert not (host / "evals/evidence").exists()
    assert main(["import", "harbor", str(job), "--root", str(host), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["run_id"] == "harbor-2026-12-01__12-00-00" and report["skipped"] == {}
    rewards = {b["trial"]: b["reward"] for b in report["bundles"]}
    assert rewards == {"alpha-break__t0": 1.0, "alpha-fix__t1": 1.0, "alpha-break__t2": 0.0, "beta-unsure__t3": None}
    ev = host / "evals/evidence"
    good = ev / "alpha/skill-agent/harbor-2026-12-01__12-00-00/alpha-break/0"
    meta = json.loads((good / "meta.json").read_text())
    assert meta["extra"]["origin"] == "harbor" and meta["extra"]["signed"] is False
    assert (meta["adapter_tier"], meta["isolation"], meta["scripted"], meta["status"]) == ("manual", "none", False, "complete")
    assert meta["model"] == "anthropic/claude-sonnet-4" and meta["digests"]  # the exported task's scenario digest
    verdict = json.loads((good / "harbor.json").read_text())
    assert verdict["reward"] == 1.0 and verdict["dimensions"]["claim"].startswith("pass")
    for dim in ("1", "3", "4", "5", "6"):
        assert verdict["dimensions"][dim].startswith("not graded")
    assert json.loads((good / "claim.json").read_text())["status"] == "ok"
    assert (good / "calls.jsonl").read_bytes() == b"" and (good / "harbor/result.json").is_file()
    wrong = json.loads((ev / "alpha/skill-agent/harbor-2026-12-01__12-00-00/alpha-break/1/harbor.json").read_text())
    assert wrong["reward"] == 0.0 and wrong["checks"]["verdict-matches-truth"]["passed"] is False
    fix = json.loads((ev / "alpha/skill-agent/harbor-2026-12-01__12-00-00/alpha-fix/0/harbor.json").read_text())
    assert fix["dimensions"]["oracle"].startswith("pass") and set(fix["checks"]) == {"has-new", "says-new", "only-widgets"}
    timeout = json.loads((ev / "beta/skill-agent/harbor-2026-12-01__12-00-00/beta-unsure/0/meta.json").read_text())
    assert (timeout["status"], timeout["outcome"]) == ("incomplete", "budget_stop")
    assert not [p for p in ev.rglob("*") if ".import-" in p.name]  # no temporary folder left behind

    # grading keeps the verifier's verdict and marks what nothing recorded as "not graded", never a pass
    capsys.readouterr()
    assert main(["grade", str(good), "--root", str(host), "--json"]) == 0
    g = json.loads(capsys.readouterr().out)
    assert g["checks"]["oracle"]["status"] == "pass"
    for dim in ("1", "3", "6"):
        assert g["dimensions"][dim]["status"] == "not_applicable" and g["dimensions"][dim]["note"].startswith("not graded")
    assert main(["grade", str(ev / "alpha/skill-agent/harbor-2026-12-01__12-00-00/alpha-break/1"), "--root", str(host),
                 "--json"]) == 1
    g = json.loads(capsys.readouterr().out)
    assert g["checks"]["oracle"]["status"] == "fail" and "verdict-matches-truth" in g["checks"]["oracle"]["reasons"][0]
    assert main(["grade", str(ev / "alpha/skill-agent/harbor-2026-12-01__12-00-00/alpha-fix/0"), "--root", str(host)]) == 0
    capsys.readouterr()
    # importing again needs --force; with it the bundles are replaced whole
    assert main(["import", "harbor", str(job), "--root", str(host)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["import", "harbor", str(job), "--root", str(host), "--force"]) == 0
    # a verifier output that grades another scenario than the trial's task is refused, not filed
    oracle = job / "alpha-fix__t1" / "verifier" / "oracle.json"
    oracle.write_text(oracle.read_text().replace('"scenario": "alpha-fix"', '"scenario": "alpha-break"'))
    capsys.readouterr()
    assert main(["import", "harbor", str(job), "--root", str(host), "--force"]) == 2
    assert "grades scenario 'alpha-break'" in capsys.readouterr().err


def test_import_harbor_refuses_what_is_not_a_job(mini_repo, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["import", "harbor", str(tmp_path / "empty"), "--root", str(mini_repo)]) == 2
    assert "holds no trial folder with result.json" in capsys.readouterr().err
    bad = tmp_path / "job" / "t1"
    bad.mkdir(parents=True)
    (bad / "result.json").write_text('{"task_name": "skill-eval/alpha-break", "task_name": "x"}')
    assert main(["import", "harbor", str(tmp_path / "job"), "--root", str(mini_repo)]) == 2
    assert "duplicate" in capsys.readouterr().err
    (bad / "result.json").write_text('{"task_name": "skill-eval/alpha-break", "trial_name": "t1", "agent_info": []}')
    assert main(["import", "harbor", str(tmp_path / "job"), "--root", str(mini_repo)]) == 2
    assert "agent_info" in capsys.readouterr().err
