"""`skill-eval evidence merge`: three shards recorded in three separate copies merge into a green `pr`;
a duplicate, an overlapping, a missing shard, shards of another plan, a lost bundle and a stray run
are each refused by name, and nothing is merged then.

The host is the synthetic verdict-free one (tests/oracle_host.py via test_oracle_host_e2e.host):
four oracle scenarios recorded with the model-free scripted adapter, signed by the tests' key.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import allow_test_key, git_commit_all
from test_oracle_host_e2e import host

from skill_eval.cli import main

COUNT = 3
RUN = ["--suite", "full", "--agent", "scripted", "--model-server", "scripted:evals/model-scripts", "--no-trigger"]


def record(root: Path, *extra: str) -> None:
    assert main(["run", "--root", str(root), *RUN, *extra]) == 0


def committed_host(tmp: Path, mp: pytest.MonkeyPatch, key: tuple[Path, str]) -> Path:
    """The synthetic host, committed with the baselines of its scripted cell (from a scratch recording,
    as a maintainer records a new cell once), its evidence signed by the tests' key."""
    root = host(tmp, mp)
    allow_test_key(root, key[1], evals_root="evals")
    mp.setenv("SKILL_EVAL_SIGNING_KEY", str(key[0]))
    scratch = tmp / "scratch"
    shutil.copytree(root, scratch, symlinks=True)
    record(scratch, "-j", "2")
    assert main(["baseline", "update", "--root", str(scratch)]) == 0
    shutil.copytree(scratch / "evals" / "baselines", root / "evals" / "baselines")
    git_commit_all(root, "baselines")
    return root


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, test_signing_key: tuple[Path, str]) -> Iterator[dict[str, Path]]:
    """The committed host, and three clones that each recorded one shard of the plan.
    Yields {"host": root, 1: evidence dir of shard 1, ...}."""
    tmp = tmp_path_factory.mktemp("merge")
    with pytest.MonkeyPatch.context() as mp:
        root = committed_host(tmp, mp, test_signing_key)
        out: dict = {"host": root, "older": tmp / "scratch" / "evals" / "evidence"}  # an earlier recording of all 4
        for i in range(1, COUNT + 1):
            clone = tmp / f"clone-{i}" / "somewhere" / "else"  # another machine: another path
            shutil.copytree(root, clone, symlinks=True)
            record(clone, "--shard", f"{i}/{COUNT}")
            out[i] = clone / "evals" / "evidence"
        yield out


@pytest.fixture
def dest(recorded: dict, tmp_path: Path) -> Path:
    """A fresh copy of the committed host (no evidence) for the merge to write into."""
    root = tmp_path / "merge-job"
    shutil.copytree(recorded["host"], root, symlinks=True)
    return root


def merge(root: Path, *dirs: Path, json_out: bool = False) -> int:
    return main(["evidence", "merge", *map(str, dirs), "--root", str(root), "--suite", "full",
                 *(["--json"] if json_out else [])])


def manifest(evidence: Path) -> dict:
    (path,) = (evidence / ".shards").glob("*.json")
    return json.loads(path.read_text())


