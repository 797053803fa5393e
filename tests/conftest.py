"""Shared fixtures: a small synthetic host repository, and a copy of this repository.

Tests mirror the package's folders (tests/core/ for skill_eval/core/, tests/harness/runner/ for
skill_eval/harness/runner/, ...); tests that cut across layers, and the helper modules, stay here.
Every test folder is importable by module name, as this one is, so a test may use another's
helpers (`from test_evidence import ...`): test module names are unique across the folders.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
for _folder in sorted({p.parent for p in TESTS.rglob("test_*.py") if "data" not in p.relative_to(TESTS).parts}):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

MINI_CONFIG = """\
schema_version = 1
[skills]
source = "skills-src"
published = [".agents/skills", ".claude/skills"]
[evals]
root = "evals"
k = 3
harness = ["evals/prompts"]
tool_harness = false
[subject]
name = "tool"
verdicts = ["OK", "RISK", "BROKEN"]
green = ["OK"]
evidence_commands = ["compare"]
suppression_flags = ["--suppress"]
scoping_flags = ["--used-by"]
[subject.exit_codes]
0 = "green"
4 = "BROKEN"
16 = "not_comparable"
[subject.report]
format = "json"
verdict_path = "verdict"
[subject.outputs]
format_dest = ["-o"]
[subject.surface]
cli_reference = "evals/surface/cli.json"
files = ["evals/surface/cli.json"]
[subject.invocation_classes.single-pair]
command = "compare"
[thresholds]
trigger_min_precision = 0.5
trigger_min_recall = 0.5
trigger_min_negative_accuracy = 0.5
"""


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def git_commit_all(root: Path, message: str = "snapshot") -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", message)


@pytest.fixture
def mini_repo(tmp_path: Path) -> Path:
    """Two skills (alpha cites shared/a.md which cites shared/b.md; beta cites nothing),
    three scenarios, a corpus with a negative, a rubric, a CLI reference, generated trees and pack."""
    root = tmp_path / "host"
    root.mkdir()
    git(root, "init", "-q")
    write(root, "skill-eval.toml", MINI_CONFIG)
    write(root, "skills-src/alpha/SKILL.md", """\
        ---
        name: alpha
        description: Compare two builds of a widget library with the tool and report widget breakage.
        ---
        # Alpha
        Read [the contract](../shared/a.md) and [details](references/details.md).

        ```bash
        tool compare old.w new.w -o json=report.json
        ```
        """)
    write(root, "skills-src/alpha/references/details.md", "Details. Back to [skill](../SKILL.md).\n")
    write(root, "skills-src/beta/SKILL.md", """\
        ---
        name: beta
        description: Explain which gadget consumers are affected by a gadget library change, using used-by scoping.
        ---
        # Beta
        Run `tool compare --used-by app old new`.
        """)
    write(root, "skills-src/shared/a.md", "Contract. See [b](./b.md).\n")
    write(root, "skills-src/shared/b.md", "Fragment b.\n")
    write(root, "evals/prompts/behavioral.md", "{prompt}\n")
    write(root, "evals/fixtures/case-one/old.w", "old\n")
    write(root, "evals/fixtures/case-one/new.w", "new\n")
    write(root, "evals/fixtures/case-two/old.w", "same\n")
    write(root, "evals/fixtures/case-two/new.w", "same\n")
    truth = {
        "schema_version": 1,
        "subject": "tool 1.0",
        "cases": {
            "case-one": {"description": "break", "old": "old.w", "new": "new.w", "expected": "BROKEN", "expected_exit": 4,
                          "expected_kinds": ["removed"], "min_evidence": ["full"], "platforms": ["any"]},
            "case-two": {"description": "same", "old": "old.w", "new": "new.w", "expected": "OK", "expected_exit": 0,
                          "expected_kinds": [], "min_evidence": ["full"], "platforms": ["any"]},
        },
    }
    write(root, "evals/ground_truth.json", json.dumps(truth, indent=2))
    write(root, "evals/scenarios.yaml", """\
        schema_version: 1
        scenarios:
          - {id: alpha-break, skill: alpha, category: A, status: ready, prompt: "does it break?", fixture: case-one, invocation_class: single-pair}
          - {id: alpha-same, skill: alpha, category: A, status: ready, prompt: "same?", fixture: case-two, invocation_class: single-pair, probe: evidence-free}
          - {id: beta-unsure, skill: beta, category: B, status: ready, prompt: "consumer?", fixture: case-one, invocation_class: single-pair,
             expected: {verdict: null, uncertainty: not_comparable}}
        """)
    write(root, "evals/trigger_corpus.yaml", """\
        schema_version: 1
        prompts:
          - {id: p-alpha, prompt: "did the widget library build break widgets?", expected_skill: alpha}
          - {id: p-beta, prompt: "which gadget consumers are affected?", expected_skill: beta}
          - {id: n-sql, prompt: "write a SQL migration for the orders table", expected_skill: null}
        """)
    write(root, "evals/rubric.yaml", (REPO / "src/skill_eval/templates/init/agent-evals/skills/rubric.yaml").read_text())
    write(root, "evals/surface/cli.json", json.dumps({"schema_version": 1, "tool": "tool", "version": "1.0", "commands": {
        "": {"options": ["--help", "--version"]}, "compare": {"options": ["--help", "-o", "--output", "--used-by", "--suppress"]}}}))
    from skill_eval.content import config, generate, pack

    cfg = config.load(root)
    generate.write_published(cfg)
    pack.write(cfg)
    git_commit_all(root, "initial")
    return root


REPO_PARTS = ("skill-eval.toml", "skills-src", ".agents", ".claude", "agent-evals", "pyproject.toml")


def copy_host(root: Path) -> Path:
    """This repository's host content (not its source) copied into `root`."""
    for part in REPO_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, root / part, symlinks=True)
        elif src.exists():
            shutil.copy2(src, root / part)
    return root


