"""How a run ended: completed | agent_error | infra_error | budget_stop (pure, no I/O).

The distinction decides what a run may count for. A run the *agent* ended badly (it gave up,
was denied a tool, used an unknown skill) or that hit its budget is a scored failure. A run the
*infrastructure* ended (transport error, HTTP 429/5xx, a crashed or truncated CLI stream, a
timeout before any turn) says nothing about the skill: it is excluded from scoring, and when such
runs exceed `max_infra_error_rate` of a cell the cell is an error, never a number (peers scored
these as skill failures and reported "100 % but FAILED").

meta.json v2 carries `outcome`, written by the runner; an older meta has only `status` and
`status_reason`, from which the outcome is derived here. Unknown failure reasons count as the
agent's (a scored failure): that can only make a skill look worse, never better.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from skill_eval.core.vocab import Outcome

COMPLETED: Final = "completed"
AGENT_ERROR: Final = "agent_error"
INFRA_ERROR: Final = "infra_error"
BUDGET_STOP: Final = "budget_stop"
OUTCOMES: tuple[Outcome, ...] = (COMPLETED, AGENT_ERROR, INFRA_ERROR, BUDGET_STOP)

# run_error kinds (adapters/base.py) that mean the harness, transport or CLI failed, not the agent
INFRA_KINDS = ("model_config", "malformed_stream", "incomplete_stream", "record_failed")
BUDGET_KINDS = ("max_turns", "budget", "budget_exceeded")
_TRANSPORT = re.compile(
    r"\b(429|5\d\d)\b|rate.?limit|overloaded|service unavailable|bad gateway|gateway time-?out|"
    r"connection (refused|reset|error|aborted)|econn\w*|transport|network is unreachable|"
    r"name or service not known|tls|ssl error|cli crash|segmentation fault|killed by signal",
    re.IGNORECASE,
)


def outcome_of(meta: Mapping[str, Any], usage: Mapping[str, Any] | None = None) -> Outcome:
    """The run's outcome: meta's own `outcome` when present (v2), else derived from status/status_reason.

    `usage` (usage.json) distinguishes a timeout before any turn (infra) from one mid-run (budget).
    A meta whose `outcome` is not one of OUTCOMES is unreadable evidence: infra_error.
    """
    declared = meta.get("outcome")
    if declared is not None:
        return declared if declared in OUTCOMES else INFRA_ERROR
    return derive(meta.get("status"), str(meta.get("status_reason") or ""), turns=(usage or {}).get("turns"))


def derive(status: Any, reason: str, *, turns: Any = None, infra: bool = False) -> Outcome:
    """The one rule from status/status_reason to an outcome: the runner writes meta v2's `outcome`
    with it, the meta 1->2 migration and v1 readers derive it with it.

    `infra`: the runner itself observed an infrastructure failure (recording failed, the agent
    could not start). `turns`: model turns taken (0 distinguishes a timeout before any turn).
    """
    kind = reason.split(":", 1)[0].strip().lower()
    if infra:
        return INFRA_ERROR
    if status == "complete":
        return COMPLETED
    if _TRANSPORT.search(reason) or kind in INFRA_KINDS:
        return INFRA_ERROR
    if status == "incomplete":
        if kind == "timeout":
            return INFRA_ERROR if turns == 0 else BUDGET_STOP
        if kind in BUDGET_KINDS:
            return BUDGET_STOP
        return INFRA_ERROR  # a truncated stream ("incomplete: ...") is the CLI's failure, not the agent's
    if status == "error":
        return BUDGET_STOP if kind in BUDGET_KINDS else AGENT_ERROR
    return INFRA_ERROR  # no status at all: nothing to score


def scored(outcome: str) -> bool:
    """Whether a run with this outcome counts as a pass/fail vote for the skill."""
    return outcome != INFRA_ERROR
