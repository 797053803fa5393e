"""runner/tee.py: the agent's bytes, the capture file and the digest are one stream, whatever the
tool does to its own output, whoever else writes the agent's pipe, and however the record fails."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
import textwrap
import threading
import types
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


@pytest.mark.parametrize("size", [0, 1, 4095, tee.HASH_WINDOW + 1, 5 * tee.CHUNK + 17, 12 * tee.HASH_WINDOW])
def test_agent_file_and_digest_get_the_same_bytes(tmp_path, size):
    payload = os.urandom(size)
    stream, got, result = _run(tmp_path, payload)
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result == {"path": "captured/1.out", "sha256": hashlib.sha256(payload).hexdigest(), "bytes": size}
    assert (stream.thread is not None) == (size >= tee.HASH_WINDOW), "big streams hash behind the loop, small ones at the end"
    assert stream.closed and not stream.open


def test_agent_descriptor_that_is_a_file_is_copied(tmp_path):
    payload = os.urandom(3 * tee.CHUNK + 5)
    _stream, got, result = _run(tmp_path, payload, dst_file=tmp_path / "agent-out")
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest()


def test_substitution_persists_what_the_agent_saw(tmp_path):
    key = b"/private/store/1.out.d/0/report.json"
    payload = b"".join(os.urandom(3000) + key for _ in range(700))
    stream, got, result = _run(tmp_path, payload, mapping={key: b"report.json"})
    want = payload.replace(key, b"report.json")
    assert stream.subst.count == 700
    assert got == want == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(want).hexdigest() and result["bytes"] == len(want)


@pytest.mark.parametrize("substituting", [False, True])
def test_capture_that_cannot_be_written_fails_the_record_but_not_the_agent(tmp_path, monkeypatch, substituting):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    monkeypatch.setattr(tee, "_open_capture", lambda _p: os.open("/dev/full", os.O_WRONLY))
    payload = os.urandom(2 * tee.CHUNK + 1)
    mapping = {b"\x00never-present\x00" * 4: b"x"} if substituting else None
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


# -- regressions from the adversarial review of the zero-copy tee (tee(2) was removed for these) ---

_SPLICER = textwrap.dedent("""
    import os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR)
    os.splice(fd, 1, 4096, offset_src=0)   # a page-cache page of the file now sits in the recorder's pipe
    os.close(1)                              # end of stream for the recorder
    time.sleep(float(sys.argv[2]))           # the recorder has moved the bytes by now
    os.pwrite(fd, b"B" * 4096, 0)            # the same page, new content
