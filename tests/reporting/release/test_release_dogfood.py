"""The release on this repository's committed evidence (two [[evals.matrix]] cells, scripted model turns):
it stages one case per scenario and cell, the committed example worksheet resumes it, and the outcome is
INCOMPLETE naming why (issue 35 item 1). scripts/release_rehearsal.py is what CI runs end to end (signed
with a throwaway key, then verified); this test keeps the committed worksheet regenerated from the evidence.
"""

from __future__ import annotations

import importlib.util
import sys

from conftest import REPO

from skill_eval.content import config
from skill_eval.reporting.release import candidate, flow

GATES = [{"gate": g, "status": "pass"} for g in ("check_skills", "evidence", "pack")]
WORKSHEET = REPO / "agent-evals/release/worksheet.dogfood.yaml"


def rehearsal():
    spec = importlib.util.spec_from_file_location("release_rehearsal", REPO / "scripts/release_rehearsal.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("release_rehearsal", module)
    spec.loader.exec_module(module)
    return module


def test_committed_multi_cell_evidence_resumes_to_incomplete_with_the_committed_worksheet(tmp_path):
    cfg = config.load(REPO)
    # the working copy under test may hold uncommitted edits; the candidate rule has its own tests
    cand = candidate.settle(candidate.inspect(REPO), "test: the working copy under test")
    st = flow.stage(cfg, out_dir=tmp_path, session="dogfood", source="evidence", released_ref=None, checks=GATES,
                    candidate=cand)
    cases = st.record["snapshot"]["cases"]
    matrix = sorted(c.label for c in cfg.matrix if "release" in c.profiles)
    assert len(matrix) >= 2 and st.record["snapshot"]["bindings"]["cells"]["required"] == matrix
    assert {c["cell"] for c in cases.values()} == set(matrix)
    assert len(cases) == len(matrix) * len({c["scenario"] for c in cases.values()})
    assert not any("more than once" in r for c in cases.values() for r in c["reasons"])  # the cells are told apart
    assert {c["state"] for c in cases.values()} == {"incomplete"}  # scripted evidence completes no release arm
    assert all(any("scripted model" in r for r in c["reasons"]) for c in cases.values())
    generated = rehearsal().filled_worksheet(st.worksheet_path)
    assert WORKSHEET.read_text(encoding="utf-8") == generated, (
        "agent-evals/release/worksheet.dogfood.yaml is out of date: python scripts/release_rehearsal.py --write-worksheet")
    r = flow.resume(cfg, st.stage_path, WORKSHEET)
    assert r.record["outcome"] == "incomplete"
    assert all("scripted" in why or "INDETERMINATE" in why for why in r.record["reasons"])
    md = r.md_path.read_text()
    assert "**Outcome: INCOMPLETE**" in md and f"- cells: {', '.join(matrix)}" in md


def test_the_ci_rehearsal_fails_unless_resume_is_incomplete_for_scripted_reasons():
    import json
    import subprocess

    check = rehearsal().resume_problems

    def answer(rc, outcome, reasons):
        return subprocess.CompletedProcess([], rc, json.dumps({"outcome": outcome, "reasons": reasons}), "")

    assert check(answer(1, "incomplete", ["case a@x/scripted is incomplete: candidate: recorded with a scripted model"])) == []
    assert check(answer(0, "pass", ["every gate passed"]))  # a pass on scripted evidence is a bug, not a success
    assert check(answer(1, "fail", ["case a failed"]))
    assert check(answer(1, "incomplete", ["case a is incomplete: missing run(s) k=[0]"]))  # incomplete, but not for why it should be
    assert check(subprocess.CompletedProcess([], 2, "", "skill-eval: usage"))
