"""Issue 25 item 3: holes found by fuzzing committed bundles, each closed and proven here.

Every test copies a committed good bundle to tmp, makes one edit, and grades it against the
repository's own catalog: the edit must fail (with a one-line reason naming the file and the
field), and the untouched copy must still pass. Holes: an input entry whose fields disagree
with each other, with argv or with the fixture; a duplicated `outputs` entry; a meta identity
(`skill`) that is not the scenario's (behavioural) or not null (trigger).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from skill_eval.content import config
from skill_eval.core import stored
from skill_eval.grading import bundle as bundle_mod
from skill_eval.grading.graders import Catalog, grade_bundle

REPO = Path(__file__).resolve().parents[2]
EVIDENCE = REPO / "agent-evals" / "skills" / "evidence"
REVIEW = EVIDENCE / "abi-compat-review" / "skill-agent" / "claude-code-scripted" / "review-changed-signature" / "0"
SCOPED = EVIDENCE / "abi-consumer-impact" / "skill-agent" / "claude-code-scripted" / "consumer-plugin-required-symbol" / "0"
NEGATIVE = EVIDENCE / "trigger" / "skill-agent" / "claude-code-scripted" / "neg-db-migration" / "0"
POSITIVE = EVIDENCE / "trigger" / "skill-agent" / "claude-code-scripted" / "review-deleted-function" / "0"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog(config.load(REPO))


def copy(src: Path, tmp: Path) -> Path:
    return committed(src, tmp)


def committed(rel: Path, dest: Path) -> Path:
    """The bundle at `rel` as committed (HEAD), not as the working tree has it now (evidence may be
    re-recorded while tests run), without its seal files."""
    rel_s = rel.relative_to(REPO).as_posix()
    evidence = next(p for p in rel.parents if p.name == "evidence")  # this bundle's tree (either host)
    store = (evidence / stored.STORE).relative_to(REPO).as_posix()  # compact evidence: its shared objects too
    listed = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", "HEAD", store], check=True,
                            capture_output=True, text=True).stdout.split()
    data = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "HEAD", rel_s, *listed], check=True,
                          capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest / "x", filter="data")
    stored.materialize(dest / "x" / rel_s, dest / "bundle")
    shutil.rmtree(dest / "x")
    for seal in ("seal.json", "seal.sig"):
        (dest / "bundle" / seal).unlink(missing_ok=True)
    return dest / "bundle"


def edit_calls(path: Path, change: Any, line: int = 0) -> None:
    lines = (path / "calls.jsonl").read_text().splitlines()
    rec = json.loads(lines[line])
    change(rec)
    lines[line] = json.dumps(rec, sort_keys=True)
    (path / "calls.jsonl").write_text("\n".join(lines) + "\n")


def edit_meta(path: Path, change: Any) -> None:
    meta = json.loads((path / "meta.json").read_text())
    change(meta)
    (path / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def reasons(grade: Any) -> list[str]:
    return [r for c in grade.checks.values() if c.failed for r in c.reasons]


def assert_fails(grade: Any, *needles: str) -> None:
    assert not grade.passed(), grade.to_json()
    got = reasons(grade)
    for needle in needles:
        assert any(needle in r for r in got), (needle, got)
    assert all("\n" not in r and "Traceback" not in r for r in got)


@pytest.mark.parametrize("src", [REVIEW, SCOPED, NEGATIVE, POSITIVE])
def test_the_untouched_copies_pass(src, tmp_path, catalog):
    g = grade_bundle(copy(src, tmp_path), catalog)
    assert g.passed(), reasons(g)


# -- 1. every field of an input entry ---------------------------------------------------------

def _input(**over: Any) -> Any:
    def change(rec: dict[str, Any]) -> None:
        rec["inputs"][0].update(over)
    return change


INPUT_EDITS = [
    ("outside keeps digest and stable", _input(path="<outside-sandbox>"),
     "calls.jsonl: call 1: inputs[0]: path <outside-sandbox> with kind 'file'"),
    ("outside keeps digest", _input(path="<outside-sandbox>", stable=False), "the runner never digests a file outside"),
    ("outside keeps stable", _input(path="<outside-sandbox>", sha256=None), "sha256 null and stable false"),
    ("outside missing", _input(path="<outside-sandbox>", kind="missing", sha256=None, stable=False), "kind 'missing'"),
    ("other placeholder", _input(path="<sandbox>/old/libdemo.so.1"), "is a placeholder"),
    ("absolute", _input(path="/work/old/libdemo.so.1"), "not a plain sandbox-relative path"),
    ("dotdot", _input(path="old/../old/libdemo.so.1"), "not a plain sandbox-relative path"),
    ("missing with digest", _input(kind="missing"), "a missing operand has sha256 null"),
    ("file without digest", _input(sha256=None), "the 64-hex digest of what the subject read"),
    ("dir without digest", _input(kind="dir", sha256=None), "a dir inside the sandbox"),
    ("path not the operand", _input(path="new/libdemo.so.1"), "is not what argument 2"),
    ("arg not an operand", _input(arg=4), "names no operand"),
    ("arg beyond argv", _input(arg=99), "names no operand"),
    ("two entries for one arg", lambda r: r["inputs"].append(dict(r["inputs"][0])), "has a second input entry"),
]


@pytest.mark.parametrize("what,change,needle", INPUT_EDITS, ids=[e[0] for e in INPUT_EDITS])
def test_an_input_entry_is_checked_field_by_field(what, change, needle, tmp_path, catalog):
    path = copy(REVIEW, tmp_path)
    edit_calls(path, change)
    assert_fails(grade_bundle(path, catalog), needle)


def test_an_input_placeholder_is_a_calls_problem_naming_file_and_field(tmp_path, catalog):
    path = copy(REVIEW, tmp_path)
    edit_calls(path, _input(path="<outside-sandbox>"))
    b = bundle_mod.load(path)
    [problem] = [p for p in b.problems if p.file == "calls.jsonl"]
    assert "inputs[0]" in problem.reason and "stable false" in problem.reason
    g = grade_bundle(path, catalog)
    assert {1, 3, 6} <= set(g.failures())


def test_a_list_file_operand_resolves_without_its_at(tmp_path, catalog):
    """`--required-symbol=@host/x.txt` names host/x.txt: the check follows the recorder's own rule."""
    path = copy(SCOPED, tmp_path)
    rec = json.loads((path / "calls.jsonl").read_text().splitlines()[0])
    assert any(i["path"].startswith("host/") for i in rec["inputs"]), rec["inputs"]
    at = next(j for j, i in enumerate(rec["inputs"]) if i["path"].startswith("host/"))

    def change(r: dict[str, Any]) -> None:
        r["inputs"][at]["path"] = "host/other.txt"
    edit_calls(path, change)
    assert_fails(grade_bundle(path, catalog), f"inputs[{at}]: path 'host/other.txt' is not what argument")