def test_three_shards_recorded_apart_merge_and_pr_is_green(recorded: dict, dest: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    owned = [{i["bundle"] for i in manifest(recorded[n])["items"]} for n in range(1, COUNT + 1)]
    assert all(owned) and sum(map(len, owned)) == len(set().union(*owned)) == 4  # disjoint, covering 4 items
    capsys.readouterr()
    assert merge(dest, *(recorded[n] for n in range(1, COUNT + 1))) == 0
    out = capsys.readouterr().out
    assert "merge: 3 shard(s) of plan" in out and "4 bundle(s) copied" in out and "evidence: ok" in out, out
    assert "sealed by: tests@skill-eval (4)" in out, out  # copied byte for byte: the seals still verify
    assert not (dest / "evals" / "evidence" / ".shards").exists()  # manifests stay with the shards
    assert main(["pr", "--root", str(dest)]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("pr: ok")
    # merging again is a no-op
    assert merge(dest, *(recorded[n] for n in range(1, COUNT + 1)), json_out=True) == 0
    assert json.loads(capsys.readouterr().out)["merge"] == {
        "merged": True, "problems": [], "copied": 0, "unchanged": 4, "shards": ["1/3", "2/3", "3/3"],
        "plan_digest": manifest(recorded[1])["plan_digest"]}


def test_committed_bundles_every_job_checked_out_are_no_collision(recorded: dict, dest: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The usual CI case: the repository already holds evidence under the same run id (an earlier
    recording), every job checks it out and re-records only its own shard. The other shards' copies
    are the merge job's own checkout, not collisions; the new bundles replace the old ones."""
    older = recorded["older"]
    shutil.copytree(older, dest / "evals" / "evidence")
    git_commit_all(dest, "the earlier evidence")
    jobs = []
    for n in range(1, COUNT + 1):
        job = tmp_path / f"job-{n}"
        shutil.copytree(older, job)  # its checkout
        shutil.copytree(recorded[n] / ".shards", job / ".shards")
        for item in manifest(recorded[n])["items"]:  # what it recorded
            shutil.rmtree(job / item["bundle"])
            shutil.copytree(recorded[n] / item["bundle"], job / item["bundle"])
        jobs.append(job)
    capsys.readouterr()
    assert merge(dest, *jobs) == 0, capsys.readouterr().out
    assert "4 bundle(s) copied, 0 already there" in capsys.readouterr().out
    for n in range(1, COUNT + 1):
        for item in manifest(recorded[n])["items"]:
            bundle = item["bundle"]
            assert (dest / "evals/evidence" / bundle / "seal.json").read_bytes() == (recorded[n] / bundle / "seal.json").read_bytes()
            assert (dest / "evals/evidence" / bundle / "seal.json").read_bytes() != (older / bundle / "seal.json").read_bytes()


def refused(dest: Path, capsys: pytest.CaptureFixture[str], *dirs: Path) -> list[str]:
    capsys.readouterr()
    assert merge(dest, *dirs, json_out=True) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["merged"] is False
    assert not list((dest / "evals" / "evidence").rglob("meta.json")) if (dest / "evals" / "evidence").exists() else True
    problems: list[str] = payload["problems"]
    return problems


def test_missing_shard_is_refused_by_name(recorded: dict, dest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problems = refused(dest, capsys, recorded[1], recorded[3])
    assert problems == [problems[0]] and problems[0].startswith("missing shard 2/3: no input holds its manifest"), problems


def test_duplicate_shard_is_refused(recorded: dict, dest: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    again = tmp_path / "artifact-of-a-rerun"
    shutil.copytree(recorded[2], again)
    problems = refused(dest, capsys, recorded[1], recorded[2], recorded[3], again)
    assert any(p.startswith("overlapping shard 2/3: held by") for p in problems), problems
    assert any(p.startswith("collision: bundle ") and "owned by" in p for p in problems), problems


def test_shards_of_another_plan_are_refused(recorded: dict, dest: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other-plan"
    shutil.copytree(recorded[3], other)
    (path,) = (other / ".shards").glob("*.json")
    body = json.loads(path.read_text())
    path.write_text(json.dumps({**body, "plan_digest": "f" * 64}))
    problems = refused(dest, capsys, recorded[1], recorded[2], other)
    assert len(problems) == 1 and problems[0].startswith("shards of different plans:"), problems


def test_a_plan_this_checkout_does_not_plan_is_refused(recorded: dict, dest: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    scenarios = dest / "evals" / "scenarios.yaml"  # the merge job checked out other content: a case renamed
    scenarios.write_text(scenarios.read_text().replace("id: notes-check-local", "id: notes-check-local-2"))
    (dest / "evals/fixtures/notes-check-local").rename(dest / "evals/fixtures/notes-check-local-2")
    problems = refused(dest, capsys, *(recorded[n] for n in range(1, COUNT + 1)))
    assert any("is not what this checkout plans" in p for p in problems), problems


def test_a_lost_bundle_is_refused(recorded: dict, dest: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lossy = tmp_path / "lossy"
    shutil.copytree(recorded[1], lossy)
    lost = manifest(lossy)["items"][0]
    shutil.rmtree(lossy / lost["bundle"])
    problems = refused(dest, capsys, lossy, recorded[2], recorded[3])
    assert problems == [f"{lossy} (shard 1/3) has no bundle for {lost['label']} at {lost['bundle']}: its job failed "
                        "or its artifact is incomplete — re-run shard 1/3"], problems


def test_a_run_outside_its_shard_is_a_collision(recorded: dict, dest: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    stray = tmp_path / "stray"
    shutil.copytree(recorded[2], stray)
    theirs = manifest(recorded[1])["items"][0]["bundle"]  # shard 1's bundle, recorded (differently) by job 2 too
    shutil.copytree(recorded[3] / manifest(recorded[3])["items"][0]["bundle"], stray / theirs)
    problems = refused(dest, capsys, recorded[1], stray, recorded[3])
    assert problems == [f"collision: bundle {theirs} is in {recorded[1]} (shard 1/3) and, recorded differently, in "
                        f"{stray}, whose shard does not own it: a run outside its shard wrote it"], problems


def test_a_directory_without_manifest_and_a_wrong_target(recorded: dict, dest: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    problems = refused(dest, capsys, recorded[1], recorded[2], recorded[3], bare)
    assert problems == [f"{bare}: no shard manifest (.shards/*.json): not the evidence directory of a "
                        "`skill-eval run --shard I/N` job"], problems
    assert main(["evidence", "merge", str(recorded[1]), "--root", str(dest), "--into", str(tmp_path)]) == 2
    assert "is not the evidence directory of the repository" in capsys.readouterr().err


def test_compacted_shards_merge_with_their_shared_objects(recorded: dict, dest: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Each shard's job compacts its evidence (core.stored): the merge copies the objects its bundles
    list into the target's store before the bundles, and the seals still verify."""
    dirs = []
    for n in range(1, COUNT + 1):
        root = tmp_path / f"job-{n}"
        shutil.copytree(recorded[n].parents[1], root, symlinks=True)
        assert main(["evidence", "compact", "--root", str(root)]) == 0
        dirs.append(root / "evals" / "evidence")
    assert any(any(d.rglob("objects.json")) for d in dirs) and any(any(d.rglob("*.jsonl.gz")) for d in dirs)
    capsys.readouterr()
    assert merge(dest, *dirs) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "sealed by: tests@skill-eval (4)" in out and "evidence: ok" in out, out
    assert (dest / "evals" / "evidence" / ".objects").is_dir()
    assert main(["pr", "--root", str(dest)]) == 0, capsys.readouterr().out
