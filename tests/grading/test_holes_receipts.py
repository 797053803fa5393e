"""Issue 25 item 3: facts.json receipts compared whole (oracles.digest_problems).

The example host's committed bundle is copied and one digest edited: every edit must fail the
`receipt:facts` sub-check (and so the `oracle` check) with a one-line reason naming facts.json
and the field, and the untouched copy must pass. What the bundle can re-derive is compared
(chains between actions, HEAD across an unchanged git state, one tree = one set of changed
paths and watched-file digests, stored blobs, `git rev-parse HEAD` and `git diff --quiet`
output); what it cannot (other stream digests, every seed stream) is checked for form:
64 hex, never a placeholder such as "0" * 64.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_holes_bundle import committed  # the one HEAD-copy helper of the hole tests

from skill_eval.content import config
from skill_eval.grading.graders import RECEIPT, Catalog, grade_bundle

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "examples" / "towncrier-notes"
GOOD = (HOST / "agent-evals" / "skills" / "evidence" / "build-release-notes" / "skill-agent" / "claude-code-scripted"
        / "notes-untracked-fragment" / "0")
OTHER = "ab" * 32


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog(config.load(HOST))


def copy(tmp: Path) -> Path:
    return committed(GOOD, tmp)


def edit_facts(path: Path, change: Any) -> None:
    facts = json.loads((path / "facts.json").read_text())
    change(facts)
    (path / "facts.json").write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")


def test_the_committed_receipt_is_what_these_edits_assume(catalog, tmp_path):
    path = copy(tmp_path)
    facts = json.loads((path / "facts.json").read_text())
    assert [a["argv"][:2] for a in facts["actions"]] == [["git", "diff"], ["git", "diff"], ["git", "rev-parse"]]
    g = grade_bundle(path, catalog)
    assert g.passed() and g.checks[RECEIPT].status == "pass", g.to_json()


def _action(i: int, **over: Any) -> Any:
    return lambda f: f["actions"][i].update(over)


def _seed_cmd(i: int, **over: Any) -> Any:
    return lambda f: f["seed"]["commands"][i].update(over)


EDITS = [
    ("zeroed stdout", _action(0, stdout_sha256="0" * 64), "actions[0].stdout_sha256 is '0000000000000000'…, not a 64-hex"),
    ("zeroed stderr", _action(1, stderr_sha256="0" * 64), "actions[1].stderr_sha256 is '0000000000000000'"),
    ("placeholder tree", _action(2, tree_after="f" * 64), "actions[2].tree_after is 'ffffffffffffffff'"),
    ("placeholder git", _action(0, git_before="0" * 64), "actions[0].git_before is '0000000000000000'"),
    ("placeholder file digest", lambda f: f["actions"][0]["files"].update({"PROVENANCE": "0" * 64}),
     "actions[0].files['PROVENANCE'] is '0000000000000000'"),
    ("placeholder head", _action(1, head="0" * 40), "actions[1].head is '0000000000000000'…, not a 40/64-hex commit id"),
    ("zeroed seed stdout", _seed_cmd(3, stdout_sha256="0" * 64), "seed.commands[3].stdout_sha256 is '0000000000000000'"),
    ("zeroed seed stderr", _seed_cmd(0, stderr_sha256="0" * 64), "seed.commands[0].stderr_sha256"),
    ("placeholder seed tree", lambda f: f["seed"].update(tree_after="0" * 64), "seed.tree_after is '0000000000000000'"),
    ("placeholder seed head", lambda f: f["seed"].update(head="0" * 40), "seed.head is '0000000000000000'"),
    ("git diff --quiet printed", _action(0, stdout_sha256=OTHER),
     "action 0's stdout_sha256 is not the digest of what git diff --quiet HEAD prints: nothing"),
    ("rev-parse printed another head", _action(2, stdout_sha256=OTHER),
     "action 2's stdout_sha256 is not the digest of what git rev-parse --verify HEAD prints: HEAD"),
    ("tree chain", _action(1, tree_before=OTHER), "action 1's tree_before is not action 0's tree_after"),
    ("git chain", _action(2, git_before=OTHER), "action 2's git_before is not action 1's git_after"),
    ("head moved with git unchanged", _action(2, head="1" * 39 + "2"), "action 2's head differs from action 1's"),
    ("changed paths", _action(1, changed_paths=["CHANGELOG.md"]), "end in the same tree_after but record different"),
    ("watched file", lambda f: f["actions"][2]["files"].update({"PROVENANCE": OTHER}),
     "end in the same tree_after but record different changed_paths or watched-file digests"),
    ("validation from empty stdout", _action(0, validation={"passed": True}),
     "action 0 records a validation result but an empty stdout"),
]


@pytest.mark.parametrize("what,change,needle", EDITS, ids=[e[0] for e in EDITS])
def test_every_digest_of_the_receipt_is_compared(what, change, needle, tmp_path, catalog):
    path = copy(tmp_path)
    edit_facts(path, change)
    g = grade_bundle(path, catalog)
    receipt = g.checks[RECEIPT]
    assert receipt.failed and g.checks["oracle"].failed and not g.passed(), g.to_json()
    assert any(needle in r for r in receipt.reasons), (needle, receipt.reasons)
    assert all(r.startswith("facts.json") and "\n" not in r for r in receipt.reasons), receipt.reasons


def test_a_watched_files_blob_must_be_stored_intact(tmp_path, catalog):
    path = copy(tmp_path)
    blob = sorted((path / "facts" / "blobs").iterdir())[0]
    blob.write_bytes(blob.read_bytes() + b"x")
    receipt = grade_bundle(path, catalog).checks[RECEIPT]
    assert receipt.failed and any(f"facts/blobs/{blob.name}" in r and "not stored intact" in r for r in receipt.reasons)


@pytest.mark.parametrize("change,field", [
    (_action(0, validation={"passed": True, "by": "agent"}), "validation"),
    (_action(0, head="HEAD"), "head"),
    (lambda f: f["seed"].update(head="main"), "head"),
    (_action(0, changed_paths=[""]), "changed_paths"),
], ids=["validation key", "action head", "seed head", "empty path"])
def test_the_facts_schema_is_strict(change, field, tmp_path, catalog):
    path = copy(tmp_path)
    edit_facts(path, change)
    receipt = grade_bundle(path, catalog).checks[RECEIPT]
    assert receipt.failed and receipt.reasons[0].startswith("facts.json: does not match schemas/facts.schema.json")
    assert field in receipt.reasons[0]
