"""`skill-eval plan --shards N`: the CI matrix, and the same plan on two clones at different paths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, REPO_PARTS, git, git_commit_all

from skill_eval.cli import main
from skill_eval.content import shards


def plan_json(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    assert main(["plan", "--root", str(root), "--json", *args]) == 0
    out: dict = json.loads(capsys.readouterr().out)
    return out


def clone(at: Path) -> Path:
    """This repository's host content at `at`, committed (its evidence left out: a plan never reads it)."""
    at.mkdir(parents=True)
    for part in REPO_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, at / part, symlinks=True, ignore=shutil.ignore_patterns("evidence"))
        elif src.exists():
            shutil.copy2(src, at / part)
    git(at, "init", "-q")
    git_commit_all(at, "copy")
    return at


def test_the_plan_is_identical_on_two_clones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = clone(tmp_path / "a" / "repo")
    two = clone(tmp_path / "elsewhere" / "deeper" / "checkout")
    first = plan_json(one, capsys, "--shards", "3", "--items")
    assert first == plan_json(two, capsys, "--shards", "3", "--items")
    assert first["planned"] == sum(first["sizes"]) and len(first["plan_digest"]) == 64
    assert first["max_min_ratio"] <= 1.25
    members = [set(v) for v in first["items"].values()]
    assert sum(map(len, members)) == len(set().union(*members)) == first["planned"]  # disjoint, covering
    # what each record job's `run --shard I/N --dry-run` lists is its shard of this plan
    for i in (1, 2, 3):
        capsys.readouterr()
        assert main(["run", "--root", str(two), "--dry-run", "--json", "--shard", f"{i}/3"]) == 0
        listed = json.loads(capsys.readouterr().out)["shard"]
        assert listed["items"] == first["items"][f"{i}/3"] and listed["plan_digest"] == first["plan_digest"]


def test_matrix_for_github_and_gitlab(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = clone(tmp_path / "repo")
    out = plan_json(root, capsys, "--shards", "7", "--suite", "full", "-k", "1")
    assert out["shards"] == 7 and len(out["sizes"]) == 7 and max(out["sizes"]) - min(out["sizes"]) <= 1
    include = out["matrix"]["github"]["include"]
    assert [m["shard"] for m in include] == [f"{i}/7" for i in range(1, 8)]
    assert include[1] == {"shard": "2/7", "index": 2, "count": 7, "slug": "2-of-7"}
    assert out["matrix"]["gitlab"] == {"parallel": {"matrix": [{"SKILL_EVAL_SHARD": [f"{i}/7" for i in range(1, 8)]}]}}
    assert out["plan"]["k"] == 1 and out["plan"]["suite"] == "full"
    assert out["sizes"] == shards.sizes(sorted(_labels(root, capsys)), 7)


def _labels(root: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["run", "--root", str(root), "--dry-run", "--json", "--suite", "full", "-k", "1"]) == 0
    return list(json.loads(capsys.readouterr().out)["todo"])


def test_bad_shard_count_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--root", str(tmp_path), "--shards", "0"]) == 2
    assert main(["plan", "--root", str(tmp_path), "--shards", "257"]) == 2
    assert "out of range" in capsys.readouterr().err
