"""No machine-local paths in bundles (issue 12 item 4): the runner replaces the sandbox
root, its work dir and HOME with placeholders wherever the agent echoed them, and the `pr`
check finds any that are left."""

from __future__ import annotations

import json
import re
from pathlib import Path

from openai_stub import Stub

from skill_eval.cli import main
from skill_eval.harness.adapters.base import NormalizedRun
from skill_eval.harness.runner import isolation
from skill_eval.harness.runner.normalize import (
    PathScrubber,
    check_bundles,
    check_evidence,
    find_local_paths,
    scrub_captured,
    scrub_run,
)

ROOT, WORK, HOME = Path("/tmp/sandbox-ab_cd123"), Path("/tmp/sandbox-ab_cd123/work"), Path("/tmp/sandbox-ab_cd123/home")


def test_scrubber_replaces_longest_prefix_first_and_counts():
    s = PathScrubber.for_sandbox(ROOT, WORK, HOME)
    text = "cd /tmp/sandbox-ab_cd123/work/src; HOME=/tmp/sandbox-ab_cd123/home; ls /tmp/sandbox-ab_cd123/record /tmp/sandbox-ab_cd1234"
    assert s.text(text) == "cd <work>/src; HOME=<home>; ls <sandbox>/record /tmp/sandbox-ab_cd1234"
    assert s.counts == {"<work>": 1, "<home>": 1, "<sandbox>": 1}
    ends = "in /tmp/sandbox-ab_cd123/work. Not /tmp/sandbox-ab_cd123/work.bak or /tmp/sandbox-ab_cd123/work-old"
    assert s.text(ends) == "in <work>. Not <sandbox>/work.bak or <sandbox>/work-old"
    # Claude's project directory mangles the cwd; bytes (raw streams) work the same way
    raw = b'{"memory": "/x/.claude/projects/-tmp-sandbox-ab-cd123-work/memory/"}'
    assert s.bytes(raw) == b'{"memory": "/x/.claude/projects/<work>/memory/"}'


def test_scrub_run_covers_final_events_errors_and_streams():
    s = PathScrubber.for_sandbox(ROOT, WORK, HOME)
    run = NormalizedRun(
        events=[{"type": "tool_call", "id": "1", "tool": "shell", "input": {"command": f"cat {WORK}/a"}},
                {"type": "tool_result", "id": "1", "is_error": False, "output": f"{HOME}/.cache"}],
        final_text=f"I wrote {WORK}/report.json", usage={}, errors=[f"agent_error: cannot read {ROOT}/x"], stop_reason="completed")
    clean, streams = scrub_run(s, run, {"stream": f'{{"cwd": "{WORK}"}}'.encode(), "stderr": b"nothing"})
    assert clean.final_text == "I wrote <work>/report.json" and clean.errors == ["agent_error: cannot read <sandbox>/x"]
    assert clean.events[0]["input"]["command"] == "cat <work>/a" and clean.events[1]["output"] == "<home>/.cache"
    assert streams == {"stream": b'{"cwd": "<work>"}', "stderr": b"nothing"}
    assert s.counts == {"<work>": 3, "<home>": 1, "<sandbox>": 1}
    assert run.final_text.startswith("I wrote /tmp")  # the input run is not mutated


def test_pr_check_finds_a_leftover_sandbox_path(tmp_path):
    bundle = tmp_path / "evidence" / "b" / "0"
    (bundle / "raw").mkdir(parents=True)
    (bundle / "captured").mkdir()
    (bundle / "final.md").write_text("all clean: <work>/report.json\n")
    (bundle / "captured" / "1.out.d" / "0").mkdir(parents=True)
    (bundle / "captured" / "1.out.d" / "0" / "report.json").write_text('{"old": "/tmp/sandbox-lx04jk3f/work/old"}')  # a snapshot: not scanned
    assert find_local_paths(bundle) == []
    (bundle / "captured" / "1.err").write_text("Warning: '/tmp/skill-eval-sandboxes-0/sandbox-123-lx04jk3f/work/old/lib.so'\n")
    assert find_local_paths(bundle) == ["captured/1.err: skill-eval-sandboxes-0"]
    (bundle / "captured" / "1.err").write_text("Warning: '<work>/old/lib.so'\n")
    (bundle / "raw" / "stream.jsonl").write_text('{"cwd": "/tmp/sandbox-lx04jk3f/work"}\n')
    (bundle / "events.jsonl").write_text('{"x": "/root/.claude/projects/-tmp-sandbox-lx04jk3f-work/memory"}\n')
    assert find_local_paths(bundle) == ["events.jsonl: -sandbox-lx04jk3f-work", "raw/stream.jsonl: /sandbox-lx04jk3f"]
    problems = check_bundles([bundle], tmp_path)
    assert len(problems) == 2 and problems[0].startswith("evidence/b/0/events.jsonl: ")
    (bundle / "meta.json").write_text("{}")
    assert check_evidence(tmp_path / "evidence", tmp_path) == problems


def _echo_model(n, body):
    """Turn 0: run `pwd; echo $HOME`. Turn 1: answer echoing the cwd from the system prompt and
    the tool output — what a small real model does."""
    messages = body["messages"]
    if n == 0:
        call = {"id": "c0", "type": "function", "function": {"name": "shell", "arguments": json.dumps({"command": "pwd; echo $HOME"})}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    else:
        cwd = re.search(r"working in (\S+?)\.\n", messages[0]["content"]).group(1)
        tool_output = next(m["content"] for m in messages if m["role"] == "tool")
        message = {"role": "assistant", "content": f"I worked in {cwd}.\nThe shell said:\n{tool_output}"}
    usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    return 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}, 0.0


