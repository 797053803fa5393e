"""The evidence matrix ([[evals.matrix]], issue 26): every expected bundle in every agent x model cell
of the profile; a missing cell's bundle is named with its cell; pass^k holds per cell; without a
matrix, a second cell's bundles are duplicates (as before)."""

from __future__ import annotations

import dataclasses

from test_evidence import baseline_for, check, record
from test_graders_helpers import make_repo

from skill_eval.content.config import MatrixCell

CELLS = (MatrixCell("scripted", "scripted"), MatrixCell("codex", "scripted"))


def _two_cells(cfg, skip=None, failing=None):
    for agent in ("scripted", "codex"):
        for k in range(3):
            if (agent, k) == skip:
                continue
            verdict = "COMPATIBLE" if (agent, k) == failing else "BREAKING"
            record(cfg, k=k, run=f"{agent}-run", verdict=verdict, agent={"name": agent, "version": "1"})


def _with_baselines(cfg):
    baseline_for(cfg, check(cfg))
    return cfg


def test_both_cells_complete_pass_and_a_missing_bundle_names_its_cell(tmp_path):
    cfg = dataclasses.replace(make_repo(tmp_path), matrix=CELLS)
    _two_cells(cfg)
    _with_baselines(cfg)
    r = check(cfg)
    assert r.errors == [] and r.expected == r.found == 6  # 3 runs in each of 2 cells
    victim = cfg.evals_dir / "evidence/abi-compat-review/skill-agent/codex-run/breaking/1"
    import shutil
    shutil.rmtree(victim)
    errors = check(cfg).errors
    assert any(e.startswith("missing: behavioral breaking [skill-agent] k=1 in cell codex/scripted") for e in errors), errors
    assert not any("scripted/scripted" in e and e.startswith("missing") for e in errors)


def test_a_cell_the_matrix_does_not_list_is_extra(tmp_path):
    cfg = dataclasses.replace(make_repo(tmp_path), matrix=CELLS[:1])
    _two_cells(cfg)
    errors = check(cfg).errors
    assert any("recorded in cell codex/scripted, which [[evals.matrix]] does not list" in e for e in errors), errors


def test_a_profile_the_cell_does_not_name_does_not_demand_it(tmp_path):
    cfg = dataclasses.replace(make_repo(tmp_path), matrix=(CELLS[0], MatrixCell("codex", "scripted", ("release",))))
    for k in range(3):
        record(cfg, k=k, run="scripted-run", agent={"name": "scripted", "version": "1"})
    _with_baselines(cfg)
    assert check(cfg).errors == []  # merge stage: the pr profile has only scripted/scripted
    assert any("in cell codex/scripted" in e for e in check(cfg, stage="release").errors)


def test_pass_k_holds_in_every_cell(tmp_path):
    cfg = dataclasses.replace(make_repo(tmp_path), matrix=CELLS)
    _two_cells(cfg, failing=("codex", 1))
    errors = check(cfg).errors
    assert any(e.startswith("pass^k: breaking [skill-agent] in cell codex/scripted fails zero-tolerance dimension 6 in run(s) k=[1]")
               for e in errors), errors
    assert not any("in cell scripted/scripted" in e for e in errors if e.startswith("pass^k"))


def test_without_a_matrix_a_second_cell_is_a_duplicate(tmp_path):
    cfg = make_repo(tmp_path)
    _two_cells(cfg)
    errors = check(cfg).errors
    assert any(e.startswith("duplicated: behavioral breaking [skill-agent] k=0 has 2 bundles") for e in errors), errors


def test_the_text_summary_names_the_cell_of_a_missing_bundle():
    from skill_eval.commands.evidence import summarise

    errors = ["missing: behavioral breaking [skill-agent] k=1 in cell codex/scripted "
              "(expected at evidence/abi-compat-review/skill-agent/<run-id>/breaking/1/)",
              "missing: behavioral other [skill-agent] k=0 (expected at evidence/abi-compat-review/skill-agent/<run-id>/other/0/)"]
    lines = list(summarise(errors, verbose=False))
    assert "  abi-compat-review: 1 missing, 1 missing in cell codex/scripted" in lines, lines
