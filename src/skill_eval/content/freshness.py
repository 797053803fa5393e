"""Freshness: a bundle is evidence only for the content it actually ran against.

A bundle is fresh when every digest in its meta.json equals the current one (the pack
entries recomputed from the working tree, plus the on-demand surface digest). Two
round trips keep the digests honest: completeness (every input the run was observed
reading routes to some digest) and mapping (every digest nominates at least one skill,
so a moved digest always says what to re-run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skill_eval.content import pack as pack_mod
from skill_eval.content.config import Config
from skill_eval.content.skills import Skill, discover
from skill_eval.core import memo as memo_mod

SURFACE = "surface"


@dataclass
class Current:
    """The current digests and their routing, computed once per process."""

    entries: dict[str, pack_mod.Entry]
    surface: str
    surface_files: tuple[str, ...]
    skills: dict[str, Skill] = field(default_factory=dict)
    _route_index: dict[str, set[str]] | None = field(default=None, repr=False)

    def digest(self, key: str) -> str | None:
        if key == SURFACE:
            return self.surface
        e = self.entries.get(key)
        return e.digest if e else None

    def affects(self, key: str) -> tuple[str, ...]:
        if key == SURFACE:
            return tuple(sorted(self.skills))
        e = self.entries.get(key)
        return e.affects if e else ()

    def _index(self) -> dict[str, set[str]]:
        """input base path -> keys, built once (routing runs for every observed input of every bundle)."""
        if self._route_index is None:
            index: dict[str, set[str]] = {}
            for key, e in self.entries.items():
                for inp in e.inputs:
                    index.setdefault(inp.split("#", 1)[0].rstrip("/"), set()).add(key)
            for rel in self.surface_files:
                index.setdefault(rel.rstrip("/"), set()).add(SURFACE)
            if "harness" in self.entries:
                index.setdefault("skill-eval.toml", set()).add("harness")
            self._route_index = index
        return self._route_index

    def route(self, path: str) -> list[str]:
        """Keys whose inputs cover a repository path (a file, or anything under a directory input)."""
        index = self._index()
        keys: set[str] = set()
        probe = path.rstrip("/")
        while probe:
            keys |= index.get(probe, set())
            probe = probe.rpartition("/")[0]
        return sorted(keys)


def current(cfg: Config) -> Current:
    """The current digests. Inside `memo.sharing()` (one `pr` or evidence check) computed once per Config."""
    memo = memo_mod.shared_memo()
    key = ("freshness.current", id(cfg))
    if memo is not None and key in memo:
        shared: Current = memo[key][1]
        return shared
    skills = discover(cfg)
    cur = Current(pack_mod.compute(cfg, skills), pack_mod.surface_digest(cfg), cfg.subject.surface_files, skills)
    if memo is not None:
        memo[key] = (cfg, cur)  # holding cfg keeps its id unique for the memo's lifetime
    return cur


def required_keys(meta: dict[str, Any], cur: Current) -> list[str]:
    """The digests a bundle of this kind and arm must carry (what its result depends on).

    Every bundle: the harness and the subject surface. Behavioural: its scenario, plus the skills
    the arm put in front of the agent — the scenario's skill for skill-agent and skill (body in the
    prompt); every skill for siblings (all installed: any sibling's change can move the result).
    baseline/docs installed no skill, so the skill under test is *not* a dependency: editing it
    leaves a baseline bundle fresh (that is what makes it a stable control), and a control bundle
    recording skill:<name> is contamination evidence instead (isolation.contamination). released:<ref>
    depends on the released bytes (meta extra.released_skill_digest), not the working tree's skill.
    Trigger bundles (skill-agent only): the corpus and every skill's description.
    """
    keys = ["harness", SURFACE]
    arm = str(meta.get("arm", ""))
    if meta.get("kind") == "trigger" or arm == "siblings":
        keys.extend(f"skill:{name}" for name in cur.skills)
    if meta.get("kind") == "trigger":
        keys.append("corpus")
    else:
        if meta.get("scenario"):
            keys.append(f"scenario:{meta['scenario']}")
        if meta.get("skill") and arm not in ("baseline", "docs") and not arm.startswith("released:"):
            keys.append(f"skill:{meta['skill']}")
    return sorted(set(keys))


def check_bundle_freshness(cfg: Config, meta: dict[str, Any], cur: Current | None = None) -> list[str]:
    """Every reason this bundle is not evidence for the current content ([] when fresh)."""
    cur = cur or current(cfg)
    digests: dict[str, str] = meta.get("digests") or {}
    problems = []
    for key in required_keys(meta, cur):
        if key not in digests:
            problems.append(f"meta.json records no {key} digest")
    for key, recorded in sorted(digests.items()):
        now = cur.digest(key)
        if now is None:
            problems.append(f"{key}: no such entry any more (removed or renamed)")
        elif now != recorded:
            problems.append(f"{key}: stale (recorded {recorded[:12]}, now {now[:12]}; affects {', '.join(cur.affects(key))})")
    for item in meta.get("observed_inputs") or []:
        path = item.get("path", "")
        routes = cur.route(path)
        if not routes:
            problems.append(f"observed input {path} routes to no digest (completeness): add it to a hashed input or the harness")
        elif not any(k in digests for k in routes):
            problems.append(f"observed input {path} routes to {', '.join(routes)}, none of which the bundle recorded")
    return problems


def check_mapping(cur: Current) -> list[str]:
    """Every digest must nominate at least one existing skill."""
    problems = []
    for key, e in sorted(cur.entries.items()):
        if not e.affects:
            problems.append(f"{key}: maps to no skill")
        for s in e.affects:
            if s not in cur.skills:
                problems.append(f"{key}: maps to unknown skill {s!r}")
    if not cur.skills:
        problems.append("no skills: the surface digest would map to nothing")
    return problems