def test_model_echoing_sandbox_paths_leaves_none_in_the_bundle(repo_copy, monkeypatch, capsys):
    monkeypatch.delenv("SKILL_EVAL_OPENAI_API_KEY", raising=False)  # a loopback endpoint needs no key
    with Stub(_echo_model) as stub:
        code = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "openai-compatible", "--base-url",
                     stub.url, "--model", "echo", "--no-trigger", "-k", "1", "--run-id", "echo"])
    assert code == 0, capsys.readouterr()
    bundle = repo_copy / "agent-evals/skills/evidence/abi-compat-review/skill-agent/echo/review-removed-export/0"
    final = (bundle / "final.md").read_text()
    assert final.startswith("I worked in <work>.") and "<home>" in final and "/sandbox-" not in final
    assert "<work>" in (bundle / "events.jsonl").read_text() and "<work>" in (bundle / "raw/stream.jsonl").read_text()
    assert find_local_paths(bundle) == []
    meta = json.loads((bundle / "meta.json").read_text())
    # a loopback endpoint the runner does not run (this stub) may be a fake: never "a real model"
    assert meta["scripted"] is False and meta["extra"]["model_source"] == "local-endpoint"
    capsys.readouterr()
    main(["grade", "--root", str(repo_copy), "--json", str(bundle)])
    assert json.loads(capsys.readouterr().out)["model_source"] == "local-endpoint"
    # labelled like scripted in the scorecard (its runs, cells, banner and summary line) ...
    from skill_eval.content.config import load as load_config
    from skill_eval.grading.evidence import release_problems
    from skill_eval.grading.graders import Catalog, grade_bundle
    from skill_eval.reporting import scorecard as sc
    from skill_eval.reporting.scorecard import markdown
    from skill_eval.reporting.scorecard import runs as sc_runs
    cfg = load_config(repo_copy)
    run = next(r for r in sc_runs.collect(cfg)[0] if r.path.startswith("abi-compat-review/skill-agent/echo/"))
    assert run.scripted is True and run.model == "local-endpoint:echo"
    # ... and a release counts it only where [evals] release_sources names local-endpoint
    g = grade_bundle(bundle, Catalog(cfg))
    assert any("local endpoint" in p for p in release_problems("b", meta, g))
    assert not any("endpoint" in p for p in release_problems("b", meta, g, ("remote", "local-endpoint")))
    md = markdown.render(sc.compute(cfg).card)
    assert "local-endpoint:echo" in md and "a local endpoint the runner does not run" in md
    counts = meta["extra"]["path_placeholders"]
    assert counts["<work>"] >= 3 and counts["<home>"] >= 2  # final + events + raw each
    # the model itself saw the paths the agent saw (the replacement is the runner's, after the run): the
    # fixed layout under bubblewrap (no host path at all, runner/layout.py), the host's sandbox below it
    seen = json.dumps(stub.requests[1]["body"])
    if isolation.level() == "bwrap":
        assert "/sandbox-" not in seen and "working in /work." in seen and str(repo_copy) not in seen
    else:
        assert "/sandbox-" in seen


def test_captured_subject_streams_are_scrubbed_and_their_digests_restated(tmp_path):
    import hashlib

    root = tmp_path / "skill-eval-sandboxes-0" / "sandbox-123-lx04jk3f"
    work, home = root / "work", root / "home"
    (root / "record" / "captured").mkdir(parents=True)
    err = f"Warning: '{work}/old/lib.so' — no headers\n".encode()
    (root / "record" / "captured" / "1.err").write_bytes(err)
    (root / "record" / "captured" / "1.out").write_bytes(b"{}")
    calls = [{"call": 1, "stdout": {"path": "captured/1.out", "sha256": hashlib.sha256(b"{}").hexdigest(), "bytes": 2},
              "stderr": {"path": "captured/1.err", "sha256": hashlib.sha256(err).hexdigest(), "bytes": len(err)}}]
    s = PathScrubber.for_sandbox(root, work, home)
    scrub_captured(s, calls, root / "record")
    stored = (root / "record" / "captured" / "1.err").read_bytes()
    assert stored == "Warning: '<work>/old/lib.so' — no headers\n".encode() and s.counts == {"<work>": 1}
    assert calls[0]["stderr"] == {"path": "captured/1.err", "sha256": hashlib.sha256(stored).hexdigest(), "bytes": len(stored)}
    assert calls[0]["stdout"]["bytes"] == 2  # untouched stream, untouched record


def test_a_real_key_reaches_the_endpoint_through_the_proxy_and_never_the_agent(repo_copy, monkeypatch, capsys):
    """Issue 24 item 4, with an endpoint the runner does not run (a loopback stub standing in for a
    provider): the stub receives the runner's key, the agent only ever had the run's token, and neither
    the key nor the token is in the bundle."""
    key = "sk-canary-" + "9f3a" * 10
    monkeypatch.setenv("SKILL_EVAL_OPENAI_API_KEY", key)
    with Stub(_echo_model) as stub:
        code = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "openai-compatible", "--base-url",
                     stub.url, "--model", "echo", "--no-trigger", "-k", "1", "--run-id", "proxied"])
    assert code == 0, capsys.readouterr()
    assert stub.requests and all(r["authorization"] == f"Bearer {key}" for r in stub.requests)
    bundle = repo_copy / "agent-evals/skills/evidence/abi-compat-review/skill-agent/proxied/review-removed-export/0"
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["extra"]["credentials"] == "proxied" and meta["extra"]["proxy"]["forwarded"] == len(stub.requests)
    for f in bundle.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert key.encode() not in data and b"skill-eval-proxy-" not in data, f
