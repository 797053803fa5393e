"""Shards of a recording plan: which planned items shard I of N records (`run --shard I/N`).

Pure: it sees only item identities (the label `skill/arm/item/kN`, the same string on every
machine: no path, no time, no host name), so every CI job that checks out the same commit and
plans with the same arguments computes the same shards, and nothing has to travel between jobs
but "I/N".

The rule (`assign`): items are ordered by (stratum, sha256 of the identity, identity), the
stratum being the item's skill (trigger prompts are the skill "trigger"), and dealt round-robin:
item r of that order goes to shard r mod N. Hence
- disjoint and covering: each item has exactly one shard;
- balanced: shard sizes differ by at most one, and so does each skill's share of every shard
  (a skill's items are one contiguous run of the order), so a slow skill is spread over all jobs;
- deterministic: the hash of the identity, not Python's `hash()` (salted per process) or the
  order the plan was built in.

The plan digest names the whole unsharded plan (every identity and the run id it records into):
shards recorded from different plans are refused at merge (commands/evidence_merge.py).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from skill_eval.core.errors import InputError, UsageError

__all__ = ["MANIFEST_DIR", "MAX_SHARDS", "Shard", "assign", "identity_hash", "manifest", "manifest_name", "parse",
           "plan_digest", "read_manifest", "select", "sizes"]

MAX_SHARDS = 256  # GitHub Actions runs at most 256 jobs per matrix
PLAN_DOMAIN = "skill-eval-plan-v1"
_SHARD_RE = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as CI matrices and humans count
    count: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def slug(self) -> str:
        """One path segment naming the shard (file names, artifact names)."""
        return f"{self.index}-of-{self.count}"


def parse(text: str) -> Shard:
    """`I/N` with 1 <= I <= N <= MAX_SHARDS; anything else is a UsageError naming the form."""
    m = _SHARD_RE.match(text.strip())
    if not m:
        raise UsageError(f"{text!r} is not I/N (e.g. 2/3: the second of three shards, counted from 1)")
    index, count = int(m.group(1)), int(m.group(2))
    if count > MAX_SHARDS:
        raise UsageError(f"{text}: at most {MAX_SHARDS} shards")
    if index > count:
        raise UsageError(f"{text}: shard {index} does not exist among {count} (I is 1..{count})")
    return Shard(index, count)


def identity_hash(identity: str) -> str:
    return hashlib.sha256(b"skill-eval-shard-v1\x00" + identity.encode("utf-8")).hexdigest()


def _stratum(identity: str) -> str:
    return identity.split("/", 1)[0]


def assign(identities: Sequence[str], count: int) -> dict[str, int]:
    """identity -> its 1-based shard among `count`. Identities must be distinct."""
    if count < 1:
        raise UsageError(f"{count} shards: need at least one")
    if len(set(identities)) != len(identities):
        raise UsageError("the plan names an item twice", fix="list each scenario or prompt id once")
    order = sorted(identities, key=lambda i: (_stratum(i), identity_hash(i), i))
    return {identity: rank % count + 1 for rank, identity in enumerate(order)}


def select(items: Sequence[T], shard: Shard, identity: Callable[[T], str]) -> list[T]:
    """The items of `shard`, in the plan's own order."""
    owner = assign([identity(i) for i in items], shard.count)
    return [i for i in items if owner[identity(i)] == shard.index]


def sizes(identities: Sequence[str], count: int) -> list[int]:
    """Items per shard, shard 1 first."""
    out = [0] * count
    for shard in assign(identities, count).values():
        out[shard - 1] += 1
    return out


def plan_digest(identities: Sequence[str], run_id: str) -> str:
    """The whole plan's name: its identities (as a set) and the run id its bundles go under."""
    body = "\n".join(sorted(identities))
    return hashlib.sha256(f"{PLAN_DOMAIN}\x00{run_id}\x00{body}".encode()).hexdigest()


# -- the shard manifest (schemas/shard_manifest.schema.json) -----------------------------------

MANIFEST_DIR = ".shards"  # under the evidence root: a dot directory, never a bundle, never walked as one
MANIFEST_VERSION = 1


def manifest_name(shard: Shard, run_id: str) -> str:
    return f"{MANIFEST_DIR}/{run_id}--{shard.slug}.json"


def manifest(shard: Shard, digest: str, spec: dict[str, Any], planned: int,
             owned: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The record a sharded run writes: `owned` = (item label, bundle path under the evidence root)."""
    return {"schema_version": MANIFEST_VERSION, "shard": shard.label, "index": shard.index, "count": shard.count,
            "plan_digest": digest, "plan": spec, "planned": planned,
            "items": [{"label": label, "bundle": bundle} for label, bundle in owned]}


def read_manifest(path: Path) -> dict[str, Any]:
    """A shard manifest, strictly: newer version refused first, then the schema, then its own sums."""
    from skill_eval.core import schemas, strict

    raw = strict.load_json(path, max_bytes=64 << 20)
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > MANIFEST_VERSION:
        raise InputError(f"written by a newer skill-eval (shard manifest version {version}; this one reads up to "
                         f"{MANIFEST_VERSION})", source=path, field="schema_version", fix="upgrade skill-eval")
    body: dict[str, Any] = schemas.validate(raw, "shard_manifest", path)
    if body["shard"] != f"{body['index']}/{body['count']}" or body["index"] > body["count"]:
        raise InputError(f"shard {body['shard']!r} disagrees with index {body['index']} and count {body['count']}",
                         source=path, field="shard", fix="re-record the shard (a manifest is written by `run --shard`)")
    return body
