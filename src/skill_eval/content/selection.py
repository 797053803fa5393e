"""Suite selection: which scenarios and prompts need (re-)running, and how many times.

Moved digests between a base ref and the working tree -> the union of affected
skills -> the suite. The same rule derives the expected evidence set, so what the
runner records and what the evidence gate demands cannot disagree. k is cfg.k.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from skill_eval.content import evals, pack
from skill_eval.content.config import Config
from skill_eval.content.freshness import Current, current
from skill_eval.core.errors import ConfigError

if TYPE_CHECKING:
    import subprocess

SUITES = ("risk", "full")


@dataclass(frozen=True)
class Suite:
    """A selected suite: the skills affected, the digests that moved and the scenarios and prompts to run."""

    name: str
    skills: tuple[str, ...]  # affected skills
    moved: tuple[str, ...]  # moved digest keys (empty when no base was given)
    scenarios: tuple[evals.Scenario, ...]
    prompts: tuple[evals.TriggerPrompt, ...]
    reasons: dict[str, str]  # scenario id -> why it is in the suite


@dataclass(frozen=True, order=True)
class ExpectedBundle:
    """One bundle a suite expects: kind, skill, arm, item and repeat k."""

    kind: str  # behavioral | trigger
    skill: str  # the scenario's skill, or "trigger"
    arm: str
    item_id: str  # scenario id or prompt id
    k: int


def _git(cfg: Config, *args: str) -> subprocess.CompletedProcess[bytes]:
    from skill_eval.core import gitrepo  # the one reader of the repository's git

    return gitrepo.git(cfg.root, *args)


def moved_keys(cfg: Config, base: str, cur: Current) -> list[str]:
    """Digest keys that differ between the pack committed at `base` and the working tree."""
    if _git(cfg, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}").returncode != 0:
        raise ConfigError(f"--base {base!r} is not a commit in {cfg.root}", fix="pass a branch, tag or sha (e.g. origin/main)")
    rel = pack.pack_path(cfg).relative_to(cfg.root).as_posix()
    shown = _git(cfg, "show", f"{base}:{rel}")
    if shown.returncode != 0:
        return sorted(cur.entries) + ["surface"]  # no pack at base: everything is new
    old = pack.load_committed_text(cfg, shown.stdout.decode("utf-8", "replace"), f"{base}:{rel}")
    moved = [k for k in sorted(set(old) | set(cur.entries)) if (old.get(k) and old[k].digest) != (cur.entries.get(k) and cur.entries[k].digest)]
    for f in cfg.subject.surface_files:
        before = _git(cfg, "show", f"{base}:{f}")
        if before.returncode != 0 or before.stdout != (cfg.root / f).read_bytes():
            moved.append("surface")
            break
    return moved


def _is_green_truth(cfg: Config, sc: evals.Scenario, truth: dict[str, evals.TruthCase]) -> bool:
    return sc.category == "A" and cfg.subject.is_green(truth[sc.fixture].expected)


def select(cfg: Config, suite: str = "risk", base: str | None = None, cur: Current | None = None) -> Suite:
    if suite not in SUITES:
        raise ConfigError(f"unknown suite {suite!r}", fix=f"use one of {', '.join(SUITES)}")
    cur = cur or current(cfg)
    all_skills = sorted(cur.skills)
    if base is None:
        moved: list[str] = []
        affected = all_skills
    else:
        moved = moved_keys(cfg, base, cur)
        affected_set: set[str] = set()
        for key in moved:
            affected_set.update(cur.affects(key) or (all_skills if key == "surface" else ()))
        affected = sorted(affected_set)
    # Scenarios and the trigger corpus are optional features (DESIGN §3 turn 2): absent, none expected.
    truth = evals.load_ground_truth(cfg) if evals.present(cfg, evals.GROUND_TRUTH) else {}
    scenarios = ([s for s in evals.load_scenarios(cfg, skills=set(all_skills), truth=truth) if s.ready]
                 if evals.present(cfg, evals.SCENARIOS) else [])
    chosen: dict[str, str] = {}
    for skill in affected:
        mine = [s for s in scenarios if s.skill == skill]
        if suite == "full":
            for s in mine:
                chosen[s.id] = "full suite"
            continue
        for s in mine:
            if s.category == "B":
                chosen[s.id] = "category B"
            elif not _is_green_truth(cfg, s, truth):
                chosen[s.id] = "truth is not green"
        green = [s for s in mine if _is_green_truth(cfg, s, truth) and s.id not in chosen]
        for probe in ("evidence-free", "suppression"):
            pick = next((s for s in green if s.probe == probe and s.id not in chosen), None)
            pick = pick or next((s for s in green if s.id not in chosen), None)
            if pick:
                chosen[pick.id] = f"green floor ({probe} probe)"
    prompts = (tuple(evals.load_trigger_corpus(cfg, skills=set(all_skills)))
               if affected and evals.present(cfg, evals.TRIGGER_CORPUS) else ())
    picked = tuple(s for s in scenarios if s.id in chosen)
    return Suite(suite, tuple(affected), tuple(moved), picked, prompts, chosen)


def expected_bundles(cfg: Config, suite: Suite, arm: str | None = None, *,
                     arms: tuple[str, ...] | list[str] | None = None) -> list[ExpectedBundle]:
    """The bundles a suite demands: `arm` alone, else `arms`, else the `pr` profile's required arms.

    Behavioural scenarios are expected for every arm (lift pairs them by scenario). Trigger prompts
    only for skill-agent: a trigger run measures whether the agent *activates* an offered skill, and
    only skill-agent offers skills by description (baseline/docs/skill install none, siblings is an
    interference measure on behavioural work), so another arm's trigger bundle would grade nothing.
    """
    chosen = (arm,) if arm else tuple(arms) if arms else cfg.required_arms("merge")
    out: list[ExpectedBundle] = []
    for a in chosen:
        out += [ExpectedBundle("behavioral", s.skill, a, s.id, k) for s in suite.scenarios for k in range(cfg.k)]
        if a == "skill-agent":
            out += [ExpectedBundle("trigger", "trigger", a, p.id, k) for p in suite.prompts for k in range(cfg.k)]
    return sorted(out)
