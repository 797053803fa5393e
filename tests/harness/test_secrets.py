"""Credentials in evidence: every encoding is redacted, a bundle that held one is never sealed (the canary).

The leak oracle here (`leaks`) is deliberately independent of runner.secrets: it *decodes* what it
finds (base64 at every alignment, hex, URL escapes, reversal, line folding) instead of re-deriving
the needles the implementation searches for, so a form the implementation forgot shows up here.
"""

from __future__ import annotations

import base64
import json
import os
import re
import textwrap
import time
from pathlib import Path
from urllib.parse import quote, quote_plus, unquote_to_bytes

import pytest

from skill_eval.core.errors import ConfigError
from skill_eval.harness.runner import bundle_writer, secrets
from skill_eval.harness.runner.bundle_writer import BundleHeld, BundleWriter
from skill_eval.harness.runner.secrets import check_injectable, injected_secrets, redact

CANARIES = {
    "CANARY_TOKEN": "k9Xq2",  # 5 characters: shorter than any earlier threshold
    "CANARY_API_KEY": "sk-ant-api03-Zq/+x_y-0123456789abcdefGHIJ",  # base64-hostile characters
    "CANARY_PASSWORD": "p@ss wörd&=?#%",  # spaces, non-ASCII, URL-reserved
}


# ----------------------------------------------------------------------------- the oracle


def _squash(data: bytes) -> bytes:
    for _ in range(2):
        data = data.replace(b"\\\\", b"\\")
    for esc in (b"\\r", b"\\n", b"\\t"):
        data = data.replace(esc, b"")
    return re.sub(rb"[\s]", b"", data)


