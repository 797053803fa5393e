"""content/shards.py: shards are disjoint, cover the plan, balanced, and the same on every machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skill_eval.content import shards
from skill_eval.core.errors import InputError, UsageError

REPO = Path(__file__).resolve().parents[2]


def _plan_labels(root: Path, *extra: str) -> list[str]:
    """The unsharded risk plan of the host at `root`, as `run --dry-run --json` lists it (under a run id
    nothing was recorded for, every planned item is still to do: `todo` is the whole plan)."""
    out = subprocess.run([sys.executable, "-m", "skill_eval", "run", "--root", str(root), "--dry-run", "--json",
                          "--run-id", "shard-test", *extra], check=True, capture_output=True, text=True).stdout
    return list(json.loads(out)["todo"]) if "--shard" not in extra else list(json.loads(out)["shard"]["items"])


@pytest.fixture(scope="module")
def risk_plan() -> list[str]:
    labels = _plan_labels(REPO)
    assert len(labels) > 50  # this repository's risk suite: behavioural scenarios x k, and trigger prompts
    return labels


@pytest.mark.parametrize("count", [2, 3, 7])
def test_shards_are_disjoint_and_cover_the_plan(risk_plan: list[str], count: int) -> None:
    parts = [shards.select(risk_plan, shards.Shard(i, count), str) for i in range(1, count + 1)]
    seen = [label for part in parts for label in part]
    assert len(seen) == len(set(seen))  # disjoint
    assert sorted(seen) == sorted(risk_plan)  # covering
    assert all(part == [x for x in risk_plan if x in set(part)] for part in parts)  # each in the plan's own order


def test_risk_suite_balance_for_three_shards(risk_plan: list[str]) -> None:
    sizes = shards.sizes(risk_plan, 3)
    ratio = max(sizes) / min(sizes)
    print(f"risk suite: {len(risk_plan)} items, shards {sizes}, max/min {ratio:.3f}")
    assert ratio <= 1.25
    assert max(sizes) - min(sizes) <= 1  # round-robin deal: never more than one apart
    # each skill is spread over every shard too (a slow skill does not land on one job)
    owner = shards.assign(risk_plan, 3)
    for skill in {label.split("/")[0] for label in risk_plan}:
        counts = [sum(1 for x in risk_plan if x.split("/")[0] == skill and owner[x] == i) for i in (1, 2, 3)]
        assert max(counts) - min(counts) <= 1, (skill, counts)


def test_the_sharded_run_lists_exactly_its_shard(risk_plan: list[str]) -> None:
    listed = [_plan_labels(REPO, "--shard", f"{i}/3") for i in (1, 2, 3)]
    assert listed == [shards.select(risk_plan, shards.Shard(i, 3), str) for i in (1, 2, 3)]


def test_assignment_does_not_depend_on_plan_order_or_process() -> None:
    labels = [f"skill-{s}/skill-agent/case-{c}/k{k}" for s in range(4) for c in range(5) for k in range(3)]
    forward = shards.assign(labels, 3)
    assert shards.assign(list(reversed(labels)), 3) == forward
    code = ("import json,sys; from skill_eval.content import shards; "
            "print(json.dumps(shards.assign(json.loads(sys.argv[1]), 3), sort_keys=True))")
    other = subprocess.run([sys.executable, "-c", code, json.dumps(labels)], check=True, capture_output=True,
                           text=True, env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"}).stdout
    assert json.loads(other) == forward  # another process, another hash seed: the same shards
    assert shards.plan_digest(labels, "r") == shards.plan_digest(list(reversed(labels)), "r")
    assert shards.plan_digest(labels, "r") != shards.plan_digest(labels, "r2")
    assert shards.plan_digest(labels, "r") != shards.plan_digest(labels[:-1], "r")


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "1/0", "a/b", "1/257", "-1/3", "1/3/5"])
def test_bad_shard_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        shards.parse(text)


def test_good_shard() -> None:
    assert shards.parse(" 2/3 ") == shards.Shard(2, 3)
    assert shards.Shard(2, 3).label == "2/3" and shards.Shard(2, 3).slug == "2-of-3"


def test_duplicate_identity_is_refused() -> None:
    with pytest.raises(UsageError, match="twice"):
        shards.assign(["a/b/c/k0", "a/b/c/k0"], 2)


def _manifest(tmp_path: Path, body: dict) -> Path:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(body))
    return path


def test_manifest_round_trip_and_refusals(tmp_path: Path) -> None:
    spec = {"suite": "risk", "base": None, "ids": [], "arm": "skill-agent", "k": 3, "trigger": True, "run_id": "r"}
    body = shards.manifest(shards.Shard(1, 2), "0" * 64, spec, 2, [("s/skill-agent/c/k0", "s/skill-agent/r/c/0")])
    assert shards.read_manifest(_manifest(tmp_path, body)) == body
    with pytest.raises(InputError, match="newer skill-eval"):
        shards.read_manifest(_manifest(tmp_path, {**body, "schema_version": 2}))
    with pytest.raises(InputError, match="disagrees"):
        shards.read_manifest(_manifest(tmp_path, {**body, "shard": "2/2"}))
    with pytest.raises(InputError):  # a bundle path that climbs out of the evidence tree
        shards.read_manifest(_manifest(tmp_path, {**body, "items": [{"label": "s/skill-agent/c/k0", "bundle": "../x/y/z/w"}]}))
