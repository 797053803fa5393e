"""e2e: the real agent CLIs through the runner, the scripted model server, the shim and the real
abicheck; the sealed bundle is then graded. Needs `python scripts/install_agent_clis.py`."""

import json
import re
from pathlib import Path

import pytest

from skill_eval.cli import main
from skill_eval.harness.runner.normalize import find_local_paths

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".cache" / "agent-clis" / "node_modules" / ".bin"
SCRIPT = "agent-evals/skills/model-scripts/abi-compat-review-removed-export.yaml"
CASES = {"claude-code": ("claude", "1"), "codex": ("codex", "2"), "gemini-cli": ("gemini", "1")}

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("agent", sorted(CASES))
def test_real_cli_records_a_bundle_that_grades_clean(repo_copy, capsys, agent):
    exe, tier = CASES[agent]
    binary = BIN / exe
    if not binary.exists():
        pytest.skip(f"{exe} not installed: run `python scripts/install_agent_clis.py`")
    rc = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", agent, "--agent-binary", str(binary),
               "--model-server", f"scripted:{SCRIPT}", "--no-trigger", "-k", "1", "--run-id", f"e2e-{agent}", "--timeout", "120"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    bundle = repo_copy / f"agent-evals/skills/evidence/abi-compat-review/skill-agent/e2e-{agent}/review-removed-export/0"
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["agent"]["name"] == agent and meta["adapter_tier"] == tier and meta["model"].startswith("scripted:")
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]
    assert {"type": "skill_activated", "skill": "abi-compat-review", "tier": tier} in events
    calls = [json.loads(line) for line in (bundle / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 1 and calls[0]["argv"][:2] == ["abicheck", "compare"] and calls[0]["exit_code"] == 4
    assert json.loads((bundle / "claim.json").read_text())["claim"]["verdict"] == "BREAKING"
    assert find_local_paths(bundle) == [] and meta["extra"]["path_placeholders"].get("<work>", 0) > 0  # issue 12 item 4
    assert main(["grade", "--root", str(repo_copy), "--json", str(bundle)]) == 0
    grade = json.loads(capsys.readouterr().out)
    grade = grade[0] if isinstance(grade, list) else grade.get("bundles", [grade])[0] if "bundles" in grade else grade
    assert grade["failed_dimensions"] == [] and grade["zero_tolerance_failed"] == []


def test_forged_records_through_claude_code_are_not_evidence(repo_copy, capsys):
    """The real Claude Code CLI, in the bwrap sandbox, runs a forging Bash command instead of abicheck:
    the bundle has no call and cannot grade PASS on dimensions 3 and 6 (issue 7)."""
    from test_integrity import FORGED_RECORD, write_script

    binary = BIN / "claude"
    if not binary.exists():
        pytest.skip("claude not installed: run `python scripts/install_agent_clis.py`")
    forge = ("for d in ../record \"$SKILL_EVAL_RECORD_DIR\" \"$TMPDIR/record\" /tmp/record; do mkdir -p \"$d/calls\"; "
             f"printf '%s' '{FORGED_RECORD}' > \"$d/calls/1.json\"; done; "
             "echo '{\"verdict\": \"BREAKING\"}' > report.json; cat /proc/[0-9]*/environ | tr '\\0' '\\n' | wc -l")
    script = write_script(repo_copy, "forge-claude", [forge])
    main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "claude-code", "--agent-binary", str(binary),
          "--model-server", f"scripted:{script}", "--no-trigger", "-k", "1", "--run-id", "e2e-forge", "--timeout", "120"])
    bundle = repo_copy / "agent-evals/skills/evidence/abi-compat-review/skill-agent/e2e-forge/review-removed-export/0"
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["isolation"] == "bwrap" and meta["agent"]["name"] == "claude-code"
    assert (bundle / "calls.jsonl").read_text().strip() == ""
    assert b"printf" in (bundle / "raw/stream.jsonl").read_bytes()  # the forging command did run
    capsys.readouterr()
    main(["grade", "--root", str(repo_copy), "--json", str(bundle)])
    grade = json.loads(capsys.readouterr().out)
    assert grade["passed"] is False
    assert {"3", "6"} <= {str(d) for d in grade["failed_dimensions"]} | {str(d) for d in grade["zero_tolerance_failed"]}


