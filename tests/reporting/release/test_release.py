"""Release flow end to end: stage -> worksheet -> resume -> report, per outcome, and every refusal.

The host is mini_repo with two ready cases (alpha-break, beta-same) and a `v1` tag as the
released baseline; runs are bundles written into the evidence tree. Credential-free gates are
given directly (the real `pr` steps are exercised by the dogfood test and `nox -s release`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import git_commit_all
from release_helpers import SKILL, commit_evidence, record_run, setup_host

from skill_eval import cli
from skill_eval.commands import pr as pr_cmd
from skill_eval.core import schemas, strict
from skill_eval.core.errors import CheckFailed, InputError
from skill_eval.reporting.release import flow, report, sign, worksheet
from skill_eval.reporting.release import snapshot as snap
from skill_eval.reporting.release import stage as stage_mod

GATES = [{"gate": g, "status": "pass"} for g in ("check_skills", "evidence", "pack")]
CASES = tuple(SKILL)


@pytest.fixture
def cfg(mini_repo):
    return setup_host(mini_repo)


def record_all(cfg, *, released=False, skip=(), **over):
    """Every case's skill-agent and baseline runs (k of each), and released:v1 runs when asked."""
    digests = snap.released_skills(cfg, "v1", ["alpha", "beta"])["skills"] if released else {}
    for case in CASES:
        for k in range(cfg.k):
            if (case, "skill-agent", k) not in skip:
                record_run(cfg, case, "skill-agent", k, **over.get(case, {}))
            if (case, "baseline", k) not in skip:
                record_run(cfg, case, "baseline", k, **over.get(("baseline", case), {}))
            if released and (case, "released", k) not in skip:
                record_run(cfg, case, "released:v1", k, released_digest=digests[SKILL[case]], **over.get(("released", case), {}))


def do_stage(cfg, tmp_path, released=None, checks=GATES, **kw):
    commit_evidence(cfg.root)
    return flow.stage(cfg, out_dir=tmp_path / "out", session="s1", source="evidence", released_ref=released, checks=checks, **kw)


def fill(st, answers: dict[str, str], path: Path | None = None, mutate=None) -> Path:
    ws = yaml.safe_load(st.worksheet_path.read_text())
    for row in ws["cases"]:
        row["comparison"] = answers.get(row["case"])
        if row["comparison"] is None:  # a skill's 2nd case: like its 1st where the evidence allows it
            ok = worksheet.allowed(row["evidence"], row["baseline_required"])
            first = answers[row["case"].removesuffix("-2")]
            row["comparison"] = first if first in ok else ok[0]
        row["review"] = f"Reviewed {row['case']}: answered every question."
    if mutate:
        mutate(ws)
    out = path or st.worksheet_path.with_name("filled.yaml")
    out.write_text(yaml.safe_dump(ws, sort_keys=False))
    return out


def resume(cfg, st, ws, **kw):
    return flow.resume(cfg, st.stage_path, ws, **kw)


def waiver_file(tmp_path, **over) -> Path:
    body = {"schema_version": 1, "approver": "Release Maintainer <rm@example.invalid>", "reason": "no model credential in CI",
            "unavailable_capability": "real-model agent runs", "skills": ["alpha", "beta"], "cases": list(CASES),
            "residual_risk": "behaviour under a real model is unmeasured", "compensating_evidence": sorted(g["gate"] for g in GATES),
            "follow_up": "issue #42: record real-model evidence before 1.1"}
    body.update(over)
    path = tmp_path / "waiver.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


