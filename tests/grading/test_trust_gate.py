"""A pull request cannot vouch for itself (issue 34 item 1), shown with `pr` on a copy of the towncrier
example host (signed committed evidence) in a subfolder of a fresh repository, on a feature branch:

- adding a key to allowed_signers and re-signing an edited bundle with it fails (forged: the key is not
  the base's), the key addition named as a trust change;
- setting `signatures = "warn"` and deleting a bundle's seal fails (the base names a key, so a bundle the
  change modifies must be signed, whatever `signatures` says);
- the same branch without the attack passes: a bundle re-signed by a key the base allows, or the policy
  edit alone (named as a finding, in force once merged).
And bad bytes in a seal are a forged line naming the bundle and file, exit 1, never exit 3."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.core import seal

REPO = Path(__file__).resolve().parents[2]
HOST = "examples/towncrier-notes"
PARTS = ("skill-eval.toml", "skills-src", ".agents", ".claude", "agent-evals", "pyproject.toml")

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def branch(tmp_path: Path, test_signing_key: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The towncrier host at examples/towncrier-notes of a repository whose `main` allows the tests' key
    (besides founders@skill-eval), checked out on a feature branch."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    monkeypatch.delenv("SKILL_EVAL_BASE", raising=False)
    repo = tmp_path / "repo"
    host = repo / HOST
    host.mkdir(parents=True)
    for part in PARTS:
        src = REPO / HOST / part
        if src.is_dir():
            shutil.copytree(src, host / part, symlinks=True)
        elif src.exists():
            shutil.copy2(src, host / part)
    with (host / "agent-evals/skills/allowed_signers").open("a") as fh:
        fh.write(test_signing_key[1] + "\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    return host


def a_bundle(host: Path) -> tuple[Path, str]:
    ev = host / "agent-evals/skills/evidence"
    b = sorted(ev.rglob("meta.json"))[0].parent
    return b, b.relative_to(ev).as_posix()


def resign(bundle: Path, rel: str, key: Path) -> None:
    (bundle / seal.SEAL).unlink()
    (bundle / seal.SIG).unlink()
    seal.seal_tree(bundle, rel, None, key)


def pr(host: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["pr", "--root", str(host), "--only", "evidence"])
    return rc, capsys.readouterr().out


def test_a_key_added_by_the_change_cannot_sign_an_edited_bundle(branch: Path, tmp_path: Path, capsys):
    mallory = tmp_path / "mallory"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "mallory", "-f", str(mallory)], check=True)
    with (branch / "agent-evals/skills/allowed_signers").open("a") as fh:
        fh.write('mallory@example.invalid namespaces="skill-eval-evidence" '
                 + " ".join(mallory.with_suffix(".pub").read_text().split()[:2]) + "\n")
    bundle, rel = a_bundle(branch)
    (bundle / "final.md").write_text("A different answer, written by hand.\n")
    resign(bundle, rel, mallory)
    git(branch.parents[1], "commit", "-qam", "re-signed with my own key")
    rc, out = pr(branch, capsys)
    assert rc == 1, out
    assert f"FAIL forged: evidence/{rel}: seal.sig is signed by a key that is not in allowed_signers" in out, out
    assert "TRUST CHANGE (takes effect once merged, not in this check): allowed_signers adds mallory@example.invalid" in out


def test_warn_plus_a_deleted_seal_fails(branch: Path, capsys):
    cfg = branch / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace('signatures = "require"', 'signatures = "warn"'))
    bundle, rel = a_bundle(branch)
    (bundle / seal.SEAL).unlink()
    (bundle / seal.SIG).unlink()
    git(branch.parents[1], "commit", "-qam", "loosen and unseal")
    rc, out = pr(branch, capsys)
    assert rc == 1, out
    assert f"FAIL unsigned: evidence/{rel}: no seal.json/seal.sig" in out, out
    assert "evals.signatures require -> warn (loosened)" in out


def test_warn_alone_and_a_deleted_seal_alone_both_meet_the_same_rule(branch: Path, capsys):
    """Even merged, `warn` does not let a change unseal a bundle while the base names a key."""
    repo = branch.parents[1]
    cfg = branch / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace('signatures = "require"', 'signatures = "warn"'))
    git(repo, "commit", "-qam", "loosen")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "feature")
    git(repo, "checkout", "-q", "-b", "unseal")
    bundle, rel = a_bundle(branch)
    (bundle / seal.SEAL).unlink()
    (bundle / seal.SIG).unlink()
    rc, out = pr(branch, capsys)
    assert rc == 1 and f"FAIL unsigned: evidence/{rel}" in out and "the base (main) names a key" in out, out


def test_the_same_branch_without_the_attack_passes(branch: Path, test_signing_key: tuple[Path, str], capsys):
    bundle, rel = a_bundle(branch)
    resign(bundle, rel, test_signing_key[0])  # re-signed by a key the base allows
    cfg = branch / "skill-eval.toml"
    cfg.write_text(cfg.read_text().replace('signatures = "require"', 'signatures = "warn"'))  # a finding, not a failure
    git(branch.parents[1], "commit", "-qam", "re-signed by an allowed key")
    rc, out = pr(branch, capsys)
    assert rc == 0, out
    assert "trust policy from main (" in out and "TRUST CHANGE" in out and "tests@skill-eval (1)" in out


def test_a_flipped_bit_in_seal_sig_is_forged_exit_1_never_an_internal_error(branch: Path, capsys):
    bundle, rel = a_bundle(branch)
    sig = bytearray((bundle / seal.SIG).read_bytes())
    sig[len(sig) // 2] ^= 0x04
    (bundle / seal.SIG).write_bytes(bytes(sig))
    capsys.readouterr()
    assert main(["grade", "--root", str(branch), str(bundle)]) == 1
    assert "seal: FORGED — seal.sig does not verify" in capsys.readouterr().out
    assert main(["evidence", "--root", str(branch), "--json"]) == 1
    errors = json.loads(capsys.readouterr().out)["errors"]
    assert [e for e in errors if e.startswith(f"forged: evidence/{rel}: seal.sig does not verify")], errors


def test_ci_with_no_base_is_exit_2_naming_the_fetch(branch: Path, capsys, monkeypatch: pytest.MonkeyPatch):
    repo = branch.parents[1]
    git(repo, "checkout", "-q", "--detach")
    git(repo, "branch", "-q", "-D", "main", "feature")
    monkeypatch.setenv("CI", "true")
    capsys.readouterr()
    assert main(["pr", "--root", str(branch), "--only", "evidence"]) == 2
    err = capsys.readouterr().err
    assert "no base to read the trust policy from" in err and "git fetch" in err, err
