"""`skill-eval run --temperature/--seed/--aa` (issue 12 items 1 and 5) against a loopback stub.

A real model is sampled: the built-in loop sends the temperature and a per-run seed with every
request, meta.json records both, and an A/A replicate (`--aa`, its own run id) says so in
meta.extra.aa — which is how the scorecard tells it from the main recording. No live model.
"""

from __future__ import annotations

import json

from openai_stub import Stub

from skill_eval.cli import main
from skill_eval.harness.runner.execute import item_seed
from skill_eval.harness.runner.plan import RunItem
from skill_eval.reporting.scorecard.runs import AA, MAIN, replicate_of

BUNDLE = "agent-evals/skills/evidence/abi-compat-review/skill-agent/{run}/review-removed-export/{k}"


def _answer(n, body):
    message = {"role": "assistant", "content": "No evidence gathered."}
    return 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 40, "completion_tokens": 4, "total_tokens": 44}}, 0.0


def _run(root, url, *extra):
    return main(["run", "--root", str(root), "review-removed-export", "--agent", "openai-compatible", "--base-url", url,
                 "--model", "tiny", "--no-trigger", "-k", "2", *extra])


def test_sampling_is_sent_recorded_and_aa_is_marked(repo_copy, monkeypatch, capsys):
    monkeypatch.delenv("SKILL_EVAL_OPENAI_API_KEY", raising=False)
    with Stub(_answer) as stub:
        assert _run(repo_copy, stub.url, "--temperature", "0.8", "--seed", "7", "--run-id", "cal") == 0, capsys.readouterr()
        assert _run(repo_copy, stub.url, "--temperature", "0.8", "--seed", "7", "--run-id", "cal-aa", "--aa") == 0
    bodies = [r["body"] for r in stub.requests]
    assert len(bodies) == 4 and all(b["temperature"] == 0.8 for b in bodies)
    metas = {(run, k): json.loads((repo_copy / BUNDLE.format(run=run, k=k) / "meta.json").read_text())
             for run in ("cal", "cal-aa") for k in (0, 1)}
    seeds = [m["seed"] for m in metas.values()]
    # one seed per run: the k repeats and the A/A replicate never share one (else A/A measures nothing)
    assert len(set(seeds)) == 4 and sorted(b["seed"] for b in bodies) == sorted(seeds)
    assert all(m["temperature"] == 0.8 for m in metas.values())
    assert [replicate_of(metas[("cal", 0)]), replicate_of(metas[("cal-aa", 0)])] == [MAIN, AA]
    assert metas[("cal-aa", 1)]["extra"]["aa"] is True and "aa" not in metas[("cal", 1)]["extra"]


def test_without_sampling_flags_nothing_is_sent_or_claimed(repo_copy, monkeypatch):
    monkeypatch.delenv("SKILL_EVAL_OPENAI_API_KEY", raising=False)
    with Stub(_answer) as stub:
        assert _run(repo_copy, stub.url, "--run-id", "plain", "-k", "1") == 0
    assert "temperature" not in stub.requests[0]["body"] and "seed" not in stub.requests[0]["body"]
    meta = json.loads((repo_copy / BUNDLE.format(run="plain", k=0) / "meta.json").read_text())
    assert meta["seed"] is None and meta["temperature"] is None


def test_sampling_needs_a_real_model(repo_copy, capsys):
    # (--aa suffixes the run id itself: tests/grading/test_arms.py)
    assert main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "claude-code", "--temperature", "0.5"]) == 2
    assert "--temperature/--seed" in capsys.readouterr().err


def test_item_seed_is_stable_and_distinct():
    a = RunItem("behavioral", "s", "skill-agent", "run", "x", 0)
    assert item_seed(None, a) is None
    assert item_seed(1, a) == item_seed(1, RunItem("behavioral", "s", "skill-agent", "run", "x", 0))
    others = [RunItem("behavioral", "s", "skill-agent", "run-aa", "x", 0), RunItem("behavioral", "s", "skill-agent", "run", "x", 1),
              RunItem("behavioral", "s", "skill-agent", "run", "y", 0)]
    assert len({item_seed(1, a), *(item_seed(1, o) for o in others), item_seed(2, a)}) == 5
    assert all(0 <= item_seed(s, a) < 2**31 for s in range(50))