# ----------------------------------------------------------------------------- outcomes
def test_pass_round_trip_with_released_pairs(cfg, tmp_path):
    record_all(cfg, released=True)
    st = do_stage(cfg, tmp_path, released="v1")
    assert all(c["state"] == "complete" and c["baseline_required"] for c in st.record["snapshot"]["cases"].values())
    assert str(cfg.root) not in st.stage_path.read_text() and str(tmp_path) not in st.stage_path.read_text()
    r = resume(cfg, st, fill(st, {"alpha-break": "same", "beta-same": "better"}))
    assert r.record["outcome"] == "pass"
    data = r.json_path.read_bytes()
    assert data == report.canonical_bytes(strict.loads_json(data.decode(), "r"))  # canonical RFC 8785 + newline
    schemas.validate(json.loads(data), "release_report", "report")
    assert report.decode(r.json_path) == r.record
    r.json_path.write_bytes(data.replace(b'"outcome":"pass"', b'"outcome": "pass"'))
    with pytest.raises(InputError, match="not in canonical form"):
        report.decode(r.json_path)
    assert r.record["publication"]["sha256"] and r.record["bindings"]["released"]["ref"] == "v1"
    assert "**Outcome: PASS**" in r.md_path.read_text()


def test_candidate_only_pass_and_comparison_rules(cfg, tmp_path):
    record_all(cfg)
    st = do_stage(cfg, tmp_path)
    with pytest.raises(InputError, match="comparison 'same' is not allowed for complete evidence without a released arm"):
        resume(cfg, st, fill(st, {"alpha-break": "same", "beta-same": "candidate-only"}))
    r = resume(cfg, st, fill(st, {c: "candidate-only" for c in CASES}))
    assert r.record["outcome"] == "pass"


def test_fail_on_failed_case_or_worse_or_failed_gate(cfg, tmp_path):
    record_all(cfg, released=True, **{"alpha-break": {"verdict": "OK"}})
    st = do_stage(cfg, tmp_path, released="v1")
    assert st.record["snapshot"]["cases"]["alpha-break"]["state"] == "fail"
    r = resume(cfg, st, fill(st, {"alpha-break": "same", "beta-same": "same"}))
    assert r.record["outcome"] == "fail" and "case alpha-break failed" in r.record["reasons"][0]


def test_worse_comparison_fails_and_a_failed_gate_fails(cfg, tmp_path):
    record_all(cfg, released=True)
    st = do_stage(cfg, tmp_path, released="v1")
    r = resume(cfg, st, fill(st, {"alpha-break": "worse", "beta-same": "same"}))
    assert r.record["outcome"] == "fail" and "judged worse" in r.record["reasons"][0]
    st2 = do_stage(cfg, tmp_path, released="v1", checks=[*GATES, {"gate": "golden", "status": "fail"}], force=True)
    r2 = resume(cfg, st2, fill(st2, {c: "same" for c in CASES}))
    assert r2.record["outcome"] == "fail" and r2.record["reasons"] == ["credential-free gate golden failed"]


def test_scripted_evidence_is_incomplete_never_pass(cfg, tmp_path):
    record_all(cfg, **{c: {"scripted": True} for c in CASES})
    st = do_stage(cfg, tmp_path)
    assert {c["state"] for c in st.record["snapshot"]["cases"].values()} == {"incomplete"}
    with pytest.raises(InputError, match="only|not allowed for incomplete evidence"):
        resume(cfg, st, fill(st, {c: "candidate-only" for c in CASES}))
    r = resume(cfg, st, fill(st, {c: "inconclusive" for c in CASES}))
    assert r.record["outcome"] == "incomplete"
    assert any("scripted model" in x for x in r.record["reasons"])


@pytest.mark.parametrize("level", ["none", "uid"])
def test_unisolated_evidence_is_incomplete_never_pass(cfg, tmp_path, level):
    """issue 7: the release profile refuses unisolated evidence unless waived (it is incomplete, waivable).
    `uid` too: the agent runs as another uid, but the runner's own tools (the tool jail) do not."""
    record_all(cfg, **{c: {"isolation": level} for c in CASES})
    st = do_stage(cfg, tmp_path)
    assert {c["state"] for c in st.record["snapshot"]["cases"].values()} == {"incomplete"}
    r = resume(cfg, st, fill(st, {c: "inconclusive" for c in CASES}))
    assert r.record["outcome"] == "incomplete"
    assert any(f"isolation {level!r}" in x for x in r.record["reasons"])


