"""A release over the evidence matrix (cells.py) and a clean candidate (candidate.py), issue 35 items 1 and 2.

A case is one scenario in one [[evals.matrix]] cell, keyed like the evidence gate's duplicate check
(grading/evidence.run_key); the cells a release needs are configuration. `release stage` refuses a
candidate that is not a clean tested HEAD unless a waiver names a reason, which the report shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import git, git_commit_all, write
from release_helpers import SKILL, commit_evidence, record_run, setup_host

from skill_eval import cli
from skill_eval.commands import pr as pr_cmd
from skill_eval.content import config
from skill_eval.core.errors import CheckFailed, ConfigError, InputError
from skill_eval.grading import evidence
from skill_eval.reporting.release import candidate, cells, flow
from skill_eval.reporting.release import stage as stage_mod

GATES = [{"gate": g, "status": "pass"} for g in ("check_skills", "evidence", "pack")]
CASES = tuple(SKILL)
CELLS = ("claude-code/real-model-1", "codex/real-model-1")
MATRIX = "".join(f'\n[[evals.matrix]]\nagent = "{a}"\nmodel = "real-model-1"\n' for a in ("claude-code", "codex"))


@pytest.fixture
def cfg(mini_repo):
    return setup_host(mini_repo)


def with_config(cfg, text: str) -> config.Config:
    toml = cfg.root / "skill-eval.toml"
    toml.write_text(toml.read_text() + text)
    git_commit_all(cfg.root, "config")
    return config.load(cfg.root)


def record_cells(cfg, agents=("claude-code", "codex"), **kw):
    for agent in agents:
        for case in CASES:
            for k in range(cfg.k):
                for arm in ("skill-agent", "baseline"):
                    record_run(cfg, case, arm, k, agent=agent, run_id=f"{agent}-run", **kw)


def stage(cfg, tmp_path, **kw):
    commit_evidence(cfg.root)
    return flow.stage(cfg, out_dir=tmp_path / "out", session="s1", source="evidence", released_ref=None, checks=GATES,
                      force=True, **kw)


def fill(st, answer="candidate-only") -> Path:
    ws = yaml.safe_load(st.worksheet_path.read_text())
    for row in ws["cases"]:
        row["comparison"] = answer if row["evidence"] == "complete" else "inconclusive"
        row["review"] = "reviewed"
    out = st.worksheet_path.with_name("filled.yaml")
    out.write_text(yaml.safe_dump(ws, sort_keys=False))
    return out


# ----------------------------------------------------------------------------- cells
def test_two_cells_are_two_cases_each_and_not_duplicates(cfg, tmp_path):
    cfg = with_config(cfg, MATRIX)
    record_cells(cfg)
    st = stage(cfg, tmp_path)
    cases = st.record["snapshot"]["cases"]
    assert sorted(cases) == sorted(cells.scoped(c, cell) for c in CASES for cell in CELLS)
    assert {c["state"] for c in cases.values()} == {"complete"}  # no "recorded more than once" across cells
    assert {(c["scenario"], c["cell"]) for c in cases.values()} == {(c, cell) for c in CASES for cell in CELLS}
    bound = st.record["snapshot"]["bindings"]["cells"]
    assert bound == {"required": list(CELLS), "configured_by": "[[evals.matrix]]", "other": []}
    assert sorted(st.record["snapshot"]["lift"]["skills"]) == sorted(f"{s}@{c}" for s in ("alpha", "beta") for c in CELLS)
    ws = yaml.safe_load(st.worksheet_path.read_text())
    assert {row["cell"] for row in ws["cases"]} == set(CELLS)
    r = flow.resume(cfg, st.stage_path, fill(st))
    md = r.md_path.read_text()
    assert r.record["outcome"] == "pass" and {c["cell"] for c in r.record["cases"]} == set(CELLS)
    assert "- cells: claude-code/real-model-1, codex/real-model-1 (from \\[\\[evals.matrix\\]\\])" in md
    assert "| alpha | codex/real-model-1 | baseline | **pass** |" in md


def test_a_run_recorded_twice_in_one_cell_fails_that_cell_only(cfg, tmp_path):
    cfg = with_config(cfg, MATRIX)
    record_cells(cfg)
    record_run(cfg, "alpha-break", "skill-agent", 0, agent="codex", run_id="codex-again")
    cases = stage(cfg, tmp_path).record["snapshot"]["cases"]
    dup = cases["alpha-break@codex/real-model-1"]
    assert dup["state"] == "fail" and "candidate: run k=0 is recorded more than once" in dup["reasons"]
    assert cases["alpha-break@claude-code/real-model-1"]["state"] == "complete"


def test_the_release_and_the_evidence_gate_share_one_run_key():
    meta = {"kind": "behavioral", "skill": "alpha", "arm": "baseline", "scenario": "alpha-break", "k": 2,
            "agent": {"name": "codex"}, "model": "m", "scripted": False}
    assert cells.run_key(meta, evidence.meta_cell(meta)) == evidence.run_key(evidence.slot_of(meta), "codex/m")
    assert evidence.meta_cell({**meta, "agent": "codex"}) == evidence.meta_cell(meta) == "codex/m"  # grade summaries name the agent


def test_a_cell_without_runs_is_incomplete_never_absent(cfg, tmp_path):
    cfg = with_config(cfg, MATRIX)
    record_cells(cfg, agents=("claude-code",))
    st = stage(cfg, tmp_path)
    codex = [c for c in st.record["snapshot"]["cases"].values() if c["cell"] == "codex/real-model-1"]
    assert len(codex) == len(CASES) and all(c["state"] == "incomplete" for c in codex)
    assert all("candidate: missing run(s) k=[0, 1, 2]" in c["reasons"] for c in codex)
    assert flow.resume(cfg, st.stage_path, fill(st)).record["outcome"] == "incomplete"


def test_the_cells_a_release_needs_are_configuration(cfg, tmp_path):
    cfg = with_config(cfg, MATRIX + '\n[release]\ncells = ["codex/real-model-1"]\n')
    record_cells(cfg)
    st = stage(cfg, tmp_path)
    assert {c["cell"] for c in st.record["snapshot"]["cases"].values()} == {"codex/real-model-1"}
    assert st.record["snapshot"]["bindings"]["cells"] == {
        "required": ["codex/real-model-1"], "configured_by": "[release] cells", "other": ["claude-code/real-model-1"]}
    md = flow.resume(cfg, st.stage_path, fill(st)).md_path.read_text()
    assert "recorded but not required: claude-code/real-model-1" in md


def test_a_configured_cell_the_matrix_does_not_declare_is_a_config_error(cfg):
    cfg = with_config(cfg, MATRIX + '\n[release]\ncells = ["gemini/real-model-1"]\n')
    with pytest.raises(ConfigError, match=r"names \['gemini/real-model-1'\], which \[\[evals.matrix\]\] does not declare"):
        cells.required(cfg)


def test_without_a_matrix_runs_of_two_cells_are_one_slot_as_in_the_evidence_gate(cfg, tmp_path):
    record_cells(cfg)
    cases = stage(cfg, tmp_path).record["snapshot"]["cases"]
    assert sorted(cases) == sorted(CASES) and all(c["cell"] == "" for c in cases.values())
    assert all("candidate: run k=0 is recorded more than once" in c["reasons"] for c in cases.values())


# ----------------------------------------------------------------------------- the candidate
def test_a_clean_attached_head_is_the_candidate(cfg):
    state = candidate.inspect(cfg.root)
    assert state["problems"] == [] and state["ref"].startswith("refs/heads/") and len(state["head"]) == 40
    assert candidate.settle(state, None) == {**state, "clean": True, "waiver": None}


def test_tracked_changes_and_untracked_files_are_refused_ignored_ones_are_not(cfg):
    (cfg.root / "skills-src/alpha/SKILL.md").write_text((cfg.root / "skills-src/alpha/SKILL.md").read_text() + "\nedited\n")
    write(cfg.root, "notes.txt", "mine\n")
    write(cfg.root, ".gitignore", "build/\n")
    git_commit_all_but(cfg.root, ".gitignore")
    write(cfg.root, "build/out.json", "{}\n")
    problems = candidate.inspect(cfg.root)["problems"]
    assert problems == ["tracked change (M): skills-src/alpha/SKILL.md", "untracked file not ignored: notes.txt"]
    with pytest.raises(CheckFailed, match="not a clean tested HEAD: tracked change .M.: skills-src/alpha/SKILL.md; untracked"):
        candidate.settle(candidate.inspect(cfg.root), None)
    with pytest.raises(InputError, match="needs a reason"):
        candidate.settle(candidate.inspect(cfg.root), "  ")


def git_commit_all_but(root: Path, only: str) -> None:
    git(root, "add", only)
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "ignore")


def test_stage_refuses_a_dirty_worktree_and_a_waiver_is_recorded_and_reported(cfg, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(pr_cmd, "credential_free_checks", lambda cfg, skip=(): list(GATES))
    record_cells(cfg, agents=("claude-code",))
    commit_evidence(cfg.root)
    skill = cfg.root / "skills-src/alpha/SKILL.md"
    skill.write_text(skill.read_text() + "\nan uncommitted edit\n")
    out = tmp_path / "o"
    args = ["release", "stage", "--root", str(cfg.root), "--session", "d1", "--out", str(out), "--force"]
    assert cli.main(args) == 1  # --force (which nox always passes) is no waiver
    err = capsys.readouterr().err
    assert "not a clean tested HEAD: tracked change (M): skills-src/alpha/SKILL.md" in err and "--allow-dirty-candidate" in err
    assert not (out / "d1" / "stage.json").exists()
    assert cli.main([*args, "--allow-dirty-candidate", "rehearsal on a working copy"]) == 0
    assert "WAIVED (rehearsal on a working copy): tracked change (M): skills-src/alpha/SKILL.md" in capsys.readouterr().out
    rec = stage_mod.decode(out / "d1" / "stage.json")
    assert rec["candidate"]["waiver"] == "rehearsal on a working copy" and rec["candidate"]["clean"] is False
    ws = yaml.safe_load((out / "d1" / "worksheet.yaml").read_text())
    for row in ws["cases"]:  # the uncommitted edit left alpha's runs stale (incomplete); beta's are complete
        row["comparison"], row["review"] = "candidate-only" if row["evidence"] == "complete" else "inconclusive", "reviewed"
    (out / "ws.yaml").write_text(yaml.safe_dump(ws))
    assert cli.main(["release", "resume", str(out / "d1" / "stage.json"), "--worksheet", str(out / "ws.yaml"),
                     "--root", str(cfg.root)]) == 1
    md = (out / "d1" / "report.md").read_text()
    assert "- candidate: " in md and "WAIVED (rehearsal on a working copy): tracked change (M): skills-src/alpha/SKILL.md" in md


def test_a_library_stage_of_a_dirty_candidate_fails_the_report(cfg, tmp_path):
    record_cells(cfg, agents=("claude-code",))
    commit_evidence(cfg.root)
    write(cfg.root, "stray.txt", "x\n")
    st = flow.stage(cfg, out_dir=tmp_path / "out", session="s1", source="evidence", released_ref=None, checks=GATES)
    assert st.record["candidate"]["clean"] is False and st.record["candidate"]["waiver"] is None
    r = flow.resume(cfg, st.stage_path, fill(st))
    assert r.record["outcome"] == "fail"
    assert r.record["reasons"][0].startswith("the candidate was not a clean tested HEAD and no waiver was recorded: "
                                             "untracked file not ignored: stray.txt")


def test_a_detached_head_counts_only_at_a_tag_or_the_commit_ci_names(cfg, monkeypatch):
    for var in candidate.CI_VARS:
        monkeypatch.delenv(var, raising=False)
    head = git(cfg.root, "rev-parse", "HEAD").strip()
    git(cfg.root, "checkout", "-q", "--detach", "v1")  # setup_host tagged HEAD v1
    assert candidate.inspect(cfg.root)["ref"] == "refs/tags/v1"
    write(cfg.root, "later.txt", "x\n")
    git_commit_all(cfg.root, "past the tag")
    state = candidate.inspect(cfg.root)
    assert state["ref"] is None and state["problems"][0].startswith("detached HEAD at ")
    assert "neither exactly a tag nor the commit CI names" in state["problems"][0]
    now = git(cfg.root, "rev-parse", "HEAD").strip()
    monkeypatch.setenv("GITHUB_SHA", now)
    monkeypatch.setenv("GITHUB_REF", "refs/pull/7/merge")
    assert candidate.inspect(cfg.root) == {"head": now, "ref": "refs/pull/7/merge", "problems": []}
    monkeypatch.setenv("GITHUB_SHA", head)  # CI names another commit
    assert candidate.inspect(cfg.root)["problems"]


# ----------------------------------------------------------------------------- the publication digest
def test_the_publication_digest_binds_resolved_dependencies_and_the_agent_clis_lock(cfg, tmp_path, monkeypatch):
    from skill_eval.reporting.release import publication

    record_cells(cfg, agents=("claude-code",))
    lock = cfg.root / publication.AGENT_CLIS_LOCK
    write(cfg.root, ".gitignore", ".cache/\n")
    write(cfg.root, publication.AGENT_CLIS_LOCK, '{"lockfileVersion": 3}\n')
    st = stage(cfg, tmp_path)
    pub = st.record["snapshot"]["bindings"]["publication"]
    assert pub["distributions"]["skill-eval"] and pub["distributions"]["jsonschema"] and "pytest" not in pub["distributions"]
    assert pub["agent_clis_lock_sha256"] == __import__("hashlib").sha256(lock.read_bytes()).hexdigest()
    lock.write_text('{"lockfileVersion": 3, "packages": {}}\n')  # another npm resolution of the agent CLIs
    with pytest.raises(CheckFailed, match="publication.agent_clis_lock_sha256 changed"):
        flow.recheck(cfg, st.stage_path)
    lock.write_text('{"lockfileVersion": 3}\n')
    real = publication.distributions()
    monkeypatch.setattr(publication, "distributions", lambda root="skill-eval": {**real, "jsonschema": "0.0.1"})
    with pytest.raises(CheckFailed, match=r"publication.distributions.jsonschema changed \(.* -> 0.0.1\)"):
        flow.recheck(cfg, st.stage_path)
