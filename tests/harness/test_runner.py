"""The runner end to end with the model-free scripted adapter, the real abicheck and the shim."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.content import config
from skill_eval.harness.runner import plan

REPO = Path(__file__).resolve().parents[2]
SCRIPT = "agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml"
EVIDENCE = "agent-evals/skills/evidence/abi-compat-review/skill-agent"


def run(root, *args):
    return main(["run", "--root", str(root), "review-removed-export", "--agent", "scripted",
                 "--model-server", f"scripted:{SCRIPT}", "--no-trigger", *args])


def bundles(root, run_id):
    return sorted((root / EVIDENCE / run_id / "review-removed-export").glob("*/meta.json"))


def test_records_and_grades_clean(repo_copy, capsys):
    assert run(repo_copy, "-k", "2", "--run-id", "t1") == 0
    metas = bundles(repo_copy, "t1")
    assert len(metas) == 2
    meta = json.loads(metas[0].read_text())
    assert meta["status"] == "complete" and meta["scripted"] is True and meta["model"].startswith("scripted:")
    assert {"harness", "surface", "skill:abi-compat-review", "scenario:review-removed-export"} <= set(meta["digests"])
    assert any(o["path"].startswith("agent-evals/skills/fixtures/removed-export/") for o in meta["observed_inputs"])
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), "--json", str(metas[0].parent)]) == 0
    assert main(["freshness", "--root", str(repo_copy), *map(str, (m.parent for m in metas))]) == 0


def test_resume_skips_finished_bundles(repo_copy, capsys):
    assert run(repo_copy, "-k", "1", "--run-id", "t2") == 0
    first = bundles(repo_copy, "t2")[0].read_bytes()
    capsys.readouterr()
    assert run(repo_copy, "-k", "2", "--run-id", "t2", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counts"] == {"complete": 1}  # only k=1 was new
    assert bundles(repo_copy, "t2")[0].read_bytes() == first


def test_timeout_is_sealed_incomplete(repo_copy, capsys):
    assert run(repo_copy, "-k", "1", "--run-id", "t3", "--timeout", "0.05") == 1
    meta = json.loads(bundles(repo_copy, "t3")[0].read_text())
    assert meta["status"] == "incomplete" and meta["status_reason"].startswith("timeout")
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), str(bundles(repo_copy, "t3")[0].parent)]) == 1


def test_a_leaked_credential_is_redacted_and_the_run_held_back(repo_copy, monkeypatch, capsys):
    secret = "sk-test-supersecret-0123456789"
    script = repo_copy / "agent-evals/skills/model-scripts/leak.yaml"
    script.write_text(
        "schema_version: 1\ndescription: leaks a token\nturns:\n"
        f"  - tools:\n      - shell: echo {secret}\n"
        "  - final: |\n      done\n\n      ```skill-eval-claim\n      {\"verdict\": null, \"confident\": false, "
        "\"uncertainty\": {\"kind\": \"not_comparable\", \"unresolved\": [\"x\"]}, \"evidence\": []}\n      ```\n")
    monkeypatch.setenv("SKILL_EVAL_TEST_API_KEY", secret)
    rc = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted",
               "--model-server", "scripted:agent-evals/skills/model-scripts/leak.yaml", "--no-trigger", "-k", "1", "--run-id", "t4"])
    out = capsys.readouterr().out
    assert rc == 1 and bundles(repo_copy, "t4") == [] and "held back" in out and "SKILL_EVAL_TEST_API_KEY" in out
    assert secret not in out
    bundle = repo_copy / "agent-evals/skills/evidence/.held" / EVIDENCE.split("evidence/")[1] / "t4/review-removed-export/0"
    for f in bundle.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f
    assert b"SKILL_EVAL_TEST_API_KEY" in (bundle / "raw/stream.jsonl").read_bytes()  # the redaction marker names the variable


def test_missing_agent_binary_is_a_clear_usage_error(repo_copy, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    rc = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "codex", "--no-trigger", "-k", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "codex" in err and "npm install" in err


def test_missing_credential_is_a_clear_usage_error(repo_copy, capsys, monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    rc = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "claude-code",
               "--agent-binary", "/bin/true", "--no-trigger", "-k", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "ANTHROPIC_API_KEY" in err and "scripted" in err


def test_kill_mid_run_then_resume_completes_without_partials(repo_copy):
    """SIGKILL the runner while it works; the rerun completes the suite and no temp bundle remains."""
    cmd = [sys.executable, str(REPO / "scripts/run_skill_eval.py"), "--root", str(repo_copy), "review-removed-export",
           "--agent", "scripted", "--model-server", f"scripted:{SCRIPT}", "--no-trigger", "-k", "4", "--run-id", "kill", "-j", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not bundles(repo_copy, "kill"):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(bundles(repo_copy, "kill"))
    assert 1 <= done_before < 4
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    metas = bundles(repo_copy, "kill")
    assert len(metas) == 4 and all(json.loads(m.read_text())["status"] == "complete" for m in metas)
    leftovers = [p for p in (repo_copy / "agent-evals/skills/evidence").rglob("*") if p.name.startswith(".tmp-")]
    assert leftovers == []


def test_plan_paths_and_run_ids(repo_copy):
    cfg = config.load(repo_copy)
    items = plan.build(cfg, ids=["review-removed-export", "neg-java"], run_id="r", k=2)
    assert [i.label for i in items] == [
        "abi-compat-review/skill-agent/review-removed-export/k0", "abi-compat-review/skill-agent/review-removed-export/k1",
        "trigger/skill-agent/neg-java/k0", "trigger/skill-agent/neg-java/k1"]
    assert plan.bundle_path(cfg, items[2]).parts[-5:] == ("trigger", "skill-agent", "r", "neg-java", "0")
    assert plan.default_run_id("claude-code", "scripted:abc") == "claude-code-scripted"
    with pytest.raises(Exception, match="unknown arm"):
        plan.build(cfg, run_id="r", arm="nonsense")


def test_released_arm_installs_the_skill_bytes_of_a_ref(repo_copy, capsys):
    from conftest import git_commit_all

    skill = repo_copy / "skills-src/abi-compat-review/SKILL.md"
    skill.write_text(skill.read_text() + "\nA newer candidate line.\n")
    assert main(["generate", "--root", str(repo_copy)]) == 0
    git_commit_all(repo_copy, "candidate")
    assert main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--model-server",
                 f"scripted:{SCRIPT}", "--no-trigger", "-k", "1", "--run-id", "rel", "--arm", "released:HEAD~1"]) == 0
    b = repo_copy / "agent-evals/skills/evidence/abi-compat-review/released-HEAD~1/rel/review-removed-export/0"
    meta = json.loads((b / "meta.json").read_text())
    assert meta["arm"] == "released:HEAD~1" and meta["extra"]["released_skill_digest"]
    assert "skill:abi-compat-review" not in meta["digests"]
    assert "A newer candidate line." not in (b / "events.jsonl").read_text()


def test_stale_bundle_is_replaced_incomplete_kept(repo_copy, capsys):
    assert run(repo_copy, "-k", "1", "--run-id", "t5") == 0
    assert run(repo_copy, "-k", "1", "--run-id", "t5b", "--timeout", "0.05") == 1  # sealed incomplete
    capsys.readouterr()
    # an unrelated rerun keeps both; the incomplete one is only retried on request
    assert run(repo_copy, "-k", "1", "--run-id", "t5b", "--json") == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {}
    assert run(repo_copy, "-k", "1", "--run-id", "t5b", "--json", "--retry-incomplete") == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"complete": 1}
    # a fixture edit makes the t5 bundle stale: the rerun replaces it
    lib = repo_copy / "agent-evals/skills/fixtures/removed-export/README.txt"
    lib.write_text("a new fixture file\n")
    before = bundles(repo_copy, "t5")[0].read_text()
    assert run(repo_copy, "-k", "1", "--run-id", "t5", "--json") == 0
    assert json.loads(capsys.readouterr().out)["counts"] == {"complete": 1}
    after = bundles(repo_copy, "t5")[0].read_text()
    assert before != after and main(["freshness", "--root", str(repo_copy), str(bundles(repo_copy, "t5")[0].parent)]) == 0


def test_actions_run_after_the_agent_and_oracles_grade_them(repo_copy, capsys):
    """A scenario's action vectors run in the sandbox after the agent; facts.json feeds the oracles."""
    sc = repo_copy / "agent-evals/skills/scenarios.yaml"
    text = sc.read_text()
    anchor = "  - id: review-removed-export\n"
    assert anchor in text
    head, rest = text.split(anchor, 1)
    extra = ("    actions:\n      - [test, -f, report.json]\n"
             "    oracle:\n"
             "      report-kept: {predicate: command-exit-zero, action: 0}\n"
             "      report-says-breaking: {predicate: file-contains, action: 0, path: report.json, text: '\"verdict\": \"BREAKING\"'}\n")
    sc.write_text(head + anchor + extra + rest)
    toml = repo_copy / "skill-eval.toml"  # `test` runs as an action only when configured (the registry's allow-list: git and the subject, plus [evals] action_commands)
    toml.write_text(toml.read_text().replace("\n[evals]\n", '\n[evals]\naction_commands = ["test"]\n', 1))
    assert main(["pack", "--root", str(repo_copy)]) == 0
    assert run(repo_copy, "-k", "1", "--run-id", "t6") == 0
    b = bundles(repo_copy, "t6")[0].parent
    facts = json.loads((b / "facts.json").read_text())
    assert facts["actions"][0]["argv"] == ["test", "-f", "report.json"] and facts["actions"][0]["exit_code"] == 0
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), "--json", str(b)]) == 0