@pytest.mark.parametrize("kind", ["timeout", "unjudged", "missing-released", "missing-run"])
def test_incomplete_evidence_kinds(cfg, tmp_path, kind):
    over, skip = {}, ()
    if kind == "timeout":
        over = {"alpha-break": {"status": "incomplete"}}
    elif kind == "unjudged":
        over = {"alpha-break": {"judged": False}}
    elif kind == "missing-released":
        skip = (("alpha-break", "released", 1),)
    else:
        skip = (("alpha-break", "skill-agent", 2),)
    record_all(cfg, released=True, skip=skip, **over)
    st = do_stage(cfg, tmp_path, released="v1")
    cases = st.record["snapshot"]["cases"]
    assert cases["alpha-break"]["state"] == "incomplete" and cases["beta-same"]["state"] == "complete", cases["alpha-break"]["reasons"]
    r = resume(cfg, st, fill(st, {"alpha-break": "inconclusive", "beta-same": "same"}))
    if kind == "timeout":  # a run cut off mid-way is the agent's budget stop: a scored failure, so the lift is negative
        assert r.record["outcome"] == "fail" and "lift of skill-agent over baseline for skill alpha" in r.record["reasons"][0]
    else:
        assert r.record["outcome"] == "incomplete"


# ----------------------------------------------------------------------------- waivers
def test_waiver_turns_exactly_covered_incomplete_into_waived(cfg, tmp_path):
    record_all(cfg, **{c: {"scripted": True} for c in CASES})
    st = do_stage(cfg, tmp_path)
    ws = fill(st, {c: "inconclusive" for c in CASES})
    r = resume(cfg, st, ws, waiver_path=waiver_file(tmp_path))
    assert r.record["outcome"] == "waived" and r.record["waiver"]["approver"].startswith("Release Maintainer")
    assert "## Waiver" in r.md_path.read_text()


@pytest.mark.parametrize("over,match", [
    ({"cases": ["alpha-break"]}, "exactly the incomplete cases"),
    ({"cases": ["alpha-break", "beta-same", "gamma"]}, "exactly the incomplete cases"),
    ({"skills": ["alpha"]}, "not exactly the incomplete cases' skills"),
    ({"compensating_evidence": ["pack"]}, "must name each credential-free gate"),
    ({"compensating_evidence": ["pack", "evidence"]}, "sorted"),
])
def test_waiver_must_cover_exactly(cfg, tmp_path, over, match):
    record_all(cfg, **{c: {"scripted": True} for c in CASES})
    st = do_stage(cfg, tmp_path)
    with pytest.raises((CheckFailed, InputError), match=match):
        resume(cfg, st, fill(st, {c: "inconclusive" for c in CASES}), waiver_path=waiver_file(tmp_path, **over))


def test_waiver_over_failed_case_or_pass_is_rejected(cfg, tmp_path):
    record_all(cfg, **{"alpha-break": {"verdict": "OK"}, "beta-same": {"scripted": True}})
    st = do_stage(cfg, tmp_path)
    ws = fill(st, {"alpha-break": "inconclusive", "beta-same": "inconclusive"})
    with pytest.raises(CheckFailed, match="cannot cover a failed release"):
        resume(cfg, st, ws, waiver_path=waiver_file(tmp_path))
    assert not (st.stage_path.parent / "report.json").exists()
    shutil.rmtree(cfg.evals_dir / "evidence")
    record_all(cfg)
    st2 = do_stage(cfg, tmp_path, force=True)
    with pytest.raises(CheckFailed, match="nothing to waive"):
        resume(cfg, st2, fill(st2, {c: "candidate-only" for c in CASES}), waiver_path=waiver_file(tmp_path))


