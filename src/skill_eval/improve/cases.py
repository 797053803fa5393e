"""The failing cases a proposal addresses, and what of each the agent may be shown.

Two sources: the static trigger check (`--from-check triggers`: every prompt of the labelled corpus
that `check-triggers` mispredicts, scored exactly as that command scores it), and case ids named by
the maintainer (`--case ID`: a trigger prompt id or a behavioural scenario id, e.g. one whose
evidence fails). What the agent sees of a case is what the case itself shows: its prompt, the
skill it belongs to, and the outcome it states. A trigger prompt states its expected skill; a
scenario states a verdict only when scenarios.yaml does (category B); a category A verdict lives
in the ground truth and is never shown. Holdout scenarios are refused: tuning skills on them
would spend the very cases that measure generalisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skill_eval.checks import trigger_scoring, triggers
from skill_eval.content import evals
from skill_eval.content.config import Config
from skill_eval.content.skills import discover
from skill_eval.core.errors import ConfigError, UsageError
from skill_eval.core.vocab import BundleKind

CHECKS = ("triggers",)


@dataclass(frozen=True)
class FailingCase:
    """One case a proposal addresses: shown to the agent, listed in proposal.json."""

    id: str
    kind: BundleKind
    skill: str | None  # the skill the case belongs to (a trigger prompt's expected skill; None: a negative)
    prompt: str
    expected: str  # the outcome the case states, in words
    observed: str  # how it fails, as far as skill-eval knows
    rerun: tuple[str, ...]  # the commands that re-check it once a patch is applied

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "skill": self.skill, "prompt": self.prompt,
                "expected": self.expected, "observed": self.observed, "rerun": list(self.rerun)}


@dataclass(frozen=True)
class TriggerCheck:
    """The static trigger check as `check-triggers` runs it: its gate problems and every prediction."""

    problems: list[str]
    predictions: list[triggers.Prediction]
    method: str


def run_trigger_check(cfg: Config) -> TriggerCheck:
    """Score the trigger corpus against the current descriptions (the method `check-triggers` uses)."""
    skills = discover(cfg)
    prompts = evals.load_trigger_corpus(cfg, skills=set(skills))
    if not prompts:
        raise ConfigError(f"{cfg.evals_root}/{evals.TRIGGER_CORPUS} holds only drafts: the trigger check is not on yet",
                          source=f"{cfg.evals_root}/{evals.TRIGGER_CORPUS}",
                          fix="rewrite the drafts as your users would ask and delete their `draft: true` lines")
    descriptions = {n: str(s.frontmatter.get("description", "")) for n, s in skills.items()}
    method = cfg.triggers.scorer
    preds = trigger_scoring.predict_corpus(cfg, descriptions, prompts, method)  # the one path check-triggers uses
    problems = triggers.gate(cfg, triggers.metrics(preds, sorted(skills)))
    return TriggerCheck(problems, preds, method)


TRIGGER_RERUN = ("skill-eval check-triggers",)


def _trigger_case(p: triggers.Prediction, prompt: str, *, named: bool = False) -> FailingCase:
    expected = (f"the {p.expected} skill activates" if p.expected else "no skill activates (an out-of-scope prompt)")
    if p.correct:
        observed = (f"L1s predicts {p.predicted or 'no skill'} as expected; named with --case "
                    "(failing elsewhere, e.g. a live trigger run)" if named else "passes")
    else:
        observed = f"L1s predicts {p.predicted or 'no skill'}: {p.reason}"
    return FailingCase(p.prompt_id, "trigger", p.expected, prompt, expected, observed, TRIGGER_RERUN)


def from_check(cfg: Config, check: str) -> tuple[list[FailingCase], list[str]]:
    """(the failing cases of `check`, its gate problems)."""
    if check not in CHECKS:
        raise UsageError(f"--from-check {check!r} is not a check propose can read", fix=f"use one of: {', '.join(CHECKS)}")
    result = run_trigger_check(cfg)
    prompts = {p.id: p.prompt for p in evals.load_trigger_corpus(cfg)}
    return [_trigger_case(p, prompts[p.prompt_id]) for p in result.predictions if not p.correct], result.problems


def named(cfg: Config, ids: list[str]) -> list[FailingCase]:
    """The cases named by id: trigger prompt ids first, then behavioural scenario ids."""
    corpus = ({p.id: p for p in evals.load_trigger_corpus(cfg)}
              if evals.present(cfg, evals.TRIGGER_CORPUS) else {})
    preds = {p.prompt_id: p for p in run_trigger_check(cfg).predictions} if any(i in corpus for i in ids) else {}
    scenarios = ({s.id: s for s in evals.load_scenarios(cfg)}
                 if any(i not in corpus for i in ids) and evals.present(cfg, evals.SCENARIOS) else {})
    out = []
    for case_id in ids:
        if case_id in corpus:
            out.append(_trigger_case(preds[case_id], corpus[case_id].prompt, named=True))
        elif case_id in scenarios:
            out.append(_scenario_case(scenarios[case_id]))
        else:
            raise UsageError(f"--case {case_id!r} is neither a trigger prompt id nor a scenario id",
                             fix=f"name an id of {cfg.evals_root}/{evals.TRIGGER_CORPUS} or {cfg.evals_root}/{evals.SCENARIOS}")
    return out


def _scenario_case(s: evals.Scenario) -> FailingCase:
    if s.holdout:
        raise UsageError(f"--case {s.id}: a holdout scenario; skills are never tuned on holdout cases",
                         fix="name a scenario that is not `holdout: true` (the holdout set measures generalisation)")
    stated = s.expected or {}
    if "verdict" in stated or "uncertainty" in stated:
        parts = [f"verdict {stated.get('verdict') or 'none'}"]
        if stated.get("uncertainty"):
            parts.append(f"uncertainty {stated['uncertainty']}")
        expected = "the answer states " + ", ".join(parts)
    else:
        expected = "a correct, evidence-backed answer (the expected verdict is ground truth and is not shown)"
    return FailingCase(s.id, "behavioral", s.skill, s.prompt, expected,
                       "named with --case (its recorded evidence fails; see `skill-eval evidence`)",
                       (f"skill-eval run {s.id}", "skill-eval evidence"))


def dedupe(cases: list[FailingCase]) -> list[FailingCase]:
    seen: set[str] = set()
    out = []
    for c in cases:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
