"""Property tests over the committed, signed evidence (issue 25 item 4).

1. Any single edit of any sealed file of a committed bundle, not re-signed, fails verification naming
   that file (a byte flipped, a byte appended, the file removed).
2. An edit that *is* re-signed by an allowed key (a signer lying about what it saw) still fails grading
   where the rubric says so: the seal binds who recorded, the graders judge what was recorded.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.core import seal, stored

REPO = Path(__file__).resolve().parents[2]
HOSTS = [REPO / "agent-evals/skills", REPO / "examples/towncrier-notes/agent-evals/skills"]


def committed() -> list[tuple[Path, Path]]:
    """(evals root, bundle) of every committed bundle of both hosts."""
    return [(h, m.parent) for h in HOSTS for m in sorted((h / "evidence").rglob("meta.json")) if ".held" not in m.parts]


def test_every_committed_bundle_is_signed_by_an_allowed_key():
    bundles = committed()
    assert len(bundles) > 200
    for host, b in bundles:
        v = seal.verify(b, b.relative_to(host / "evidence").as_posix(), seal.load_allowed_signers(host / "allowed_signers"))
        assert v.state == "signed", (b, v)


@pytest.mark.parametrize("how", ["flip", "append", "remove"])
def test_any_unsigned_edit_of_any_sealed_file_fails_naming_it(tmp_path: Path, how: str):
    rng = random.Random(f"seal-{how}")
    sample = rng.sample(committed(), 12)
    for host, b in sample:
        signers = seal.load_allowed_signers(host / "allowed_signers")
        rel = b.relative_to(host / "evidence").as_posix()
        files = sorted(json.loads((b / seal.SEAL).read_text())["files"])
        for name in files:
            copy = tmp_path / how / rel
            shutil.rmtree(copy, ignore_errors=True)
            stored.materialize(b, copy)  # every sealed file plain (compacted forms: tests/core/test_stored.py)
            target = copy / name
            data = target.read_bytes()
            if how == "flip" and data:
                i = rng.randrange(len(data))
                target.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
            elif how == "append" or not data:
                target.write_bytes(data + b" ")
            else:
                target.unlink()
            v = seal.verify(copy, rel, signers)
            assert v.state == "invalid" and name in (v.reason or ""), (rel, name, v)


def test_a_re_signed_lie_still_fails_grading(repo_copy: Path, test_signing_key, capsys):
    """A skill-agent bundle whose claim is flipped from BREAKING to COMPATIBLE and re-sealed by an allowed
    key verifies as signed, and fails the dimensions the rubric ties to the claim (2 and 6)."""
    key, _line = test_signing_key
    evidence = repo_copy / "agent-evals/skills/evidence"
    b = next(m.parent for m in sorted(evidence.glob("abi-compat-review/skill-agent/*/review-removed-export/0/meta.json")))
    claim = json.loads((b / "claim.json").read_text())
    assert claim["claim"]["verdict"] == "BREAKING"
    claim["claim"]["verdict"] = "COMPATIBLE"
    (b / "claim.json").write_text(json.dumps(claim, indent=2, sort_keys=True) + "\n")
    final = (b / "final.md").read_text()
    (b / "final.md").write_text(final.replace('"verdict": "BREAKING"', '"verdict": "COMPATIBLE"'))
    (b / seal.SEAL).unlink()
    (b / seal.SIG).unlink()
    rel = b.relative_to(evidence).as_posix()
    seal.seal_tree(b, rel, None, key)
    signers = seal.load_allowed_signers(repo_copy / "agent-evals/skills/allowed_signers")
    assert seal.verify(b, rel, signers).state == "signed"
    capsys.readouterr()
    assert main(["grade", "--root", str(repo_copy), "--json", str(b)]) == 1
    result = json.loads(capsys.readouterr().out)
    assert {"2", "6"} & {str(d) for d in result["failed_dimensions"]}, result["failed_dimensions"]
    assert result["seal"]["state"] == "signed"