# ----------------------------------------------------------------------------- refusals
def _staged(cfg, tmp_path):
    record_all(cfg)
    record_run(cfg, "alpha-break", "skill-agent", 0)  # same bytes; now add a receipt to one run
    bundle = cfg.evals_dir / "evidence/alpha/skill-agent/run1/alpha-break/0"
    (bundle / "facts.json").write_text(json.dumps({"schema_version": 1, "actions": []}) + "\n")
    st = do_stage(cfg, tmp_path)
    return st, fill(st, {c: "candidate-only" for c in CASES}), bundle


def test_changed_raw_byte_is_refused_by_name(cfg, tmp_path):
    st, ws, bundle = _staged(cfg, tmp_path)
    (bundle / "final.md").write_bytes((bundle / "final.md").read_bytes() + b" ")
    with pytest.raises(CheckFailed, match=r"changed raw byte: evals/evidence/alpha/skill-agent/run1/alpha-break/0/final.md"):
        resume(cfg, st, ws)


def test_changed_receipt_is_refused_by_name(cfg, tmp_path):
    st, ws, bundle = _staged(cfg, tmp_path)
    (bundle / "facts.json").write_text(json.dumps({"actions": [], "schema_version": 1}) + "\n")
    with pytest.raises(CheckFailed, match=r"changed receipt: evals/evidence/alpha/skill-agent/run1/alpha-break/0/facts.json"):
        resume(cfg, st, ws)


def test_added_raw_file_and_removed_run_are_refused(cfg, tmp_path):
    st, ws, bundle = _staged(cfg, tmp_path)
    (bundle / "raw").mkdir(exist_ok=True)
    (bundle / "raw" / "extra.txt").write_text("smuggled")
    with pytest.raises(CheckFailed, match="added raw byte: .*/raw/extra.txt"):
        resume(cfg, st, ws)
    shutil.rmtree(bundle)
    with pytest.raises(CheckFailed, match="run removed: .*alpha-break/0"):
        resume(cfg, st, ws)


def test_changed_skill_byte_is_refused_by_name(cfg, tmp_path):
    st, ws, _ = _staged(cfg, tmp_path)
    skill = cfg.root / "skills-src/alpha/SKILL.md"
    skill.write_text(skill.read_text() + "\nOne more line.\n")
    with pytest.raises(CheckFailed, match="candidate skill alpha changed"):
        resume(cfg, st, ws)


def test_changed_released_skill_is_refused(cfg, tmp_path, mini_repo):
    record_all(cfg, released=True)
    st = do_stage(cfg, tmp_path, released="v1")
    ws = fill(st, {c: "same" for c in CASES})
    (mini_repo / ".agents/skills/alpha/SKILL.md").write_text("---\nname: alpha\ndescription: changed\n---\nnew\n")
    git_commit_all(mini_repo, "move the release")
    subprocess.run(["git", "-C", str(mini_repo), "tag", "-f", "v1"], check=True, capture_output=True)
    with pytest.raises(CheckFailed, match="released skill alpha changed|released.commit changed"):
        resume(cfg, st, ws)


def test_changed_worksheet_case_id_is_refused(cfg, tmp_path):
    st, ws, _ = _staged(cfg, tmp_path)

    def rename(w):
        w["cases"][0]["case"] = "alpha-brake"
    fill(st, {c: "candidate-only" for c in CASES}, mutate=rename)
    with pytest.raises(InputError, match="case 'alpha-brake' is not in the stage"):
        resume(cfg, st, ws)

    def drop(w):
        del w["cases"][1]
    fill(st, {c: "candidate-only" for c in CASES}, mutate=drop)
    with pytest.raises(InputError, match=r"case\(s\) \['alpha-break-2'\] of the stage are missing"):
        resume(cfg, st, ws)

    def question(w):
        w["cases"][0]["human_review_questions"] = ["Was it nice?"]
    fill(st, {c: "candidate-only" for c in CASES}, mutate=question)
    with pytest.raises(InputError, match="human_review_questions differs from the stage"):
        resume(cfg, st, ws)


