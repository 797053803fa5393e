"""The release flow end to end on both hosts (issue 28 items 1-3): stage --run (record every required
arm once) -> judge (before the stage is sealed) -> worksheet -> resume -> signed report.

The model is a *stub*: a loopback OpenAI-style endpoint these tests start (not the runner), so the
runner labels its turns `local-endpoint`, not `scripted`, and the copied host counts that source for
the test only (`[evals] release_sources = ["remote", "local-endpoint"]`; the default counts remote
providers only). It answers each scenario from the host's committed model scripts (skill-less for the
baseline arm, whose requests offer no skills), and it judges every run `passed`. Runs are signed by the
tests' evidence key (SKILL_EVAL_SIGNING_KEY); the stage and report by a release key.

Outcomes: `pass` (every arm recorded, judged, lift >= 0), `fail` (the candidate never finishes: a
budget stop is the agent's failure, so its lift over baseline is negative), `incomplete` (the same
passing session re-staged with min_paired_scenarios above the paired count: INDETERMINATE). The
towncrier host sits in a subfolder of its repository, and its released arm is recorded from git.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, allow_test_key, copy_host, git, git_commit_all

from skill_eval import cli
from skill_eval.commands import pr as pr_cmd
from skill_eval.core import seal
from skill_eval.core.errors import CheckFailed
from skill_eval.harness.modelserver.common import Provider, Reply, ServerHandle, json_reply, request_text
from skill_eval.harness.modelserver.openai import OpenAIProvider
from skill_eval.harness.modelserver.script import parse_script
from skill_eval.reporting.release import cells, flow, report, sign
from skill_eval.reporting.release import stage as stage_mod

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="a release counts only sandboxed (bwrap) runs")

GATES = [{"gate": g, "status": "pass"} for g in ("check_skills", "evidence", "pack")]
VERDICT = {"score": 1, "passed": True, "rationale": "stub judge: the answer addresses the request"}
HOSTS = {
    # host label -> (path of the host inside its repository, kept scenarios, skill-agent scripts dir, baseline scripts dir)
    "dogfood": ("", ("review-removed-export", "review-changed-signature"), "careful", "baseline"),
    "towncrier": ("examples/towncrier-notes", ("fragment-feature", "fragment-custom-type", "notes-release", "notes-release-local"), "careful", None),
}


class StubModel(Provider):
    """Chat Completions for the built-in agent loop and the judge; one conversation per (scenario, arm kind)."""

    kind = "openai-responses"

    def __init__(self, evals: Path, keep: tuple[str, ...], skilled_dir: str, baseline_dir: str | None, max_turns: int,
                 candidate: str = "good"):
        scenarios = {s["id"]: s for s in yaml.safe_load((evals / "scenarios.yaml").read_text())["scenarios"]}
        self.routes: dict[tuple[str, bool], OpenAIProvider] = {}
        self.prompts = {sid: " ".join(scenarios[sid]["prompt"].split())[:80] for sid in keep}
        for sid in keep:
            good = yaml.safe_load((evals / "model-scripts" / skilled_dir / f"{sid}.yaml").read_text())
            if baseline_dir:
                plain = yaml.safe_load((evals / "model-scripts" / baseline_dir / f"{sid}.yaml").read_text())
            else:  # the careful script without its skill activation: what a plain agent does
                plain = dict(good, turns=[t2 for t in good["turns"] if (t2 := _without_skill(t))])
            if candidate == "loop":  # never answers: the agent loop stops at max_turns (a budget stop)
                good = {"schema_version": 1, "description": "loops", "turns": [{"tools": [{"shell": "true"}]}] * (max_turns + 3)
                        + [{"final": "never reached"}]}
            self.routes[(sid, True)] = OpenAIProvider(parse_script(json.dumps(good).encode(), f"{sid}.json", yaml=False))
            self.routes[(sid, False)] = OpenAIProvider(parse_script(json.dumps(plain).encode(), f"{sid}-plain.json", yaml=False))
        super().__init__(next(iter(self.routes.values())).script)

    def respond(self, method: str, path: str, body: Any) -> Reply:
        text = request_text(body) if body is not None else ""
        if "submit_judgment" in json.dumps(body):
            message = {"role": "assistant", "content": json.dumps(VERDICT)}
            return json_reply({"id": "judge", "object": "chat.completion", "model": "stub-judge",
                               "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
        flat = " ".join(text.split())
        found = [sid for sid, p in self.prompts.items() if p in flat]
        if not found:
            return next(iter(self.routes.values())).respond(method, path, body)  # preflight / model list
        return self.routes[(found[0], "<available_skills>" in text)].respond(method, path, body)


def _without_skill(turn: dict[str, Any]) -> dict[str, Any] | None:
    if "tools" not in turn:
        return turn
    tools = [t for t in turn["tools"] if "skill" not in t]
    return dict(turn, tools=tools) if tools else None


def _host(tmp_path: Path, label: str, test_signing_key: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the host, committed in a fresh repository (the host at its `where`), tagged v0 as the release."""
    where, keep, _, _ = HOSTS[label]
    repo = tmp_path / "repo"
    repo.mkdir()
    if label == "dogfood":
        copy_host(repo)
    else:
        shutil.copytree(REPO / where, repo / where, symlinks=True, ignore=shutil.ignore_patterns(".cache", "evidence"))
        (repo / "README.md").write_text("a repository whose skill host sits in a subfolder\n")
        # the example host has no rubric.yaml, so nothing defines dimensions 4/5 and its runs stay unjudged
        # (incomplete): this copy takes this repository's rubric so the judged half of the flow runs there too
        shutil.copy2(REPO / "agent-evals/skills/rubric.yaml", repo / where / "agent-evals/skills/rubric.yaml")
    host = repo / where if where else repo
    allow_test_key(host, test_signing_key[1])
    scen = host / "agent-evals/skills/scenarios.yaml"
    doc = yaml.safe_load(scen.read_text())
    for s in doc["scenarios"]:
        if s["id"] not in keep:
            s["status"] = "draft"
    scen.write_text(yaml.safe_dump(doc, sort_keys=False))
    toml = host / "skill-eval.toml"
    text = re.sub(r"(?m)^\[evals\]\n", '[evals]\nrelease_sources = ["remote", "local-endpoint"]\n', toml.read_text(), count=1)
    text = re.sub(r"(?m)^\[stats\]\n(.*\n)*?(?=\[|\Z)", "", text)  # this host's own [stats], if any, replaced below
    # the release's cell (reporting/release/cells.py): the agent and model this test's session records
    toml.write_text(text + "\n[stats]\nmin_paired_scenarios = 2\n" + CELL_TOML)
    git(repo, "init", "-q")
    git_commit_all(repo, "host")
    git(repo, "tag", "v0")
    monkeypatch.setenv("SKILL_EVAL_SIGNING_KEY", str(test_signing_key[0]))
    monkeypatch.setenv("SKILL_EVAL_OPENAI_API_KEY", "stub-key")  # the loopback stub accepts any key
    monkeypatch.setattr(pr_cmd, "credential_free_checks", lambda cfg, skip=(): list(GATES))
    return host


