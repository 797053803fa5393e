"""Endpoints and budgets as the runner sees them (issue 12 items 2 and 3): a loopback
`--base-url` (or `--no-auth`) needs no credential, a remote one still does; a run that hits
its token budget is sealed as a budget stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.content import config
from skill_eval.core.errors import ConfigError, InputError
from skill_eval.harness.adapters import is_loopback
from skill_eval.harness.runner.execute import RunOptions, preflight

REPO = Path(__file__).resolve().parents[3]
KEY = "SKILL_EVAL_OPENAI_API_KEY"


@pytest.mark.parametrize(("url", "local"), [
    ("http://127.0.0.1:8080/v1", True), ("http://127.5.6.7", True), ("http://[::1]:8080/v1", True),
    ("http://localhost:11434", True), ("https://LOCALHOST/v1", True),
    ("http://0.0.0.0:8080", False), ("http://10.0.0.1/v1", False), ("https://api.example.com/v1", False),
    ("http://127.0.0.1.example.com", False), ("http://localhost.example.com", False), ("http://127.0.0.1@example.com", False),
    ("ftp://127.0.0.1", False), ("127.0.0.1:8080", False), ("", False), (None, False), ("http://[bad", False),
])
def test_is_loopback(url, local):
    assert is_loopback(url) is local


@pytest.fixture
def cfg():
    return config.load(REPO)


def test_loopback_endpoint_needs_no_credential(cfg, monkeypatch):
    monkeypatch.delenv(KEY, raising=False)
    for url in ("http://127.0.0.1:8080/v1", "http://localhost:11434", "http://[::1]:9/v1"):
        adapter, info = preflight(cfg, RunOptions(adapter="openai-compatible", base_url=url))
        assert adapter.name == "openai-compatible" and info["binary"] is None


def test_remote_endpoint_still_requires_a_credential(cfg, monkeypatch):
    monkeypatch.delenv(KEY, raising=False)
    with pytest.raises(ConfigError, match="no credential for openai-compatible") as exc:
        preflight(cfg, RunOptions(adapter="openai-compatible", base_url="https://api.example.com/v1"))
    assert "--no-auth" in exc.value.fix
    # explicitly keyless, or a key in the environment: accepted
    preflight(cfg, RunOptions(adapter="openai-compatible", base_url="https://api.example.com/v1", no_auth=True))
    monkeypatch.setenv(KEY, "sk-test-0123456789")
    preflight(cfg, RunOptions(adapter="openai-compatible", base_url="https://api.example.com/v1"))


def test_capabilities_replace_name_checks(cfg, monkeypatch):
    monkeypatch.delenv(KEY, raising=False)
    with pytest.raises(ConfigError, match="needs an endpoint"):
        preflight(cfg, RunOptions(adapter="openai-compatible", no_auth=True))
    with pytest.raises(ConfigError, match="scripted adapter needs --model-server"):
        preflight(cfg, RunOptions(adapter="scripted"))


def test_run_hitting_the_token_budget_is_sealed_budget_stop(repo_copy, capsys):
    """The scripted model script spends 120 tokens a turn (DEFAULT_USAGE); a 200-token budget
    stops it before its third (final) turn."""
    script = "agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml"
    code = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--model-server",
                 f"scripted:{script}", "--no-trigger", "-k", "1", "--run-id", "budget", "--max-total-tokens", "200"])
    assert code == 1
    bundle = repo_copy / "agent-evals/skills/evidence/abi-compat-review/skill-agent/budget/review-removed-export/0"
    meta = json.loads((bundle / "meta.json").read_text())
    usage = json.loads((bundle / "usage.json").read_text())
    assert usage["stop_reason"] == "budget" and usage["turns"] == 2 and usage["tokens_in"] + usage["tokens_out"] == 240
    assert meta["extra"]["stop_reason"] == "budget"
    assert meta["extra"]["run_errors"] == ["budget_exceeded: 240 tokens spent, budget 200"]
    assert meta["status"] == "incomplete" and meta["status_reason"].startswith("budget: budget_exceeded")
    if "outcome" in meta:  # meta v2 (helper A's runner): the stop reason maps to its own outcome
        assert meta["outcome"] == "budget_stop"
    assert (bundle / "final.md").read_text() == ""


def test_max_tokens_from_config_reaches_the_endpoint_and_the_flag_overrides_it(repo_copy, monkeypatch, capsys):
    from openai_stub import Stub

    toml = repo_copy / "skill-eval.toml"
    toml.write_text(toml.read_text().replace("[agent]\n", "[agent]\nmax_tokens = 77\nmax_total_tokens = 5000\n", 1))
    monkeypatch.delenv(KEY, raising=False)
    final = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
    for flags, expected in (([], 77), (["--max-tokens", "55"], 55)):
        with Stub(lambda n, body: (200, final, 0.0)) as stub:
            assert main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "openai-compatible", "--base-url",
                         stub.url, "--no-trigger", "-k", "1", "--run-id", f"cap{expected}", *flags]) == 0, capsys.readouterr()
        assert [r["body"]["max_tokens"] for r in stub.requests] == [expected]
    toml.write_text(toml.read_text().replace("max_tokens = 77", "max_tokens = 0"))
    with pytest.raises(InputError, match="agent.max_tokens"):
        config.load(repo_copy)