def test_unfilled_worksheet_is_refused(cfg, tmp_path):
    record_all(cfg)
    st = do_stage(cfg, tmp_path)
    with pytest.raises(InputError, match="is not filled in"):
        resume(cfg, st, st.worksheet_path)


def test_edited_stage_is_refused(cfg, tmp_path):
    st, ws, _ = _staged(cfg, tmp_path)
    rec = json.loads(st.stage_path.read_text())
    st.stage_path.write_text(json.dumps(rec, indent=1))
    with pytest.raises(InputError, match="not in canonical form"):
        resume(cfg, st, ws)
    rec["snapshot"]["cases"]["alpha-break"]["state"] = "complete"
    rec["released_ref"] = None
    rec["checks"][0]["status"] = "fail"
    stage_mod.write(st.stage_path, rec)
    with pytest.raises(CheckFailed, match="seal does not match"):
        resume(cfg, st, ws)


def test_existing_stage_is_not_overwritten(cfg, tmp_path):
    record_all(cfg)
    do_stage(cfg, tmp_path)
    with pytest.raises(InputError, match="a stage already exists"):
        do_stage(cfg, tmp_path)


# ----------------------------------------------------------------------------- signatures
def _keypair(tmp_path):
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rm", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"rm@example.invalid namespaces=\"skill-eval\" {(tmp_path / 'id_ed25519.pub').read_text()}")
    return key, allowed


def test_signed_stage_and_report_verify_and_a_flipped_byte_fails(cfg, tmp_path):
    key, allowed = _keypair(tmp_path)
    record_all(cfg)
    st = do_stage(cfg, tmp_path, sign_key=key)
    assert sign.verify(st.stage_path, allowed) == "rm@example.invalid"
    r = resume(cfg, st, fill(st, {c: "candidate-only" for c in CASES}), sign_key=key, allowed_signers=allowed)
    assert sign.verify(r.json_path, allowed) == "rm@example.invalid"
    root = ["--root", str(cfg.root)]
    assert cli.main(["release", "verify", str(st.stage_path), str(r.json_path), "--allowed-signers", str(allowed), *root]) == 0
    for path in (st.stage_path, r.json_path):
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))
        with pytest.raises(CheckFailed, match="does not verify"):
            sign.verify(path, allowed)
        assert cli.main(["release", "verify", str(path), "--allowed-signers", str(allowed), *root]) == 1