""")


@pytest.mark.skipif(not hasattr(os, "splice"), reason="os.splice is Linux, Python 3.10+")
def test_a_tool_that_splices_pages_and_changes_them_later_cannot_split_agent_and_capture(tmp_path):
    """With tee(2) the agent's pipe shared the tool's pages: the capture held the bytes as spliced,
    the agent (reading later) the bytes as changed. A copy is taken once; both get the same."""
    f = tmp_path / "f"
    f.write_bytes(b"A" * 4096)
    src_r, src_w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", _SPLICER, str(f), "0.3"], stdout=src_w)
    os.close(src_w)
    dst_r, dst_w = os.pipe()  # the agent reads it only after the tool has changed the page
    stream = tee.Stream(src_r, dst_w, str(tmp_path / "cap"), {})
    while stream.open:
        stream.pump()
    result = stream.result("captured/1.out")
    assert child.wait() == 0
    os.close(dst_w)
    agent = bytearray()
    _drain(dst_r, agent)
    os.close(dst_r)
    cap = (tmp_path / "cap").read_bytes()
    assert bytes(agent) == cap == b"A" * 4096
    assert result["sha256"] == hashlib.sha256(cap).hexdigest()


def test_another_writer_on_the_agents_pipe_does_not_end_the_stream(tmp_path):
    """tee(2) returned 0 when a sibling filled the agent's pipe first, which read as end of stream:
    the tool died of SIGPIPE and the record said complete. Only a read of b"" ends a stream."""
    n = 8 << 20
    dst_r, dst_w = os.pipe()
    others = [subprocess.Popen(["yes"], stdout=dst_w, stderr=subprocess.DEVNULL) for _ in range(2)]
    agent = subprocess.Popen(["cat"], stdin=dst_r, stdout=subprocess.DEVNULL)
    try:
        for attempt in range(3):
            src_r, src_w = os.pipe()
            child = subprocess.Popen([sys.executable, "-c", "import sys\nb=b'y'*65536\n"
                                      f"for _ in range({n // 65536}): sys.stdout.buffer.write(b)"], stdout=src_w)
            os.close(src_w)
            stream = tee.Stream(src_r, dst_w, str(tmp_path / f"cap{attempt}"), {})
            while stream.open:
                stream.pump()
            result = stream.result("x")
            assert (child.wait(), result["bytes"]) == (0, n), f"attempt {attempt}"
            assert result["sha256"] == hashlib.sha256(b"y" * n).hexdigest()
    finally:
        for p in (*others, agent):
            p.kill()
            p.wait()
        os.close(dst_r)
        os.close(dst_w)


def test_bytes_the_agent_never_got_are_not_recorded(tmp_path, monkeypatch):
    """The agent's end breaks in the middle of a chunk: the capture holds exactly what it was given."""
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    real_write, given = os.write, []

    def write_then_break(fd, data):
        if fd == dst_w:
            if given:
                raise BrokenPipeError(errno.EPIPE, "Broken pipe")
            n = real_write(fd, bytes(data[:1000]))
            given.append(n)
            return n
        return real_write(fd, data)

    os.write(src_w, b"z" * 5000)
    os.close(src_w)
    stream = tee.Stream(src_r, dst_w, str(tmp_path / "cap"), {})
    monkeypatch.setattr(os, "write", write_then_break)
    stream.pump()
    monkeypatch.setattr(os, "write", real_write)
    assert not stream.open and stream.dst == -1
    result = stream.result("captured/1.out")
    assert given == [1000] and os.read(dst_r, 10000) == b"z" * 1000
    assert (tmp_path / "cap").read_bytes() == b"z" * 1000 and result["bytes"] == 1000
    os.close(dst_r)
    os.close(dst_w)


def _fds_under(path: str) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(path):
                found.append(fd)
        except OSError:
            pass
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir() or not Path("/dev/full").exists(), reason="needs /proc and /dev/full")
def test_a_failed_record_releases_both_streams(tmp_path, monkeypatch):
    """stdout's capture fails (disk full) while stderr is big enough to start its digest thread:
    the record fails, and neither stream leaves an open capture file or a live thread behind."""
    from skill_eval.runner import recorder as recorder_mod

    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nhead -c 3000000 /dev/zero >&2\necho out\n")
    tool.chmod(0o755)
    sandbox, store = tmp_path / "sb", tmp_path / "store"
    sandbox.mkdir()
    real_open = tee._open_capture
    monkeypatch.setattr(tee, "_open_capture",
                        lambda p: os.open("/dev/full", os.O_WRONLY) if p.endswith(".out") else real_open(p))
    rec = recorder_mod.Recorder(store, types.SimpleNamespace(name="tool"), tool, sandbox, env={"PATH": "/usr/bin:/bin"})
    threads_before = threading.active_count()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    drains = [threading.Thread(target=_drain, args=(fd, bytearray())) for fd in (out_r, err_r)]
    for t in drains:
        t.start()
    stdin = os.open("/dev/null", os.O_RDONLY)
    reply = rec.run_call(["tool"], str(sandbox), {}, stdin, out_w, err_w)
    for fd in (out_w, err_w, stdin):
        os.close(fd)
    for t in drains:
        t.join()
    os.close(out_r)
    os.close(err_r)
    assert reply.startswith(b"E") and rec.calls()[0]["status"] == "record_failed"
    assert _fds_under(str(store)) == [], "a capture file of the failed call is still open"
    assert threading.active_count() == threads_before, "a digest thread of the failed call is still alive"


def test_close_is_idempotent_and_releases_the_childs_pipe(tmp_path):
    src_r, src_w = os.pipe()
    stream = tee.Stream(src_r, -1, str(tmp_path / "cap"), {})
    stream.close()
    stream.close()
    assert stream.closed and not stream.open
    with pytest.raises(BrokenPipeError):
        os.write(src_w, b"x")
    os.close(src_w)