CELL = "openai-compatible/stub-model-1"
CELL_TOML = f'\n[[evals.matrix]]\nagent = "openai-compatible"\nmodel = "stub-model-1"\nprofiles = ["release"]\n' \
            f'\n[release]\ncells = ["{CELL}"]\n'


def _release_key(tmp_path: Path) -> tuple[Path, Path]:
    key = tmp_path / "release_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rm", "-f", str(key)], check=True)
    allowed = tmp_path / "release_signers"
    allowed.write_text(f'rm@example.invalid namespaces="skill-eval" {key.with_suffix(".pub").read_text()}')
    return key, allowed


def _stage(host: Path, out: Path, session: str, url: str, key: Path, *extra: str) -> int:
    return cli.main(["release", "stage", "--root", str(host), "--session", session, "--out", str(out), "--released", "v0",
                     "--run", "--agent", "openai-compatible", "--base-url", url + "/v1", "--model", "stub-model-1", "-j", "2",
                     "--judge-base-url", url + "/v1", "--judge-model", "stub-judge-1", "--judge-model", "stub-judge-2", "--sign", str(key), *extra])


def _fill(stage_dir: Path) -> Path:
    ws = yaml.safe_load((stage_dir / "worksheet.yaml").read_text())
    ws["reviewer"] = "Release Maintainer"
    for row in ws["cases"]:
        row["comparison"] = "same" if row["evidence"] == "complete" else "inconclusive"
        row["review"] = "Read final.md and calls.jsonl of both arms: same steps, same answer."
    path = stage_dir / "filled.yaml"
    path.write_text(yaml.safe_dump(ws, sort_keys=False))
    return path


def _resume(host: Path, stage_dir: Path, key: Path, allowed: Path) -> tuple[int, dict[str, Any]]:
    rc = cli.main(["release", "resume", str(stage_dir / "stage.json"), "--worksheet", str(_fill(stage_dir)), "--root", str(host),
                   "--sign", str(key), "--allowed-signers", str(allowed)])
    rec = report.decode(stage_dir / "report.json")
    assert sign.verify(stage_dir / "report.json", allowed) == "rm@example.invalid"
    return rc, rec