def test_signature_by_unknown_key_fails(cfg, tmp_path):
    key, _ = _keypair(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, allowed_other = _keypair(other)
    record_all(cfg)
    st = do_stage(cfg, tmp_path, sign_key=key)
    with pytest.raises(CheckFailed, match="by no key in the allowed-signers file"):
        sign.verify(st.stage_path, allowed_other)


# ----------------------------------------------------------------------------- CLI and this repository
def test_cli_stage_resume_exit_codes(cfg, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(pr_cmd, "credential_free_checks", lambda cfg, skip=(): list(GATES))
    record_all(cfg, **{c: {"scripted": True} for c in CASES})
    root = ["--root", str(cfg.root)]
    out = tmp_path / "o"
    commit_evidence(cfg.root)
    assert cli.main(["release", "stage", "--session", "c1", "--out", str(out), *root]) == 0
    st = out / "c1" / "stage.json"
    ws = yaml.safe_load((out / "c1" / "worksheet.yaml").read_text())
    for row in ws["cases"]:
        row["comparison"], row["review"] = "inconclusive", "scripted"
    (out / "ws.yaml").write_text(yaml.safe_dump(ws))
    assert cli.main(["release", "resume", str(st), "--worksheet", str(out / "ws.yaml"), *root]) == 1  # incomplete blocks
    assert cli.main(["release", "resume", str(st), "--worksheet", str(out / "ws.yaml"), "--waiver",
                     str(waiver_file(tmp_path)), "--json", *root]) == 0
    capsys.readouterr()
    assert cli.main(["release", "resume", str(st), *root]) == 2  # usage: no worksheet
    assert cli.main(["release", "stage", "--session", "Bad Id", "--out", str(out), *root]) == 2


def test_run_records_every_required_arm_once_into_the_session(repo_copy, tmp_path, monkeypatch):
    """--run: candidate, baseline and released arm, once each, moved out of the evidence tree; scripted -> incomplete."""
    from conftest import git

    monkeypatch.setattr(pr_cmd, "credential_free_checks", lambda cfg, skip=(): list(GATES))
    path = repo_copy / "agent-evals/skills/scenarios.yaml"
    doc = yaml.safe_load(path.read_text())
    for s in doc["scenarios"]:
        if s["id"] != "review-removed-export":
            s["status"] = "draft"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    toml = repo_copy / "skill-eval.toml"  # one cell: the session's (a declared matrix would require its cells)
    toml.write_text(toml.read_text().split("[[evals.matrix]]")[0] + "[subject]" + toml.read_text().split("\n[subject]", 1)[1])
    git_commit_all(repo_copy, "one case")
    git(repo_copy, "tag", "v0")
    out = tmp_path / "rel"
    args = ["release", "stage", "--root", str(repo_copy), "--session", "r1", "--out", str(out), "--run", "--released", "v0",
            "--agent", "scripted", "--model-server", "scripted:agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml"]
    assert cli.main(args) == 0
    raw = out / "r1" / "raw"
    metas = sorted(p.relative_to(raw).as_posix() for p in raw.rglob("meta.json"))
    assert metas == ["abi-compat-review/baseline/release-r1/review-removed-export/0/meta.json",
                     "abi-compat-review/released-v0/release-r1/review-removed-export/0/meta.json",
                     "abi-compat-review/skill-agent/release-r1/review-removed-export/0/meta.json"]
    assert not list((repo_copy / "agent-evals/skills/evidence").rglob("release-r1"))
    rec = stage_mod.decode(out / "r1" / "stage.json")
    case = rec["snapshot"]["cases"]["review-removed-export"]
    assert rec["source"] == "session" and rec["raw_root"] == "raw" and case["baseline_required"]
    runs = [r for arm in case["arms"].values() for r in arm["runs"]]
    assert len(runs) == 3 and all(r["scripted"] for r in runs)
    assert case["state"] != "complete"  # scripted evidence never completes a release arm
    if case["state"] == "incomplete":
        assert any("scripted model" in r for r in case["reasons"])
    assert cli.main(args) == 2  # each arm runs exactly once: the session cannot be re-recorded


def test_newer_or_malformed_files_are_one_line_usage_errors(cfg, tmp_path, capsys):
    record_all(cfg)
    st = do_stage(cfg, tmp_path)
    root = ["--root", str(cfg.root)]
    rec = json.loads(st.stage_path.read_text())
    rec["schema_version"] = 99
    newer = tmp_path / "newer.json"
    stage_mod.write(newer, rec)
    ws = fill(st, {c: "candidate-only" for c in CASES})
    assert cli.main(["release", "resume", str(newer), "--worksheet", str(ws), *root]) == 2
    err = capsys.readouterr().err
    assert "written by a newer skill-eval" in err and len(err.strip().splitlines()) == 1
    dup = tmp_path / "dup.yaml"
    dup.write_text("schema_version: 1\nsession: s1\nsession: s1\ncases: []\n")
    assert cli.main(["release", "resume", str(st.stage_path), "--worksheet", str(dup), *root]) == 2
    err = capsys.readouterr().err
    assert "duplicate" in err and "dup.yaml" in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "waiver.yaml"
    bad.write_text("schema_version: 1\napprover: x\n")
    assert cli.main(["release", "resume", str(st.stage_path), "--worksheet", str(ws), "--waiver", str(bad), *root]) == 2
    assert "waiver.yaml" in capsys.readouterr().err


def test_skill_absent_at_released_ref_is_candidate_only(cfg, tmp_path, mini_repo):
    from conftest import git

    shutil.rmtree(mini_repo / ".agents/skills/beta")
    shutil.rmtree(mini_repo / ".claude/skills/beta")
    git_commit_all(mini_repo, "beta not yet released")
    git(mini_repo, "tag", "v0")
    git(mini_repo, "checkout", "-q", "v1", "--", ".agents", ".claude")
    git_commit_all(mini_repo, "beta back")
    digest = snap.released_skills(cfg, "v0", ["alpha", "beta"])["skills"]
    assert set(digest) == {"alpha"}
    record_all(cfg)
    for k in range(cfg.k):
        for case in ("alpha-break", "alpha-break-2"):
            record_run(cfg, case, "released:v0", k, released_digest=digest["alpha"])
    st = do_stage(cfg, tmp_path, released="v0")
    cases = st.record["snapshot"]["cases"]
    assert cases["alpha-break"]["baseline_required"] and not cases["beta-same"]["baseline_required"]
    r = resume(cfg, st, fill(st, {"alpha-break": "better", "beta-same": "candidate-only"}))
    assert r.record["outcome"] == "pass"


def test_released_run_with_other_skill_bytes_fails_the_binding(cfg, tmp_path):
    record_all(cfg)
    for k in range(cfg.k):
        for case in CASES:
            record_run(cfg, case, "released:v1", k, released_digest="f" * 64)
    st = do_stage(cfg, tmp_path, released="v1")
    released = st.record["snapshot"]["cases"]["alpha-break"]["arms"]["released"]
    assert released["state"] == "fail" and "is not the bound released digest" in released["reasons"][0]
    assert st.record["snapshot"]["cases"]["alpha-break"]["state"] == "fail"


def test_credential_free_gates_really_run_and_record_failures(cfg):
    """The real pr steps: the scenario edit left the pack stale, so the pack gate fails; skips are recorded."""
    checks = pr_cmd.credential_free_checks(cfg, ("surface", "golden"))
    status = {c["gate"]: c["status"] for c in checks}
    assert status["pack"] == "fail" and status["surface"] == "skipped"
    assert status.get("golden", "skipped") == "skipped"  # omitted where the pr profile says it does not apply
    assert status["check_skills"] == "pass"


def test_force_never_overwrites_a_filled_worksheet(cfg, tmp_path):
    record_all(cfg)
    st = do_stage(cfg, tmp_path)
    do_stage(cfg, tmp_path, force=True)  # an untouched worksheet may be replaced
    fill(st, {c: "candidate-only" for c in CASES}, path=st.worksheet_path)
    with pytest.raises(InputError, match="holds a filled-in review"):
        do_stage(cfg, tmp_path, force=True)


def test_run_refuses_a_path_lookup_of_the_agent_binary(cfg, tmp_path, capsys):
    rc = cli.main(["release", "stage", "--root", str(cfg.root), "--session", "b1", "--out", str(tmp_path), "--run",
                   "--agent", "claude-code"])
    assert rc == 2 and "--agent-binary" in capsys.readouterr().err


def test_unreadable_run_fails_its_case(cfg, tmp_path):
    record_all(cfg)
    (cfg.evals_dir / "evidence/alpha/skill-agent/run1/alpha-break/1/meta.json").write_text("{")
    st = do_stage(cfg, tmp_path)
    case = st.record["snapshot"]["cases"]["alpha-break"]
    assert case["state"] == "fail" and "invalid JSON" in case["reasons"][0]


def test_stage_never_carries_a_local_path_even_in_reasons(cfg, tmp_path):
    record_all(cfg)
    bad = cfg.evals_dir / "evidence/alpha/skill-agent/run1/alpha-break/1/meta.json"
    bad.write_text('{"schema_version": 1}')
    st = do_stage(cfg, tmp_path)
    text = st.stage_path.read_text()
    assert str(cfg.root) not in text and str(tmp_path) not in text
    assert "alpha/skill-agent/run1/alpha-break/1/meta.json" in text  # named relative to the raw root
