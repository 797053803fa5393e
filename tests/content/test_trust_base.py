"""The trust policy comes from the base, not from the change (issue 34 item 1).

Base resolution (core/gitrepo.resolve_base) for a one-commit repository, a depth-1 clone, a clone with no
remote and a host in a subfolder; CI with no base is exit 2 naming the fetch; every edit of the trust
files is a finding of its own and changes nothing until merged (content/trust.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from skill_eval.content import config, trust
from skill_eval.core import gitrepo
from skill_eval.core.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
HOST = "examples/towncrier-notes"
NO_CI = {"PATH": "/usr/bin:/bin"}

# the committed trust root: the founders' keys (agent-evals/skills/allowed_signers)
FOUNDERS = ["founders@skill-eval", "founders-2026-12@skill-eval"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def keyline(tmp: Path, name: str) -> str:
    key = tmp / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
    return f'{name}@example.invalid namespaces="skill-eval-evidence" ' + " ".join(key.with_suffix(".pub").read_text().split()[:2])


@pytest.fixture
def sub_host(tmp_path: Path) -> Path:
    """A one-commit repository on `main` whose skill-eval host sits in a subfolder (the towncrier example's
    config and allowed_signers; no evidence)."""
    repo = tmp_path / "repo"
    host = repo / HOST
    host.mkdir(parents=True)
    shutil.copy2(REPO / HOST / "skill-eval.toml", host / "skill-eval.toml")
    (host / "agent-evals/skills").mkdir(parents=True)
    shutil.copy2(REPO / HOST / "agent-evals/skills/allowed_signers", host / "agent-evals/skills/allowed_signers")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one commit")
    return host


def base_of(root: Path, env: dict[str, str] | None = None, explicit: str | None = None) -> gitrepo.Base | None:
    return gitrepo.resolve_base(root, explicit, {**NO_CI, **(env or {})})


def test_a_one_commit_repository_on_its_default_branch_is_its_own_base_printed_as_head(sub_host: Path):
    base = base_of(sub_host)
    assert base is not None and base.ref == "HEAD" and "on the default branch main with no upstream" in base.how
    pol = trust.load(config.load(sub_host), None, NO_CI)
    assert pol.label.startswith("HEAD (") and [s.principal for s in pol.signers] == FOUNDERS


def test_a_feature_branch_reads_local_main_and_a_subfolder_host_its_own_files(sub_host: Path, tmp_path: Path):
    repo = sub_host.parents[1]
    git(repo, "checkout", "-q", "-b", "feature")
    signers = sub_host / "agent-evals/skills/allowed_signers"
    signers.write_text(signers.read_text() + keyline(tmp_path, "mallory") + "\n")
    cfg_file = sub_host / "skill-eval.toml"
    cfg_file.write_text(cfg_file.read_text().replace('signatures = "require"', 'signatures = "warn"'))
    git(repo, "commit", "-qam", "the change vouches for itself")
    pol = trust.load(config.load(sub_host), None, NO_CI)
    assert pol.base is not None and pol.base.ref == "main" and "local default branch" in pol.base.how
    assert [s.principal for s in pol.signers] == FOUNDERS  # mallory's key is not trusted
    assert pol.signatures == "require"  # the loosening takes effect once merged, not here
    assert any("evals.signatures require -> warn (loosened)" in f for f in pol.findings), pol.findings
    assert any(f.startswith("allowed_signers adds mallory@example.invalid") for f in pol.findings), pol.findings


def test_a_depth_1_clone_reads_the_upstream_default_branch(sub_host: Path, tmp_path: Path):
    repo = sub_host.parents[1]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)], check=True)
    git(clone, "checkout", "-q", "-b", "feature")
    base = base_of(clone / HOST)
    assert base is not None and base.ref == "origin/main" and base.how == "the upstream default branch"
    assert base.commit == git(repo, "rev-parse", "HEAD")
    pol = trust.load(config.load(clone / HOST), None, NO_CI)
    assert [s.principal for s in pol.signers] == FOUNDERS


def test_a_clone_with_no_remote_reads_local_main(sub_host: Path, tmp_path: Path):
    repo = sub_host.parents[1]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", f"file://{repo}", str(clone)], check=True)
    git(clone, "remote", "remove", "origin")
    assert base_of(clone / HOST).ref == "HEAD"  # type: ignore[union-attr]
    git(clone, "checkout", "-q", "-b", "feature")
    assert base_of(clone / HOST).ref == "main"  # type: ignore[union-attr]


def test_a_pull_request_reads_its_target_and_names_the_fetch_when_it_is_missing(sub_host: Path):
    repo = sub_host.parents[1]
    git(repo, "update-ref", "refs/remotes/origin/release", "HEAD")
    base = base_of(sub_host, {"GITHUB_BASE_REF": "release", "CI": "true"})
    assert base is not None and base.ref == "origin/release" and "GITHUB_BASE_REF" in base.how
    with pytest.raises(ConfigError) as exc:
        base_of(sub_host, {"GITHUB_BASE_REF": "stable", "CI": "true"})
    assert exc.value.exit_code == 2 and "git fetch --no-tags --depth=1 origin +refs/heads/stable" in (exc.value.fix or "")


def test_ci_with_no_resolvable_base_is_exit_2_naming_the_fetch_never_the_work_tree(sub_host: Path):
    repo = sub_host.parents[1]
    git(repo, "checkout", "-q", "--detach")
    git(repo, "branch", "-q", "-D", "main")
    assert base_of(sub_host) is None  # off CI: no base, so no trust root (below)
    with pytest.raises(ConfigError) as exc:
        base_of(sub_host, {"CI": "true"})
    assert exc.value.exit_code == 2 and "git fetch" in (exc.value.fix or "")
    pol = trust.load(config.load(sub_host), None, NO_CI)
    assert pol.signers == () and "no trust root" in pol.no_root_reason()


def test_a_named_base_wins_and_a_bad_one_is_a_usage_error(sub_host: Path):
    repo = sub_host.parents[1]
    first = git(repo, "rev-parse", "HEAD")
    assert base_of(sub_host, {gitrepo.BASE_ENV: first[:10]}).commit == first  # type: ignore[union-attr]
    assert base_of(sub_host, explicit="main").how == "--base"  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="not a commit"):
        base_of(sub_host, explicit="no-such-branch")


def test_no_allowed_signers_at_the_base_means_no_trust_root_even_if_the_change_adds_one(sub_host: Path):
    repo = sub_host.parents[1]
    signers = sub_host / "agent-evals/skills/allowed_signers"
    text = signers.read_text()
    signers.unlink()
    git(repo, "commit", "-qam", "no trust root yet")
    git(repo, "checkout", "-q", "-b", "bootstrap")
    signers.write_text(text)
    pol = trust.load(config.load(sub_host), None, NO_CI)
    assert pol.signers == ()
    assert pol.unsigned_problem("a/b/c/d/0", "merge", "no trust root (no allowed_signers at the base): a seal "
                                "proves nothing until one is merged") == "no trust root at main: land allowed_signers alone first"
    assert any(f.startswith("allowed_signers adds founders@skill-eval") for f in pol.findings)


def test_outside_a_repository_nothing_is_trusted(tmp_path: Path):
    shutil.copy2(REPO / HOST / "skill-eval.toml", tmp_path / "skill-eval.toml")
    (tmp_path / "agent-evals/skills").mkdir(parents=True)
    shutil.copy2(REPO / HOST / "agent-evals/skills/allowed_signers", tmp_path / "agent-evals/skills/allowed_signers")
    pol = trust.load(config.load(tmp_path), None, {"CI": "true", "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert pol.base is None and pol.signers == () and pol.signatures == "require"


def test_every_edit_of_allowed_signers_is_named(sub_host: Path, tmp_path: Path):
    """principals added or removed, validity or namespaces changed: one finding each."""
    repo = sub_host.parents[1]
    signers = sub_host / "agent-evals/skills/allowed_signers"
    extra = keyline(tmp_path, "carol")
    signers.write_text(signers.read_text() + extra + "\n")
    git(repo, "commit", "-qam", "carol")
    git(repo, "checkout", "-q", "-b", "feature")
    text = signers.read_text().replace('valid-after="20261203Z"', 'valid-after="20200101Z"')
    signers.write_text("\n".join(line for line in text.splitlines() if "carol" not in line) + "\n")
    findings = trust.load(config.load(sub_host), None, NO_CI).findings
    assert any(f.startswith("allowed_signers removes carol@example.invalid") for f in findings), findings
    assert any(f.startswith("allowed_signers changes founders@skill-eval") and "valid after 2020-01-01" in f
               for f in findings), findings
