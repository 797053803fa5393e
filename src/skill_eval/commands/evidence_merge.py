"""`skill-eval evidence merge DIR... [--into EVIDENCE]`: union the evidence of sharded record jobs.

Each DIR is the evidence directory of one `run --shard I/N` job (its CI artifact): the bundles,
and under `.shards/` the manifest naming the shard, the plan's digest and the bundles it owns
(content/shards.py). Nothing is copied unless every check passes; each refusal names what it is:
- a DIR without a manifest, or with a manifest that does not read;
- shards of different plans (digest or N differ), or a plan this checkout does not plan again
  (the merge re-plans from the manifests' own arguments and compares digests);
- an overlapping shard (the same I/N twice) and a missing shard (an I of 1..N no DIR holds);
- a collision: a bundle path two shards own, or an owned bundle that another DIR recorded
  differently (a stray run outside its shard);
- a shard owning items the shard rule does not give it, and an owned bundle its DIR lacks.
Then each owned bundle replaces the one at its path under EVIDENCE (a bundle is copied whole,
byte for byte, never opened: its seal still covers it), and the evidence gate runs on the result
(commands/evidence.py: the same output as `skill-eval evidence`).
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_eval.core.errors import EXIT_CHECK_FAILED, UsageError
from skill_eval.core.output import emit

if TYPE_CHECKING:
    from skill_eval.content.config import Config

# Imported where used: `skill-eval evidence` adds this module's arguments on every start, and the
# planning code (the runner's plan, the adapters' names) is for the merge alone.


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The merge's own arguments on `skill-eval evidence merge` (the gate's options follow them)."""
    p.add_argument("dirs", nargs="+", metavar="DIR", help="the evidence directory of each shard's job")
    p.add_argument("--into", type=Path, default=None, metavar="EVIDENCE",
                   help="the evidence directory to merge into (default: this repository's)")


@dataclass
class _Input:
    dir: Path
    manifest: Path
    body: dict[str, Any]

    @property
    def shard(self) -> str:
        return str(self.body["shard"])

    @functools.cached_property
    def owned(self) -> dict[str, str]:
        """bundle path (under the evidence root) -> item label."""
        return {i["bundle"]: i["label"] for i in self.body["items"]}

    def where(self) -> str:
        return f"{self.dir} (shard {self.shard})"


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    copied: int = 0
    unchanged: int = 0
    shards: list[str] = field(default_factory=list)
    plan_digest: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"merged": not self.problems, "problems": self.problems, "copied": self.copied,
                "unchanged": self.unchanged, "shards": self.shards, "plan_digest": self.plan_digest}


def merge(args: argparse.Namespace, cfg: Config) -> int | None:
    """Check and merge; None when merged (the gate runs next), else the exit code (refusals printed)."""
    into = _target(args, cfg)
    report, inputs = check(cfg, [Path(d) for d in args.dirs], into)
    if report.problems:
        emit(args, [*(f"merge: REFUSED {p}" for p in report.problems),
                    f"merge: {len(report.problems)} problem(s): nothing was merged"], report.to_json())
        return EXIT_CHECK_FAILED
    _copy(cfg, into, report, inputs)
    args.merge_report = report.to_json()
    if not args.json:
        print(f"merge: {len(report.shards)} shard(s) of plan {str(report.plan_digest)[:16]} merged into "
              f"{into.relative_to(cfg.root)}: {report.copied} bundle(s) copied, {report.unchanged} already there")
    return None


def _target(args: argparse.Namespace, cfg: Config) -> Path:
    from skill_eval.harness.runner import plan

    root = plan.evidence_root(cfg)
    if not args.dirs:
        raise UsageError("merge needs the shards' evidence directories", fix="skill-eval evidence merge DIR... [--into EVIDENCE]")
    if args.into is not None and args.into.resolve() != root.resolve():
        raise UsageError(f"--into {args.into} is not the evidence directory of the repository at {cfg.root} ({root})",
                         fix="omit --into, or pass --root of the repository that holds it")
    return root


def _inputs(dirs: list[Path], report: Report) -> list[_Input]:
    from skill_eval.content import shards

    inputs: list[_Input] = []
    for d in dirs:
        if not d.is_dir():
            raise UsageError(f"{d} is not a directory", fix="pass the evidence directory each `run --shard` job wrote")
        found = sorted((d / shards.MANIFEST_DIR).glob("*.json")) if (d / shards.MANIFEST_DIR).is_dir() else []
        if not found:
            report.problems.append(f"{d}: no shard manifest ({shards.MANIFEST_DIR}/*.json): not the evidence "
                                   "directory of a `skill-eval run --shard I/N` job")
        inputs += [_Input(d, m, shards.read_manifest(m)) for m in found]
    return inputs


