"""runner/tee.py: the agent's bytes, the capture file and the digest are one stream, whichever way
the bytes moved (tee(2)+splice(2), copy, or a fallback in the middle of a stream)."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
from pathlib import Path

import pytest

from skill_eval.runner import tee


def _drain(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 1 << 16):
        into.extend(chunk)


def _feed(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view[: 1 << 16]):]
    os.close(fd)


def _run(tmp_path: Path, payload: bytes, *, dst_file: Path | None = None, mapping=None,
         before_pump=None) -> tuple[tee.Stream, bytes, dict | Exception]:
    """Tee `payload` from a writer thread through a Stream to a pipe (or a file) read by another thread."""
    src_r, src_w = os.pipe()
    got = bytearray()
    if dst_file is None:
        dst_r, dst_w = os.pipe()
        reader = threading.Thread(target=_drain, args=(dst_r, got))
        reader.start()
    else:
        dst_w = os.open(dst_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    writer = threading.Thread(target=_feed, args=(src_w, payload))
    writer.start()
    stream = tee.Stream(src_r, dst_w, str(tmp_path / "cap"), mapping or {})
    if before_pump is not None:
        before_pump(stream)
    while stream.open:
        stream.pump()
    try:
        result: dict | Exception = stream.result("captured/1.out")
    except OSError as exc:
        result = exc
    os.close(dst_w)
    writer.join()
    if dst_file is None:
        reader.join()
        os.close(dst_r)
    else:
        got.extend(dst_file.read_bytes())
    return stream, bytes(got), result


@pytest.mark.parametrize("size", [0, 1, 4095, tee.HASH_WINDOW + 1, 5 * tee.CHUNK + 17])
def test_zero_copy_path_gives_the_agent_the_file_and_the_digest_the_same_bytes(tmp_path, size):
    if tee._libc_tee() is None:
        pytest.skip("no tee(2) on this platform")  # Linux CI always has it
    payload = os.urandom(size)
    seen = []
    stream, got, result = _run(tmp_path, payload, before_pump=lambda s: seen.append(s.tee is not None))
    assert seen == [True], "a pipe to a pipe with no substitution must take the zero-copy path"
    assert stream.tee is not None, "nothing refused: the stream stayed zero-copy to the end"
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result == {"path": "captured/1.out", "sha256": hashlib.sha256(payload).hexdigest(), "bytes": size}
    assert (stream.thread is not None) == (size >= tee.HASH_WINDOW), "big streams hash behind the loop, small ones at the end"


def test_agent_descriptor_that_is_a_file_is_copied(tmp_path):
    payload = os.urandom(3 * tee.CHUNK + 5)
    stream, got, result = _run(tmp_path, payload, dst_file=tmp_path / "agent-out")
    assert stream.tee is None
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest()


def test_substitution_takes_the_copy_path_and_persists_what_the_agent_saw(tmp_path):
    key = b"/private/store/1.out.d/0/report.json"
    payload = b"".join(os.urandom(3000) + key for _ in range(700))
    stream, got, result = _run(tmp_path, payload, mapping={key: b"report.json"})
    want = payload.replace(key, b"report.json")
    assert stream.tee is None and stream.subst.count == 700
    assert got == want == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(want).hexdigest() and result["bytes"] == len(want)


def test_tee_refused_mid_stream_falls_back_without_losing_or_repeating_a_byte(tmp_path, monkeypatch):
    real = tee._libc_tee()
    if real is None:
        pytest.skip("no tee(2) on this platform")
    calls = []

    def flaky(src, dst, size, flags):
        calls.append(size)
        if len(calls) > 2:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(src, dst, size, flags)

    payload = os.urandom(6 * tee.CHUNK + 3)
    stream, got, result = _run(tmp_path, payload, before_pump=lambda s: setattr(s, "tee", flaky))
    assert len(calls) == 3 and stream.tee is None
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest()


def test_splice_refused_reads_the_teed_bytes_and_copies_on(tmp_path, monkeypatch):
    if tee._libc_tee() is None:
        pytest.skip("no tee(2) on this platform")

    def no_splice(*_a, **_k):
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "splice", no_splice)
    payload = os.urandom(4 * tee.CHUNK + 9)
    stream, got, result = _run(tmp_path, payload)
    assert stream.tee is None and stream.error is None
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest()


@pytest.mark.parametrize("zero_copy", [True, False])
def test_capture_that_cannot_be_written_fails_the_record_but_not_the_agent(tmp_path, monkeypatch, zero_copy):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    monkeypatch.setattr(tee, "_open_capture", lambda _p: os.open("/dev/full", os.O_WRONLY))
    payload = os.urandom(2 * tee.CHUNK + 1)
    mapping = None if zero_copy else {b"\x00never-present\x00" * 4: b"x"}
    _stream, got, result = _run(tmp_path, payload, mapping=mapping)
    assert got == payload, "the agent gets its bytes even when the record cannot be kept"
    assert isinstance(result, OSError) and result.errno == errno.ENOSPC


def test_a_capture_file_shorter_than_what_was_written_fails_the_digest(tmp_path):
    payload = os.urandom(1000)

    def truncate_before_result(stream):
        real_result = stream.result

        def result(path):
            os.truncate(stream.capture, 10)
            return real_result(path)

        stream.result = result

    _stream, got, result = _run(tmp_path, payload, before_pump=truncate_before_result)
    assert got == payload
    assert isinstance(result, OSError) and "shorter than the bytes written" in str(result)


def test_agent_end_gone_closes_the_childs_pipe(tmp_path):
    """The reader closes early: the stream stops and closes src, so the writer meets EPIPE."""
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    stream = tee.Stream(src_r, dst_w, str(tmp_path / "cap"), {})
    os.write(src_w, b"x" * 100)
    os.close(dst_r)
    stream.pump()
    assert not stream.open and stream.dst == -1
    with pytest.raises(BrokenPipeError):
        os.write(src_w, b"more")
    os.close(src_w)
    os.close(dst_w)
    stream.result("captured/1.out")