@pytest.mark.parametrize("label", sorted(HOSTS))
def test_release_completes_pass_then_incomplete_when_indeterminate(label, tmp_path, test_signing_key, monkeypatch):
    host = _host(tmp_path, label, test_signing_key, monkeypatch)
    key, allowed = _release_key(tmp_path)
    _, keep, skilled, plain = HOSTS[label]
    from skill_eval.content import config

    cfg = config.load(host)
    out = tmp_path / "rel"
    with ServerHandle(StubModel(cfg.evals_dir, keep, skilled, plain, cfg.agent.max_turns)) as server:
        assert _stage(host, out, "e1", server.url, key) == 0
    stage_dir = out / "e1"
    judged = (cfg.evals_dir / "rubric.yaml").is_file()
    rec = stage_mod.decode(stage_dir / "stage.json")
    cases = rec["snapshot"]["cases"]
    assert sorted(cases) == sorted(cells.scoped(k, CELL) for k in keep)
    for c in cases.values():  # every required arm recorded once, the released one from git (subfolder host too)
        assert c["state"] == "complete", c["reasons"]
        assert c["baseline_required"] and {a["arm"] for a in c["arms"].values()} == {"skill-agent", "baseline", "released:v0"}
        for arm in c["arms"].values():
            (run,) = arm["runs"]
            if judged:  # a host with a rubric judges 4/5 before staging; the towncrier host has none
                assert run["judgments_sha256"] and run["judges"] == ["stub-judge-1 + stub-judge-2"], run
            assert not run["scripted"] and run["seal"]["state"] == "signed"
            bundle = stage_dir / "raw" / run["bundle"]
            verdict = seal.verify(bundle, run["bundle"], seal.load_allowed_signers(host / "agent-evals/skills/allowed_signers"))
            assert verdict.state == "signed"  # judgments.json beside the seal does not break it (outside it by design)
    lift = rec["snapshot"]["lift"]["skills"]
    assert {r["gate"] for controls in lift.values() for r in controls.values()} == {"pass"}
    rc, rep = _resume(host, stage_dir, key, allowed)
    assert (rc, rep["outcome"]) == (0, "pass"), rep["reasons"]
    skill = cells.scoped(cases[cells.scoped(keep[0], CELL)]["skill"], CELL)
    assert rep["lift"]["skills"][skill]["baseline"]["n_paired"] == 2 and rep["lift"]["skills"][skill]["baseline"]["ci"] is not None
    report_md = (stage_dir / "report.md").read_text()
    assert "## Lift gate" in report_md
    # the seed's six gate names, each with its status from this stage's steps (issue 28 item 7)
    for seed_gate in ("command", "cross-platform", "lifecycle", "machine-api", "parity", "security"):
        assert re.search(rf"\| `{seed_gate}` \|.*\| (pass|not_applicable) \(", report_md), seed_gate

    # a judgment changed (or added) after staging is refused by name: the stage froze the judgments layer
    bundle = stage_dir / "raw" / cases[cells.scoped(keep[0], CELL)]["arms"]["candidate"]["runs"][0]["bundle"]
    path = bundle / "judgments.json"
    saved = path.read_bytes() if judged else None
    path.write_bytes(saved.replace(b'"stub-judge-1"', b'"other-judge"') if saved else b'{"schema_version": 1, "judgments": []}')
    with pytest.raises(CheckFailed, match=f"(changed|added) judgments: raw/{re.escape(str(bundle.relative_to(stage_dir / 'raw')))}"):
        flow.recheck(cfg, stage_dir / "stage.json")
    path.write_bytes(saved) if saved else path.unlink()

    # the same session, re-staged (no run) where 2 paired scenarios are too few: INDETERMINATE is incomplete
    toml = host / "skill-eval.toml"
    toml.write_text(toml.read_text().replace("min_paired_scenarios = 2", "min_paired_scenarios = 3"))
    git_commit_all(host, "three paired scenarios")  # release stage takes a clean candidate
    assert cli.main(["release", "stage", "--root", str(host), "--session", "e1", "--out", str(out), "--released", "v0",
                     "--from-session", "--force", "--sign", str(key)]) == 0
    rc, rep = _resume(host, stage_dir, key, allowed)
    assert (rc, rep["outcome"]) == (1, "incomplete")
    assert any("INDETERMINATE" in r and "never a pass" in r for r in rep["reasons"]), rep["reasons"]


@pytest.mark.parametrize("label", sorted(HOSTS))
def test_release_fails_when_the_candidate_lift_is_negative(label, tmp_path, test_signing_key, monkeypatch):
    host = _host(tmp_path, label, test_signing_key, monkeypatch)
    key, allowed = _release_key(tmp_path)
    _, keep, skilled, plain = HOSTS[label]
    from skill_eval.content import config

    cfg = config.load(host)
    out = tmp_path / "rel"
    with ServerHandle(StubModel(cfg.evals_dir, keep, skilled, plain, cfg.agent.max_turns, candidate="loop")) as server:
        assert _stage(host, out, "f1", server.url, key) == 0
    rec = stage_mod.decode(out / "f1" / "stage.json")
    skill = rec["snapshot"]["cases"][cells.scoped(keep[0], CELL)]["skill"]
    gate = rec["snapshot"]["lift"]["skills"][cells.scoped(skill, CELL)]["baseline"]
    assert gate["gate"] == "fail" and gate["effect"] < 0, gate
    rc, rep = _resume(host, out / "f1", key, allowed)
    assert (rc, rep["outcome"]) == (1, "fail")
    assert any(r.startswith(f"lift of skill-agent over baseline for skill {skill} in cell {CELL}") for r in rep["reasons"]), rep["reasons"]