def leaks(data: bytes, value: str) -> list[str]:
    """Which encodings of value can be recovered from data (empty: none)."""
    v = value.encode()
    vs = _squash(v)
    found = []
    flat = _squash(data)
    if v in data or vs in flat:
        found.append("raw")
    if json.dumps(value)[1:-1].encode() in data or _squash(json.dumps(value)[1:-1].encode()) in flat:
        found.append("json")
    if _squash(value[::-1].encode()) in flat:
        found.append("reversed")
    if vs in _squash(unquote_to_bytes(flat.replace(b"+", b" "))):
        found.append("url")
    text = flat.decode("latin-1")
    for run in re.findall(r"[0-9a-fA-F]{8,}", text):
        for start in (0, 1):
            chunk = run[start:]
            if v in bytes.fromhex(chunk[: len(chunk) // 2 * 2]):
                found.append("hex")
    for run in re.findall(r"[A-Za-z0-9+/_-]{6,}", text):
        std = run.replace("-", "+").replace("_", "/")
        for drop in range(4):
            chunk = std[drop:]
            chunk = chunk[:-1] if len(chunk) % 4 == 1 else chunk
            chunk += "=" * (-len(chunk) % 4)
            if chunk and v in base64.b64decode(chunk):
                found.append("base64")
    return sorted(set(found))


def tree_leaks(root: Path, values: dict[str, str]) -> list[str]:
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        for name, value in values.items():
            if leaks(rel.encode(), value):
                out.append(f"name {rel}: {name}")
            if path.is_file() and leaks(path.read_bytes(), value):
                out.append(f"{rel}: {name} {leaks(path.read_bytes(), value)}")
    return out


def encodings(value: str) -> dict[str, bytes]:
    """What an agent can print, produced with plain stdlib calls (not runner.secrets)."""
    v = value.encode()
    noise = bytes(range(40, 90))
    out = {"raw": v, "json": json.dumps({"k": value}).encode(), "json-ascii": json.dumps(value, ensure_ascii=True).encode(),
           "hex": v.hex().encode(), "HEX": v.hex().upper().encode(), "url": quote(value, safe="").encode(),
           "url-plus": quote_plus("q=" + value).encode(), "reversed": value[::-1].encode(),
           "base64url": base64.urlsafe_b64encode(v)}
    for offset in range(3):
        out[f"base64@{offset}"] = base64.b64encode(noise[:offset] + v + noise[:7])
        out[f"base64url@{offset}"] = base64.urlsafe_b64encode(noise[:offset] + v)
    wrapped = base64.b64encode(noise * 2 + v + noise)
    out["base64-wrapped-76"] = b"\n".join(wrapped[i:i + 76] for i in range(0, len(wrapped), 76))
    out["base64-wrapped-crlf-indented"] = b"\r\n    ".join(wrapped[i:i + 20] for i in range(0, len(wrapped), 20))
    out["folded-raw"] = v[:2] + b"\n   " + v[2:]
    out["folded-json"] = json.dumps(value[:3] + "\r\n" + value[3:]).encode()
    return out


def test_the_oracle_sees_every_encoding():
    for value in CANARIES.values():
        for kind, data in encodings(value).items():
            assert leaks(b"before " + data + b" after", value), kind
        assert leaks(b"nothing to see here", value) == []


# ----------------------------------------------------------------------------- redaction


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_redact_removes_every_encoding(name):
    value = CANARIES[name]
    for kind, data in encodings(value).items():
        red = redact(b"before " + data + b" after", CANARIES)
        assert leaks(red, value) == [], (name, kind, red)
        assert f"[REDACTED:{name}]".encode() in red, (name, kind)
        assert red.startswith(b"before ") and red.endswith(b" after")


def test_redaction_is_exact_value_not_name_or_length_based():
    assert redact("a token k9Xq2 here", {"ANY_NAME": "k9Xq2"}) == "a token [REDACTED:ANY_NAME] here"
    assert redact("k9Xq", {"T": "k9Xq2"}) == "k9Xq", "a prefix of the value is not the value"


def test_injecting_a_credential_shorter_than_four_characters_is_refused():
    env = {"SHORT_TOKEN": "abc", "LONG_API_KEY": "abcd", "PATH": "/bin", "EMPTY_SECRET": ""}
    found = injected_secrets(env)
    assert found == {"SHORT_TOKEN": "abc", "LONG_API_KEY": "abcd"}
    with pytest.raises(ConfigError) as err:
        check_injectable(found)
    assert "SHORT_TOKEN" in str(err.value) and "abc" not in str(err.value).replace("SHORT_TOKEN", "")
    check_injectable({"LONG_API_KEY": "abcd"})


def test_a_writer_handed_a_too_short_value_holds_the_bundle(tmp_path: Path):
    w = BundleWriter(tmp_path / "b" / "0", {"TINY_TOKEN": "ab"})
    w.add_text("final.md", "clean")
    with pytest.raises(BundleHeld, match="TINY_TOKEN"):
        w.seal()
    assert not (tmp_path / "b" / "0").exists()


# ----------------------------------------------------------------------------- the bundle writer


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_every_encoding_in_any_file_or_name_holds_the_bundle_back(tmp_path: Path, name: str):
    value = CANARIES[name]
    for kind, data in encodings(value).items():
        dest = tmp_path / kind / "evidence" / "s" / "a" / "r" / "i" / "0"
        held = tmp_path / kind / "evidence" / ".held" / "s" / "a" / "r" / "i" / "0"
        (tmp_path / kind).mkdir()
        w = BundleWriter(dest, CANARIES, root=tmp_path / kind, held=held)
        w.add_text("final.md", "the answer\n")
        w.add_bytes("raw/stream.jsonl", b'{"type":"tool_result","output":' + json.dumps(data.decode("latin-1")).encode() + b"}\n")
        w.add_bytes("captured/1.out", b"x" + data + b"y")
        w.add_json("meta.json", {"extra": {"note": data.decode("latin-1")}})
        w.add_bytes(f"captured/1.out.d/0/report-{value}.json", b"{}")  # the value in a file name
        with pytest.raises(BundleHeld) as err:
            w.seal()
        message = str(err.value)
        assert not dest.exists(), kind
        assert name in message and value not in message and ".held" in message, (kind, message)
        assert tree_leaks(held, CANARIES) == [], kind
        assert tree_leaks(tmp_path / kind, CANARIES) == [], "no unredacted copy anywhere"
        note = (held / "HELD.txt").read_text()
        assert name in note and "captured/1.out" in note and value not in note
        assert bundle_writer.TMP_PREFIX not in " ".join(p.name for p in dest.parent.iterdir())


def test_a_clean_bundle_with_credentials_configured_seals(tmp_path: Path):
    with BundleWriter(tmp_path / "b" / "0", CANARIES) as w:
        w.add_text("final.md", "nothing secret\n")
        w.add_bytes("captured/1.out", os.urandom(4096).hex().encode())
        w.seal()
    assert (tmp_path / "b" / "0" / "final.md").is_file()


def test_sealing_scans_a_10_mib_file_in_one_fast_pass(tmp_path: Path):
    data = base64.b64encode(os.urandom(7_600_000))
    data = b"\n".join(data[i:i + 76] for i in range(0, len(data), 76))[: 10 * 1024 * 1024]
    sc = secrets.scanner(CANARIES)
    assert not sc.scan(data[:1000]) or pytest.skip("random data happened to contain a canary form")
    w = BundleWriter(tmp_path / "b" / "0", CANARIES)
    w.add_bytes("raw/stream.jsonl", data)
    t0 = time.perf_counter()
    hits = secrets.scan_fd(w._tmp_fd, sc)
    took = time.perf_counter() - t0
    print(f"\nscan of a 10 MiB file with {len(CANARIES)} credentials ({len(sc.needles)} needles): {took:.3f}s")
    assert took < 5.0
    w.abort()
    assert hits == [] or all(h.name == "CANARY_TOKEN" for _rel, hs in hits for h in hs)  # 5 chars: chance hit possible


# ----------------------------------------------------------------------------- the canary, end to end


AGENT = r'''
import base64, json, os, sys
from urllib.parse import quote, quote_plus
names = ("CANARY_TOKEN", "CANARY_API_KEY")
found = [("env", n, os.environ[n]) for n in names if n in os.environ]
for pid in ("self", str(os.getppid()), sys.argv[1]):  # through /proc: own, the agent loop's, the runner's
    try:
        for item in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
            k, _, v = item.decode(errors="replace").partition("=")
            if k in names:
                found.append((f"proc-{'runner' if pid == sys.argv[1] else pid if pid == 'self' else 'parent'}", k, v))
    except OSError:
        pass
noise = bytes(range(40, 90))
for source, name, value in found:
    v = value.encode()
    print("source", source, name, "raw", value, json.dumps(value), value[::-1], v.hex(), v.hex().upper())
    print(quote(value, safe=""), quote_plus("q=" + value), base64.urlsafe_b64encode(v).decode())
    for off in range(3):
        print(base64.b64encode(noise[:off] + v + noise[:5]).decode(), base64.urlsafe_b64encode(noise[:off] + v).decode())
    wrapped = base64.b64encode(noise * 2 + v + noise).decode()
    print("\n".join(wrapped[i:i + 76] for i in range(0, len(wrapped), 76)))
    print(value[:2] + "\r\n    " + value[2:])
'''


def test_canary_credentials_read_through_env_and_proc_never_reach_a_sealed_bundle(repo_copy, monkeypatch, capsys):
    from skill_eval.cli import main
    from skill_eval.harness.adapters.scripted import ScriptedAdapter

    injected = {"CANARY_TOKEN": "k9Xq2", "CANARY_API_KEY": "sk-canary-Zq/+x_y-0123456789abcdef"}
    real_env = ScriptedAdapter.env
    monkeypatch.setattr(ScriptedAdapter, "credential_vars", tuple(injected))
    monkeypatch.setattr(ScriptedAdapter, "env", lambda self, ctx: {**real_env(self, ctx), **injected})
    # The agent's shell runs in the sandbox (runner/isolation.py): the repository copy is hidden from it and it
    # has its own PID namespace (and no venv of the host: the system python3), so the hostile script travels inline and the runner's pid is unreachable by
    # design; it still reads its own environment, /proc/self and its parent shell's /proc entry.
    agent = "import base64; exec(base64.b64decode('" + base64.b64encode(AGENT.encode()).decode() + "'))"
    script = repo_copy / "agent-evals/skills/model-scripts/canary.yaml"
    script.write_text(textwrap.dedent(f"""\
        schema_version: 1
        description: a hostile agent prints every credential it can reach, in every encoding
        turns:
          - tools:
              - shell: python3 -c "{agent}" {os.getpid()}
              - shell: abicheck compare old/libdemo.so.1 new/libdemo.so.1 -o "json=report-$CANARY_TOKEN.json"; printf '%s' "$CANARY_API_KEY" | base64 -w 8
          - final: |
              Done. The token is k9Xq2 and, reversed, 2qX9k.

              ```skill-eval-claim
              {{"verdict": null, "confident": false, "uncertainty": {{"kind": "not_comparable", "unresolved": ["x"]}}, "evidence": []}}
              ```
        """))
    rc = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--model-server",
               "scripted:agent-evals/skills/model-scripts/canary.yaml", "--no-trigger", "-k", "1", "--run-id", "canary"])
    out, err = capsys.readouterr()
    values = injected
    evidence = repo_copy / "agent-evals/skills/evidence"
    assert rc == 1
    assert list((evidence / "abi-compat-review/skill-agent/canary").rglob("meta.json")) == [], "no sealed bundle"
    assert "held back" in out and "CANARY_TOKEN" in out and "CANARY_API_KEY" in out
    assert not any(v in out + err for v in values.values()), "the message names variables, never values"
    held = evidence / ".held/abi-compat-review/skill-agent/canary/review-removed-export/0"
    assert (held / "HELD.txt").is_file() and (held / "raw/stream.jsonl").is_file()
    assert tree_leaks(evidence, values) == []
    raw = (held / "raw/stream.jsonl").read_text()
    assert "[REDACTED:CANARY_TOKEN]" in raw and "[REDACTED:CANARY_API_KEY]" in raw
    for source in ("env", "proc-self", "proc-parent"):  # the agent really reached them both ways
        assert f"source {source} CANARY_TOKEN raw [REDACTED:CANARY_TOKEN]" in raw, source
    names = [p.name for p in held.rglob("*")]
    assert any("REDACTED" in n for n in names), "the snapshot named after the token was renamed"


