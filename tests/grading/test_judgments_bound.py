"""Judgments are bound like bundles (issue 34 item 2).

The attack: a hand-written judgments.json (one made-up judge, an all-zero prompt digest) dropped into a
signed committed bundle turned dimensions 4 and 5 from not judged to pass in `grade`, and `grade --stage
release` from exit 1 to 0. Now it changes no grade in `grade`, `grade --stage release` or `evidence`, and is
named; the same file signed by a base key over this bundle's seal counts; signed by a foreign key, edited
after signing, or moved to another bundle, it is named and ignored again."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.content import config
from skill_eval.content.evals import load_rubric
from skill_eval.core import seal
from skill_eval.grading import judgments

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")
EV = "agent-evals/skills/evidence"


def committed_bundle(root: Path) -> Path:
    """A committed, signed, behavioural skill-agent bundle of the copied host."""
    for meta in sorted((root / EV).rglob("meta.json")):
        data = json.loads(meta.read_text())
        if data.get("kind") == "behavioral" and data.get("arm") == "skill-agent":
            return meta.parent
    raise AssertionError("no behavioural bundle")


def planted(root: Path) -> dict:
    version = load_rubric(config.load(root)).version
    return {"schema_version": 3, "judgments": [
        {"dimension": d, "passed": True, "score": 1, "judge_model": "totally-real-judge", "judge_version": "1",
         "judge_source": "remote:api.example.invalid", "rubric_version": version, "prompt_sha256": "0" * 64,
         "rationale": "great", "judged_at": "2026-12-04T00:00:00Z"} for d in (4, 5)]}


def grade(root: Path, bundle: Path, capsys, *extra: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    rc = main(["grade", "--root", str(root), str(bundle), "--json", *extra])
    out = capsys.readouterr().out
    return rc, json.loads(out), out


def dims(payload: dict) -> dict[str, str]:
    return {d: payload["dimensions"][d]["status"] for d in ("4", "5") if d in payload["dimensions"]}


def test_a_planted_judgments_file_changes_no_grade(repo_copy: Path, capsys):
    b = committed_bundle(repo_copy)
    before = {stage: grade(repo_copy, b, capsys, "--stage", stage) for stage in ("merge", "release")}
    assert set(dims(before["merge"][1]).values()) == {"not_judged"}
    assert before["release"][0] == 1
    (b / judgments.JUDGMENTS).write_text(json.dumps(planted(repo_copy)))
    for stage in ("merge", "release"):
        rc, payload, _ = grade(repo_copy, b, capsys, "--stage", stage)
        assert dims(payload) == dims(before[stage][1]), stage
    assert grade(repo_copy, b, capsys, "--stage", "release")[0] == 1  # still not judged: still incomplete
    capsys.readouterr()
    main(["grade", "--root", str(repo_copy), str(b)])
    assert "judgments: IGNORED — judgments.json has no judgments.sig" in capsys.readouterr().out
    capsys.readouterr()
    main(["evidence", "--root", str(repo_copy), "--json"])
    errors = json.loads(capsys.readouterr().out)["errors"]
    rel = b.relative_to(repo_copy / EV).as_posix()
    assert [e for e in errors if e.startswith(f"judgments: evidence/{rel}: judgments.json has no judgments.sig")], errors


def test_judgments_signed_by_a_base_key_over_this_seal_count_and_nothing_else_does(
        repo_copy: Path, capsys, test_signing_key: tuple[Path, str], tmp_path: Path):
    b = committed_bundle(repo_copy)
    (b / judgments.JUDGMENTS).write_text(json.dumps(planted(repo_copy)))
    assert judgments.sign(b, test_signing_key[0])  # the tests' key is allowed at the base (repo_copy commits it)
    assert set(dims(grade(repo_copy, b, capsys)[1]).values()) == {"pass"}
    # edited after signing
    doc = planted(repo_copy)
    doc["judgments"][0]["rationale"] = "edited"
    (b / judgments.JUDGMENTS).write_text(json.dumps(doc))
    _, payload, _ = grade(repo_copy, b, capsys)
    assert set(dims(payload).values()) == {"not_judged"}
    # signed by a key the base does not name
    other = tmp_path / "mallory"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    judgments.sign(b, other)
    found = judgments.read_judgments(b, seal.load_allowed_signers(repo_copy / "agent-evals/skills/allowed_signers"))
    assert found.state == "invalid" and "not in allowed_signers" in (found.reason or "")
    # a valid pair moved to another bundle: bound to the first bundle's seal
    judgments.sign(b, test_signing_key[0])
    metas = sorted((repo_copy / EV).rglob("meta.json"))
    c = next(m.parent for m in metas if m.parent != b and json.loads(m.read_text()).get("kind") == "behavioral")
    for name in (judgments.JUDGMENTS, judgments.SIG):
        shutil.copy2(b / name, c / name)
    found = judgments.read_judgments(c, seal.load_allowed_signers(repo_copy / "agent-evals/skills/allowed_signers"))
    assert found.state == "invalid" and found.doc is None, found


def test_bad_judgments_bytes_are_ignored_never_a_crash(tmp_path: Path):
    b = tmp_path / "b"
    b.mkdir()
    for data in (b"\xff\xfe", b'{"schema_version": 3', b"[]", b'{"schema_version": 99, "judgments": []}'):
        (b / judgments.JUDGMENTS).write_bytes(data)
        found = judgments.read_judgments(b, ())
        assert found.state == "invalid" and found.doc is None and found.reason


def test_release_stage_refuses_to_judge_without_a_key(mini_repo: Path, monkeypatch, capsys):
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    rc = main(["release", "stage", "--root", str(mini_repo), "--session", "s1", "--out", str(mini_repo / "build"),
               "--from-session", "--judge-model-server", "scripted:x.yaml", "--judge-model-server", "scripted:y.yaml"])
    assert rc == 2 and f"{seal.KEY_ENV} is not set" in capsys.readouterr().err
