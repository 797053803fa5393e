"""Regression: the release evidence gate applies the release pass rule (issue 9).

`skill-eval evidence --suite full --stage release` used to pass with zero judgments and only
scripted evidence, while `grade --stage release` on the same bundles failed: evidence.check
never applied the release rule, and the baseline gate skipped dimensions 4/5 when no run was
judged. Both halves are pinned here.
"""

from __future__ import annotations

from test_evidence import baseline_for, check, record

JUDGED = {"schema_version": 1, "judgments": [
    {"dimension": d, "passed": True, "score": 1, "judge_model": "judge-m", "judge_version": "1", "rubric_version": "r1",
     "prompt_sha256": "0" * 64, "rationale": "ok", "judged_at": "2026-11-30T00:00:00Z"} for d in (4, 5)]}


def _record_all(cfg, **over):
    for k in range(3):
        record(cfg, k=k, **over)


def test_release_stage_fails_unjudged_scripted_evidence_that_merge_accepts(tmp_path):
    from test_graders_helpers import make_repo

    cfg = make_repo(tmp_path)
    _record_all(cfg, scripted=True)
    baseline_for(cfg, check(cfg))
    assert check(cfg).passed  # merge: unjudged 4/5 are complete, scripted evidence is fine
    errors = check(cfg, stage="release").errors
    assert not check(cfg, stage="release").passed
    assert sum("not judged; run `skill-eval judge`" in e for e in errors) == 3, errors
    assert sum("recorded with a scripted model" in e for e in errors) == 3, errors
    assert any("dimension 4 has no counted run" in e for e in errors), errors
    assert any("dimension 5 has no counted run" in e for e in errors), errors


def test_release_stage_passes_judged_real_model_evidence(tmp_path):
    from release_helpers import signing_key
    from test_graders_helpers import make_repo

    from skill_eval.core import seal
    from skill_eval.grading import judgments

    cfg = make_repo(tmp_path)
    key, line = signing_key()  # a release requires signed evidence: sealed as the runner would
    (cfg.evals_dir / "allowed_signers").write_text(line + "\n")
    from conftest import git, git_commit_all

    git(cfg.root, "init", "-q")  # the trust root is read from the base (content/trust.py): commit it
    git_commit_all(cfg.root, "trust root")
    for k in range(3):
        path = record(cfg, k=k, extra={"model_source": "remote:api.example.invalid"})  # as the runner records a provider
        seal.seal_tree(path, "/".join(path.parts[-5:]), None, key)
        (path / "judgments.json").write_text(__import__("json").dumps(JUDGED))  # the judge's later layer
        judgments.sign(path, key)  # signed by the judge over this bundle's seal (grading/judgments.py)
    baseline_for(cfg, check(cfg))
    r = check(cfg, stage="release")
    assert r.passed, r.errors
    assert r.signers == {"release-tests@skill-eval": 3}