def test_trigger_run_stops_once_activation_is_observed(repo_copy, capsys):
    script = repo_copy / "agent-evals/skills/model-scripts/slow-trigger.yaml"
    script.write_text("schema_version: 1\ndescription: activates, then would keep working\nturns:\n"
                      "  - tools:\n      - skill: abi-compat-review\n"
                      "  - tools:\n      - shell: sleep 20\n"
                      "  - final: done\n")
    t = time.monotonic()
    assert main(["run", "--root", str(repo_copy), "review-struct-member", "--agent", "scripted", "--model-server",
                 "scripted:agent-evals/skills/model-scripts/slow-trigger.yaml", "-k", "1", "--run-id", "t7"]) == 0
    assert time.monotonic() - t < 15
    b = repo_copy / "agent-evals/skills/evidence/trigger/skill-agent/t7/review-struct-member/0"
    meta = json.loads((b / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["extra"]["stopped_on_activation"] is True
    assert json.loads((b / "usage.json").read_text())["stop_reason"] == "activation_observed"
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), str(b)]) == 0


def test_discard_partials_spares_a_live_writer(repo_copy):
    """Leftovers of dead runs go; a concurrent run's in-progress bundle (live pid) stays."""
    parent = repo_copy / EVIDENCE / "x" / "review-removed-export"
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid whose process has exited
    dead = parent / f".tmp-0.{gone.pid}.abc"
    live = parent / f".tmp-1.{os.getpid()}.def"
    for d in (dead, live):
        d.mkdir(parents=True)
        (d / "meta.json").write_text("{}")
    removed = plan.discard_partials(config.load(repo_copy))
    assert removed == [dead] and not dead.exists() and live.is_dir()