def test_a_big_stream_grows_the_agents_pipe_and_a_small_one_does_not(tmp_path):
    import fcntl

    for size, grown in ((1000, False), (3 * tee.CHUNK, True)):
        src_r, src_w = os.pipe()
        dst_r, dst_w = os.pipe()
        default = fcntl.fcntl(dst_w, tee.F_GETPIPE_SZ)
        got = bytearray()
        reader = threading.Thread(target=_drain, args=(dst_r, got))
        reader.start()
        writer = threading.Thread(target=_feed, args=(src_w, os.urandom(size)))
        writer.start()
        stream = tee.Stream(src_r, dst_w, str(tmp_path / f"cap{size}"), {})
        while stream.open:
            stream.pump()
        stream.result("captured/1.out")
        assert (fcntl.fcntl(dst_w, tee.F_GETPIPE_SZ) >= tee.CHUNK) == grown or default >= tee.CHUNK
        assert (stream.writer is not None) == grown, "only a big stream starts the pipeline"
        os.close(dst_w)
        writer.join()
        reader.join()
        os.close(dst_r)
        assert len(got) == size


def test_a_capture_that_fails_inside_the_pipeline_fails_the_record_but_not_the_agent(tmp_path, monkeypatch):
    """The capture breaks after the stream went big (the writer thread meets the error): the agent
    still gets every byte, the stages drain (no hang on the ring), and the record fails."""
    cap_r, cap_w = os.pipe()

    def take_then_close():
        taken = 0
        while taken < tee.HASH_WINDOW + (1 << 19):
            chunk = os.read(cap_r, 1 << 16)
            if not chunk:
                break
            taken += len(chunk)
        os.close(cap_r)

    taker = threading.Thread(target=take_then_close)
    taker.start()
    monkeypatch.setattr(tee, "_open_capture", lambda _p: cap_w)
    payload = os.urandom(20 * tee.CHUNK + 3)
    stream, got, result = _run(tmp_path, payload)
    taker.join()
    assert got == payload
    assert stream.writer is not None, "the failure happened inside the pipeline"
    assert isinstance(result, OSError) and result.errno == errno.EPIPE
    assert stream.free is not None and stream.free.qsize() == stream.buffers >= tee._RING_START, "every ring buffer came back"
    assert tee._budget._value == tee._BUFFERS_MAX, "the process-wide budget is whole again"


def test_a_thread_that_cannot_start_leaves_the_stream_inline_and_whole(tmp_path, monkeypatch):
    """The second pipeline thread fails to start (threads exhausted): the stream undoes the pipeline,
    stays in the loop, records the same bytes, and leaks no thread, descriptor or budget."""
    real_start, started = threading.Thread.start, []

    def start(self):
        if getattr(self._target, "__self__", None).__class__ is tee.Stream:  # a pipeline stage, not _run's own
            started.append(self)
            if len(started) == 2:
                raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    before = threading.active_count()
    payload = os.urandom(6 * tee.CHUNK + 11)
    stream, got, result = _run(tmp_path, payload)
    monkeypatch.setattr(threading.Thread, "start", real_start)
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest()
    assert stream.inline_only and stream.free is None and stream.thread is None
    assert threading.active_count() <= before + 2  # _run's own reader and writer threads, joined by now
    assert tee._budget._value == tee._BUFFERS_MAX


def test_no_budget_left_keeps_a_big_stream_inline(tmp_path, monkeypatch):
    """Every ring buffer of the process is taken (many big streams at once): a new big stream is
    persisted and hashed in the loop instead, correctly, and memory stays within the budget."""
    monkeypatch.setattr(tee, "_budget", threading.BoundedSemaphore(1))
    payload = os.urandom(3 * tee.CHUNK)
    stream, got, result = _run(tmp_path, payload)
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest()
    assert stream.free is None and stream.thread is None and not stream.inline_only
    assert tee._budget._value == 1


def test_the_ring_grows_only_while_its_stages_lag(tmp_path, monkeypatch):
    """A capture writer that keeps up leaves the ring at its starting size; a slow one grows it to _RING."""
    import time

    payload = os.urandom(12 * tee.CHUNK)
    fast, _got, _ = _run(tmp_path, payload)
    real_write = os.write

    def slow_write(fd, data):
        if "_write_stage" in threading.current_thread().name:  # only the capture writer is slow
            time.sleep(0.01)
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", slow_write)
    slow, got, result = _run(tmp_path, payload)
    monkeypatch.setattr(os, "write", real_write)
    assert got == payload and result["sha256"] == hashlib.sha256(payload).hexdigest()
    assert tee._RING_START <= fast.buffers <= tee._RING and slow.buffers == tee._RING