@pytest.fixture(scope="session")
def test_signing_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An evidence signing key the tests generate (docs/SIGNING.md): (private key, allowed_signers line)."""
    key = tmp_path_factory.mktemp("signing") / "evidence_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tests", "-f", str(key)], check=True)
    pub = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    return key, f'tests@skill-eval namespaces="skill-eval-evidence" {pub}'


def allow_test_key(root: Path, line: str, evals_root: str = "agent-evals/skills") -> None:
    """Let the tests' key sign evidence in a copied host (its committed signers stay as they are)."""
    path = root / evals_root / "allowed_signers"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")


@pytest.fixture(scope="session")
def repo_template(tmp_path_factory: pytest.TempPathFactory, test_signing_key: tuple[Path, str]) -> Path:
    """`repo_copy`'s source, built once per test process: the host content copied, the tests' key allowed,
    committed and packed (one pack file copies faster than thousands of loose objects)."""
    root = tmp_path_factory.mktemp("template") / "repo"
    root.mkdir()
    copy_host(root)
    allow_test_key(root, test_signing_key[1])
    git(root, "init", "-q")
    git_commit_all(root, "copy")
    git(root, "gc", "-q", "--prune=now")
    return root


@pytest.fixture
def repo_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo_template: Path,
              test_signing_key: tuple[Path, str]) -> Path:
    """A copy of this repository's host content (not its source), committed in a fresh git repo; runs
    in it are signed by the tests' key, which its allowed_signers accepts. A plain copy of the session's
    template (work tree and .git): every test gets its own files, none shared."""
    root = tmp_path / "repo"
    subprocess.run(["cp", "-a", str(repo_template), str(root)], check=True)  # ~5x shutil.copytree's speed here
    monkeypatch.setenv("SKILL_EVAL_SIGNING_KEY", str(test_signing_key[0]))
    return root
