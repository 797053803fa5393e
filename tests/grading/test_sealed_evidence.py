"""Evidence bound to its recorder (issue 25 item 1): the runner seals each bundle with a signature, and
`grade`, `evidence` and `pr` verify it offline. The three hand edits of the issue (a report rewritten
with its digest recomputed, a scripted model renamed into a real one, a receipt digest zeroed) each fail
naming the bundle; so do an unsigned bundle under `signatures = "require"` and a key not allowed."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.core import seal

RUN = "agent-evals/skills/evidence/abi-compat-review/skill-agent/sealed/review-removed-export/0"
SCRIPT = "agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml"


def record(root: Path, run_id: str = "sealed") -> Path:
    assert main(["run", "--root", str(root), "review-removed-export", "--agent", "scripted", "--model-server",
                 f"scripted:{SCRIPT}", "--no-trigger", "-k", "1", "--run-id", run_id]) == 0
    return root / RUN.replace("/sealed/", f"/{run_id}/")


def evidence_errors(root: Path, capsys) -> list[str]:
    capsys.readouterr()
    main(["evidence", "--root", str(root), "--json"])
    return json.loads(capsys.readouterr().out)["errors"]


def forged(errors: list[str], bundle: Path) -> list[str]:
    rel = bundle.as_posix().split("agent-evals/skills/", 1)[1]
    return [e for e in errors if e.startswith(f"forged: {rel}")]


def test_the_runner_seals_what_it_records(repo_copy: Path, capsys):
    b = record(repo_copy)
    assert (b / seal.SEAL).is_file() and (b / seal.SIG).is_file()
    manifest = json.loads((b / seal.SEAL).read_text())
    assert "meta.json" in manifest["files"] and manifest["identity"]["scripted"] is True
    assert seal.verify(b, RUN.split("evidence/", 1)[1], seal.load_allowed_signers(
        repo_copy / "agent-evals/skills/allowed_signers")).principal == "tests@skill-eval"
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), str(b)]) == 0
    assert "seal: signed by tests@skill-eval" in capsys.readouterr().out


def test_a_report_rewritten_with_its_digest_recomputed_is_forged(repo_copy: Path, capsys):
    b = record(repo_copy)
    calls = [json.loads(line) for line in (b / "calls.jsonl").read_text().splitlines()]
    out = calls[0]["outputs"][0]
    report = b / out["snapshot"]
    data = json.loads(report.read_text())
    data["verdict"] = "NO_CHANGE"
    report.write_text(json.dumps(data))
    out["sha256"] = hashlib.sha256(report.read_bytes()).hexdigest()
    (b / "calls.jsonl").write_text("".join(json.dumps(c, sort_keys=True) + "\n" for c in calls))
    found = forged(evidence_errors(repo_copy, capsys), b)
    assert found and "differs from its sealed sha256" in found[0], found
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), str(b)]) == 1
    assert "seal: FORGED" in capsys.readouterr().out


def test_a_scripted_model_renamed_into_a_real_one_is_forged(repo_copy: Path, capsys):
    b = record(repo_copy)
    meta = json.loads((b / "meta.json").read_text())
    meta.update(model="claude-opus-4", scripted=False)
    meta["extra"].pop("model_script", None)
    (b / "meta.json").write_text(json.dumps(meta, indent=2))
    found = forged(evidence_errors(repo_copy, capsys), b)
    assert found and "meta.json differs" in found[0]


def test_a_zeroed_receipt_digest_is_forged(repo_copy: Path, capsys):
    """The example host's facts.json receipts; here any sealed file stands for them."""
    b = record(repo_copy)
    usage = b / "usage.json"
    usage.write_text(usage.read_text().replace('"turns"', '"turns" ', 1))
    assert forged(evidence_errors(repo_copy, capsys), b)


def test_unsigned_and_unknown_signers_fail_under_require(repo_copy: Path, capsys, monkeypatch, tmp_path: Path):
    monkeypatch.delenv(seal.KEY_ENV)
    b = record(repo_copy, "unsigned")
    errors = evidence_errors(repo_copy, capsys)
    rel = b.as_posix().split("agent-evals/skills/", 1)[1]
    assert any(e.startswith(f"unsigned: {rel}") for e in errors), errors
    other = tmp_path / "other_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    monkeypatch.setenv(seal.KEY_ENV, str(other))
    b2 = record(repo_copy, "stranger")
    found = forged(evidence_errors(repo_copy, capsys), b2)
    assert found and "not in allowed_signers" in found[0]


def test_the_warn_policy_counts_and_labels_unsigned_bundles(repo_copy: Path, capsys, monkeypatch):
    """`warn` in force at the base (content/trust.py) with no key there yet: every bundle counts as unsigned."""
    from conftest import git_commit_all

    cfg = repo_copy / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace('signatures = "require"', 'signatures = "warn"'))
    (repo_copy / "agent-evals/skills/allowed_signers").unlink()
    git_commit_all(repo_copy, "no trust root yet, warn")
    monkeypatch.delenv(seal.KEY_ENV)
    record(repo_copy, "unsigned")
    capsys.readouterr()
    main(["evidence", "--root", str(repo_copy)])
    out = capsys.readouterr().out
    assert re.search(r"UNSIGNED: [1-9]\d* bundle\(s\) carry no seal", out), out
    assert not [line for line in out.splitlines() if line.startswith("FAIL unsigned")]


@pytest.mark.parametrize("stage", ["release"])
def test_the_release_stage_always_requires_signatures(repo_copy: Path, capsys, monkeypatch, stage: str):
    cfg = repo_copy / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace('signatures = "require"', 'signatures = "warn"'))
    monkeypatch.delenv(seal.KEY_ENV)
    b = record(repo_copy, "unsigned")
    capsys.readouterr()
    main(["evidence", "--root", str(repo_copy), "--stage", stage, "--json"])
    errors = json.loads(capsys.readouterr().out)["errors"]
    rel = b.as_posix().split("agent-evals/skills/", 1)[1]
    assert any(e.startswith(f"unsigned: {rel}") and "release stage" in e for e in errors)