def test_a_fixture_file_read_with_another_digest_carries_no_evidence(tmp_path, catalog):
    """The fixture comparison stays the one rule (context.fixture_inputs_intact): an evidence call
    whose recorded input digest is not the fixture file's at that path proves nothing."""
    path = copy(REVIEW, tmp_path)
    edit_calls(path, _input(sha256="ab" * 32))
    assert_fails(grade_bundle(path, catalog), "not the fixture's")


# -- 2. duplicated outputs ---------------------------------------------------------------------

def _dup_output(rec: dict[str, Any]) -> None:
    rec["outputs"].append(dict(rec["outputs"][0]))


def _dup_snapshot(rec: dict[str, Any]) -> None:
    rec["outputs"].append({**rec["outputs"][0], "requested": "other.json"})


def _moved_snapshot(rec: dict[str, Any]) -> None:
    rec["outputs"][0]["snapshot"] = rec["outputs"][0]["snapshot"].replace(".out.d/0/", ".out.d/1/")


@pytest.mark.parametrize("change,needle", [
    (_dup_output, "outputs[1] repeats outputs[0]"),
    (_dup_snapshot, "outputs[1] (file) has snapshot 'captured/1.out.d/0/report.json', not 'captured/1.out.d/1/other.json'"),
    (_moved_snapshot, "outputs[0] (file) has snapshot 'captured/1.out.d/1/report.json', not 'captured/1.out.d/0/report.json'"),
], ids=["same option and path", "same snapshot", "snapshot at another index"])
def test_a_duplicated_output_entry_is_refused(change, needle, tmp_path, catalog):
    path = copy(REVIEW, tmp_path)
    edit_calls(path, change)
    assert_fails(grade_bundle(path, catalog), "calls.jsonl: call 1: " + needle)


# -- 3. meta identity against the catalog ------------------------------------------------------

def test_a_trigger_negative_relabelled_with_a_skill_fails(tmp_path, catalog):
    path = copy(NEGATIVE, tmp_path)
    edit_meta(path, lambda m: m.update(skill="abi-compat-review"))
    assert_fails(grade_bundle(path, catalog), "meta.json", "skill")
    meta = json.loads((path / "meta.json").read_text())  # past the schema (which says null), the grader says it too
    assert catalog.context_for(meta).problems == (
        "meta.json: skill is 'abi-compat-review' in a trigger bundle; a trigger run names no skill "
        "(the runner writes null; re-record it)",)


def test_a_trigger_bundle_naming_a_scenario_fails(tmp_path, catalog):
    path = copy(POSITIVE, tmp_path)
    edit_meta(path, lambda m: m.update(scenario="review-changed-signature"))
    assert_fails(grade_bundle(path, catalog), "meta.json: a trigger bundle carries scenario")


@pytest.mark.parametrize("skill,needle", [
    (None, "meta.json"),  # a behavioural bundle's skill is a string (the schema), and the scenario's
    ("abi-consumer-impact", "meta.json: skill is 'abi-consumer-impact' but scenario review-changed-signature"),
])
def test_a_behavioral_bundle_names_exactly_its_scenarios_skill(skill, needle, tmp_path, catalog):
    path = copy(REVIEW, tmp_path)
    edit_meta(path, lambda m: m.update(skill=skill))
    assert_fails(grade_bundle(path, catalog), needle)


def test_a_behavioral_bundle_carrying_a_prompt_id_fails(tmp_path, catalog):
    path = copy(REVIEW, tmp_path)
    edit_meta(path, lambda m: m.update(prompt_id="neg-db-migration"))
    assert_fails(grade_bundle(path, catalog), "meta.json: a behavioral bundle carries prompt_id")
