"""Robustness on REAL model output (issue 12 item 6): replies recorded from llama-cpp-python 0.3.36
serving SmolLM2-135M (tests/data/malformed/recorded_llama_cpp_0.3.36_smollm2.json, written by
`python scripts/e2e_local.py corpus`), replayed through a loopback stub — no live model here.

Each recorded run must replay to exactly what the loop reported when it was recorded, end its
stream cleanly, within seconds, with only documented run_error kinds; a malformed call is never
executed, and every case but a plain text answer ends as a run the graders fail (not ok).
The shell tool answers the same canned output as during recording, so a replay never runs a
135M model's commands.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from openai_stub import Stub, replay

from skill_eval.core import schemas
from skill_eval.harness.adapters import LaunchContext, agent_loop, get_adapter
from skill_eval.local.localcorpus import category

CORPUS = json.loads((Path(__file__).parents[2] / "data/malformed/recorded_llama_cpp_0.3.36_smollm2.json").read_text())
CASES = {c["name"]: c for c in CORPUS["cases"]}
DOCUMENTED = {"permission_denied", "tool_not_registered", "invalid_tool_call", "max_turns", "budget_exceeded", "unknown_skill",
              "skill_activation_failed", "skill_not_loaded", "model_config", "sandbox_denied", "agent_error",
              "malformed_stream", "incomplete_stream"}


def _canned_shell(self, command):
    return False, "exit code: 0\n", {"exit_code": 0}


def replay_case(case, tmp_path, monkeypatch):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (ws / "README.md").write_text("A demo library with two builds in old/ and new/.\n")  # as when recorded
    adapter = get_adapter("openai-compatible")
    monkeypatch.setattr(agent_loop.Agent, "_shell", _canned_shell)
    monkeypatch.chdir(ws)
    monkeypatch.delenv("SKILL_EVAL_OPENAI_API_KEY", raising=False)
    with Stub(replay(case["replies"])) as stub:
        ctx = LaunchContext("replayed", home=home, workdir=ws, model="smollm2-135m", max_turns=case["max_turns"], base_url=stub.url,
                            max_tokens=case["max_tokens"], max_total_tokens=16000, temperature=0.8, seed=case["seed"])
        argv = adapter.build_command(ctx)[5:]
        argv = [*argv[:-2], "--request-timeout", "2", *argv[-2:]]
        out = io.StringIO()
        code = agent_loop.main(argv, out=out)
    raw = out.getvalue()
    return code, raw, adapter.parse(raw.encode(), adapter.skill_dirs(home, ws), cwd=ws, installed_skills=[])


def test_corpus_is_labelled_recorded_and_covers_real_failures():
    assert CORPUS["description"].startswith("RECORDED from llama-cpp-python 0.3.36")
    assert "SmolLM2-135M" in CORPUS["description"]
    cats = {c["category"] for c in CASES.values()}
    # what 12 recorded runs showed: arguments that are not JSON, and replies cut at the token cap; never an
    # unknown tool name (the server constrains names by grammar) nor a prose-only turn (tool_choice auto)
    assert len(CASES) >= 4 and {"bad_json_arguments", "runaway_generation"} <= cats, cats
    # bodies are the server's own, verbatim (not re-serialised by us)
    first = json.loads(next(iter(CASES.values()))["replies"][0]["raw"])
    assert first["object"] == "chat.completion" and first["id"].startswith("chatcmpl-")


@pytest.mark.parametrize("name", sorted(CASES))
def test_recorded_reply_replays_to_a_clear_outcome(name, tmp_path, monkeypatch):
    case = CASES[name]
    started = time.monotonic()
    code, raw, run = replay_case(case, tmp_path, monkeypatch)
    assert time.monotonic() - started < 15  # never a hang
    expect = case["expect"]
    assert code in (0, 1)
    assert run.stop_reason == expect["stop_reason"], run.errors
    assert [e.split(":", 1)[0] for e in run.errors] == expect["errors"]
    assert all(e.split(":", 1)[0] in DOCUMENTED for e in run.errors)
    assert all(schemas.errors(e, "event") == [] for e in run.events)
    lines = [json.loads(line) for line in raw.splitlines()]
    assert lines[-1]["type"] == "result"
    executed = [r for r in lines if r["type"] == "tool_result" and not r.get("error")]
    assert len(executed) == expect["executed"]
    # a malformed call is reported, never run
    assert not [r for r in lines if r["type"] == "tool_result" and r.get("error") and r.get("exit_code") is not None]
    assert category(raw, run) == case["category"]
    if case["category"] != "text_only_turn":
        assert not run.ok and run.errors