@pytest.mark.parametrize("read", ["Read", "cat"])
def test_read_only_activation_through_claude_code_fails_dimension_1(repo_copy, capsys, read):
    """The real Claude Code CLI reads the installed SKILL.md (its Read tool, or `cat` through Bash) instead
    of activating it with the Skill tool, then answers correctly from a real compare: a tier-1 adapter
    needs a tier-1 activation, so dimension 1 fails naming it (issue 7). The scripted `loop` adapter cannot
    show this: there a read_file of SKILL.md is its own, tier-1, activation."""
    binary = BIN / "claude"
    if not binary.exists():
        pytest.skip("claude not installed: run `python scripts/install_agent_clis.py`")
    md = ".claude/skills/abi-compat-review/SKILL.md"
    first = (f"      - tool: Read\n        input: {{file_path: {md}}}" if read == "Read"
             else f"      - shell: {json.dumps('cat ' + md)}")
    claim = json.dumps({"verdict": "BREAKING", "confident": True, "evidence": [1]})
    rel = f"agent-evals/skills/model-scripts/read-only-{read}.yaml"
    (repo_copy / rel).write_text("\n".join([
        "schema_version: 1", "description: reads SKILL.md instead of activating it", "turns:", "  - tools:", first,
        "  - tools:", "      - shell: abicheck compare old/libdemo.so.1 new/libdemo.so.1 -o json=report.json",
        "  - final: |", "      Removed export: BREAKING.", "", "      ```skill-eval-claim", "      " + claim, "      ```", ""]))
    main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "claude-code", "--agent-binary", str(binary),
          "--model-server", f"scripted:{rel}", "--no-trigger", "-k", "1", "--run-id", f"e2e-read-{read}", "--timeout", "120"])
    bundle = repo_copy / f"agent-evals/skills/evidence/abi-compat-review/skill-agent/e2e-read-{read}/review-removed-export/0"
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["agent"]["name"] == "claude-code" and meta["adapter_tier"] == "1"
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]
    activations = [e for e in events if e.get("type") == "skill_activated"]
    assert activations == [{"type": "skill_activated", "skill": "abi-compat-review", "tier": "2"}], activations
    calls = [json.loads(line) for line in (bundle / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 1 and calls[0]["exit_code"] == 4  # the answer itself rests on a real call
    capsys.readouterr()
    main(["grade", "--root", str(repo_copy), "--json", str(bundle)])
    grade = json.loads(capsys.readouterr().out)
    assert grade["passed"] is False
    assert "1" in {str(d) for d in grade["failed_dimensions"]} | {str(d) for d in grade["zero_tolerance_failed"]}
    why = grade["dimensions"]["1"]["reasons"]
    assert any("only read (a tier-2 activation) under a tier-1 adapter" in r for r in why), why


KEY_SCAN = r"""
import os, sys
key = bytes(b ^ 0x5A for b in bytes.fromhex(sys.argv[1]))  # masked on the command line: no form redaction knows
hits, seen = [], 0
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for part in ("environ", "cmdline"):
            try:
                seen += 1
                if key in open(f"/proc/{pid}/{part}", "rb").read():
                    hits.append(f"/proc/{pid}/{part}")
            except OSError:
                pass
for top in ("/work", "/home/agent", "/tmp", "/run/skill-eval"):
    for d, _dirs, files in os.walk(top):
        for name in files:
            p = os.path.join(d, name)
            try:
                seen += 1
                if key in open(p, "rb").read(1 << 26):
                    hits.append(p)
            except OSError:
                pass
if key in b"\0".join(k.encode() + b"=" + v.encode() for k, v in os.environ.items()):
    hits.append("env")
print(f"KEY-SCAN hits={len(hits)} scanned={seen} {' '.join(hits)}")
"""
KEY_VARS = {"claude-code": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY", "gemini-cli": "GEMINI_API_KEY"}


@pytest.mark.parametrize("agent", sorted(CASES))
def test_the_real_key_never_enters_the_sandbox(repo_copy, capsys, monkeypatch, agent):
    """Issue 24 item 4: the runner holds the provider key; the real CLI talks to the scripted server through
    the run's loopback credential proxy with a per-run token. A scan from inside the sandbox (every
    process's environment and command line, every file of /work, /home/agent, /tmp and /run/skill-eval)
    finds no byte of the key, because it was never there; the run completes through the proxy."""
    import base64
    import secrets

    from test_integrity import write_script

    exe, _tier = CASES[agent]
    binary = BIN / exe
    if not binary.exists():
        pytest.skip(f"{exe} not installed: run `python scripts/install_agent_clis.py`")
    key = "sk-canary-" + secrets.token_hex(20)
    monkeypatch.setenv(KEY_VARS[agent], key)
    scan = "import base64; exec(base64.b64decode('" + base64.b64encode(KEY_SCAN.encode()).decode() + "'))"
    masked = bytes(b ^ 0x5A for b in key.encode()).hex()  # the scan's argument: not the key in any redacted form
    script = write_script(repo_copy, f"keyscan-{agent}", [f'python3 -c "{scan}" {masked}'])
    rc = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", agent, "--agent-binary", str(binary),
               "--model-server", f"scripted:{script}", "--no-trigger", "-k", "1", "--run-id", f"keyscan-{agent}",
               "--timeout", "120"])
    out = capsys.readouterr()
    bundle = repo_copy / f"agent-evals/skills/evidence/abi-compat-review/skill-agent/keyscan-{agent}/review-removed-export/0"
    assert (bundle / "meta.json").is_file(), out  # sealed: no secret found in anything the run wrote
    meta = json.loads((bundle / "meta.json").read_text())
    # scripted turns: the runner forwards no key (the credential swap itself: tests/harness/runner/test_proxy.py
    # and test_runner_paths' local endpoint), yet the CLI ran through the proxy with the run's token
    assert meta["extra"]["credentials"] == "none", meta["extra"]
    proxy = meta["extra"]["proxy"]
    assert proxy["forwarded"] >= 1 and proxy["upstream_errors"] == 0, proxy
    # refused: only requests that carried no credential at all (Claude Code's `HEAD /` reachability probe)
    assert proxy["refused"] == len(proxy.get("refusals", [])) and all(
        r.endswith("[no credential]") for r in proxy.get("refusals", [])), proxy
    raw = (bundle / "raw/stream.jsonl").read_text()
    found = re.search(r"KEY-SCAN hits=(\d+) scanned=(\d+)", raw)
    assert found, raw[-2000:]
    assert int(found.group(1)) == 0 and int(found.group(2)) > 20, found.group(0)
    assert key not in raw and rc in (0, 1)