def check(cfg: Config, dirs: list[Path], into: Path) -> tuple[Report, list[_Input]]:
    """Every refusal the merge makes, in order, and the shards read; nothing is written."""
    report = Report()
    inputs = _inputs(dirs, report)
    if not inputs:
        return report, inputs
    plans = {(i.body["plan_digest"], i.body["count"]) for i in inputs}
    if len(plans) > 1:
        report.problems.append("shards of different plans: " + "; ".join(
            f"{i.manifest} plans {i.body['plan_digest'][:16]} in {i.body['count']}" for i in inputs)
            + " — record every shard from the same commit with the same arguments")
        return report, inputs
    digest, count = plans.pop()
    report.plan_digest = digest
    by_index: dict[int, list[_Input]] = {}
    for i in inputs:
        by_index.setdefault(i.body["index"], []).append(i)
    for index, held in sorted(by_index.items()):
        if len(held) > 1:
            report.problems.append(f"overlapping shard {index}/{count}: held by " + " and ".join(str(i.manifest) for i in held))
    for index in range(1, count + 1):
        if index not in by_index:
            report.problems.append(f"missing shard {index}/{count}: no input holds its manifest — record it "
                                   f"(skill-eval run --shard {index}/{count} ...) and pass its evidence directory")
    report.shards = [f"{n}/{count}" for n in sorted(by_index)]
    _check_collisions(inputs, into, report)
    _check_plan(cfg, inputs, digest, count, report)
    _check_bundles(inputs, report)
    return report, inputs


def _check_collisions(inputs: list[_Input], into: Path, report: Report) -> None:
    owner: dict[str, _Input] = {}
    for i in inputs:
        for bundle in i.owned:
            if bundle in owner and owner[bundle] is not i:
                report.problems.append(f"collision: bundle {bundle} is owned by {owner[bundle].where()} and by {i.where()}")
            owner.setdefault(bundle, i)
    # A bundle one DIR owns that another DIR holds differently, and not as this checkout holds it (the
    # copy every job checked out): a run outside its shard wrote it.
    for bundle, i in owner.items():
        others = [o for o in inputs if o.dir != i.dir and bundle not in o.owned and (o.dir / bundle / "meta.json").is_file()]
        if not others or not (i.dir / bundle).is_dir():
            continue
        known = {_digest(i.dir / bundle)} | ({_digest(into / bundle)} if (into / bundle / "meta.json").is_file() else set())
        for o in others:
            if _digest(o.dir / bundle) not in known:
                report.problems.append(f"collision: bundle {bundle} is in {i.where()} and, recorded differently, in "
                                       f"{o.dir}, whose shard does not own it: a run outside its shard wrote it")


def _check_plan(cfg: Config, inputs: list[_Input], digest: str, count: int, report: Report) -> None:
    from skill_eval.commands.run import PlanSpec, plan_digest
    from skill_eval.content import shards

    spec = PlanSpec.from_json(inputs[0].body["plan"])
    items = spec.build(cfg)
    here = plan_digest(spec, items)
    if here != digest:
        report.problems.append(f"the shards' plan {digest[:16]} is not what this checkout plans ({here[:16]}) with the "
                               "same arguments: record and merge from the same commit")
        return
    owner = shards.assign([i.label for i in items], count)
    for i in inputs:
        wrong = sorted(label for label in i.owned.values() if owner.get(label) != i.body["index"])
        if wrong:
            report.problems.append(f"{i.where()} owns item(s) the shard rule gives another shard: {', '.join(wrong[:5])}")


def _check_bundles(inputs: list[_Input], report: Report) -> None:
    for i in inputs:
        for bundle, label in i.owned.items():
            if not (i.dir / bundle / "meta.json").is_file():
                report.problems.append(f"{i.where()} has no bundle for {label} at {bundle}: its job failed or its "
                                       f"artifact is incomplete — re-run shard {i.shard}")


def _digest(path: Path) -> str:
    from skill_eval.core import hashing

    return hashing.digest_entries("skill-eval-merge-v1", hashing.walk_tree(path))


def _copy_objects(into: Path, inputs: list[_Input], cfg_max: int) -> None:
    """The shared artifacts the owned bundles list (compact evidence, core.stored), each verified
    against its digest, copied into the target's content store before any bundle that lists them."""
    import os

    from skill_eval.core import stored

    for i in inputs:
        for bundle in sorted(i.owned):
            index = stored.index_of(i.dir / bundle) if (i.dir / bundle / stored.INDEX).is_file() else {}
            if not index:
                continue
            target = into / stored.STORE
            target.mkdir(parents=True, exist_ok=True)
            for rel, sha in sorted(index.items()):  # from the shard's own store, verified; the target's checked
                data = stored.read_object(os.fspath(i.dir / stored.STORE), sha, cfg_max, rel)
                stored.put_object(os.fspath(target), data)


def _copy(cfg: Config, into: Path, report: Report, inputs: list[_Input]) -> None:
    from skill_eval.core import fsio, hashing

    _copy_objects(into, inputs, cfg.max_bundle_file_bytes)
    for i in inputs:
        for bundle in sorted(i.owned):
            source, dest = i.dir / bundle, into / bundle
            entries = hashing.walk_tree(source)  # refuses a symlink, a hard link or a special file
            if dest.is_dir() and not dest.is_symlink() and _digest(dest) == hashing.digest_entries("skill-eval-merge-v1", entries):
                report.unchanged += 1
                continue
            files = {e.path: (e.data, fsio.EXEC_MODE if e.mode == hashing.MODE_EXEC else fsio.FILE_MODE) for e in entries}
            fsio.replace_dir(cfg.root, dest.relative_to(cfg.root), files)
            report.copied += 1