def test_the_runner_refuses_to_inject_a_credential_shorter_than_four_characters(repo_copy, monkeypatch, capsys, tmp_path):
    from skill_eval.cli import main
    from skill_eval.harness.adapters.scripted import ScriptedAdapter

    real_env = ScriptedAdapter.env
    monkeypatch.setattr(ScriptedAdapter, "credential_vars", ("TINY_TOKEN",))  # adapters/base.py: a class tuple
    monkeypatch.setattr(ScriptedAdapter, "env", lambda self, ctx: {**real_env(self, ctx), "TINY_TOKEN": "abc"})
    started = tmp_path / "agent-started"
    script = repo_copy / "agent-evals/skills/model-scripts/tiny.yaml"
    script.write_text(f"schema_version: 1\ndescription: x\nturns:\n  - tools:\n      - shell: touch {started}\n  - final: done\n")
    rc = main(["run", "--root", str(repo_copy), "review-removed-export", "--agent", "scripted", "--model-server",
               "scripted:agent-evals/skills/model-scripts/tiny.yaml", "--no-trigger", "-k", "1", "--run-id", "tiny"])
    out = capsys.readouterr().out
    assert rc == 1 and "TINY_TOKEN" in out and "fewer than 4 characters" in out and "abc" not in out.replace("TINY_TOKEN", "")
    assert not started.exists(), "the agent never started"
    assert list((repo_copy / "agent-evals/skills/evidence").rglob("tiny")) == []
