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

from skill_eval.harness.runner import tee


def _drain(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 1 << 16):
        into.extend(chunk)


def _feed(fd: int, data: bytes) -> None:
    """The tool's side: writes `data`, then closes; a broken pipe ends it as it ends a tool."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view[: 1 << 16]):]
    except BrokenPipeError:
        pass
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
    from skill_eval.harness.runner import recorder as recorder_mod

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
        grew = fcntl.fcntl(dst_w, tee.F_GETPIPE_SZ) >= tee.CHUNK
        os.close(dst_w)
        writer.join()
        reader.join()
        os.close(dst_r)
        assert grew == grown or default >= tee.CHUNK
        assert (stream.thread is not None) == grown, "only a big stream goes capture first"
        assert len(got) == size


# -- capture first (big streams): the capture is the source of the agent's bytes and the digest --

@pytest.mark.parametrize("substituting", [False, True])
def test_a_big_stream_to_a_pipe_goes_capture_first_and_one_to_a_file_stays_in_the_loop(tmp_path, substituting):
    key = b"/private/store/1.out.d/0/report.json"
    payload = b"".join(os.urandom(40000) + key for _ in range(130)) if substituting else os.urandom(5 * tee.CHUNK + 3)
    mapping = {key: b"report.json"} if substituting else None
    want = payload.replace(key, b"report.json") if substituting else payload
    stream, got, result = _run(tmp_path, payload, mapping=mapping)
    assert got == want == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(want).hexdigest() and result["bytes"] == len(want)
    assert stream.thread is not None and stream.error is None
    stream, got, result = _run(tmp_path, payload, mapping=mapping, dst_file=tmp_path / "agent-out")
    assert got == want == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(want).hexdigest()
    assert stream.thread is None and stream.inline_only, "sendfile into a file is not the fast path: the loop copies"


@pytest.mark.skipif(not hasattr(os, "splice"), reason="os.splice is Linux, Python 3.10+")
def test_a_big_stream_of_spliced_pages_changed_later_reaches_agent_and_capture_alike(tmp_path, monkeypatch):
    """The tool splices its file's pages into its stdout (after enough bytes that the stream went
    capture first) and rewrites the file after the recorder has moved them; the agent reads only
    then. The splice into the capture copied them and the agent is given the capture's pages, so
    both hold the bytes as spliced."""
    monkeypatch.setattr(tee, "HASH_WINDOW", 1 << 16)
    size = 1 << 19
    f = tmp_path / "f"
    f.write_bytes(b"A" * size)
    splicer = textwrap.dedent(f"""
        import os, sys, time
        fd = os.open(sys.argv[1], os.O_RDWR)
        off = os.splice(fd, 1, 1 << 16, offset_src=0)   # the stream's first 64 KiB: it goes capture first
        time.sleep(0.2)
        while off < {size}:
            off += os.splice(fd, 1, {size} - off, offset_src=off)
        os.close(1)
        time.sleep(float(sys.argv[2]))                  # the recorder has moved the bytes by now
        os.pwrite(fd, b"B" * {size}, 0)                 # the same pages, new content
    """)
    src_r, src_w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", splicer, str(f), "0.3"], stdout=src_w)
    os.close(src_w)
    dst_r, dst_w = os.pipe()
    import fcntl

    fcntl.fcntl(dst_w, tee.F_SETPIPE_SZ, tee.CHUNK)  # holds the whole stream: the agent reads it only at the end
    stream = tee.Stream(src_r, dst_w, str(tmp_path / "cap"), {})
    while stream.open:
        stream.pump()
    result = stream.result("captured/1.out")
    assert child.wait() == 0 and stream.thread is not None and stream.error is None
    assert f.read_bytes() == b"B" * size
    os.close(dst_w)
    agent = bytearray()
    _drain(dst_r, agent)
    os.close(dst_r)
    cap = (tmp_path / "cap").read_bytes()
    assert bytes(agent) == cap == b"A" * size
    assert result["sha256"] == hashlib.sha256(cap).hexdigest()


def _after(calls: int, real, fail):
    """A stand-in for `real` that calls `fail` instead from call number `calls` on."""
    seen = []

    def call(*args, **kwargs):
        seen.append(1)
        return fail(*args, **kwargs) if len(seen) > calls else real(*args, **kwargs)

    return call


def _raise(code):
    def fail(*_a, **_k):
        raise OSError(code, os.strerror(code))

    return fail


def test_a_capture_that_fails_while_splicing_fails_the_record_but_not_the_agent(tmp_path, monkeypatch):
    """The disk fills after the stream went capture first: the bytes stay in the child's pipe, the
    stream goes back to the loop, the agent gets every byte, the digest thread stops, the record fails."""
    monkeypatch.setattr(os, "splice", _after(3, os.splice, _raise(errno.ENOSPC)))
    payload = os.urandom(20 * tee.CHUNK + 3)
    stream, got, result = _run(tmp_path, payload)
    assert got == payload
    assert stream.thread is not None and not stream.thread.is_alive() and stream.inline_only
    assert isinstance(result, OSError) and result.errno == errno.ENOSPC


def test_a_substituted_capture_that_fails_fails_the_record_but_not_the_agent(tmp_path, monkeypatch):
    key = b"/private/store/1.out.d/0/report.json"
    payload = b"".join(os.urandom(40000) + key for _ in range(300))
    real_write, holder = os.write, {}

    def write(fd, data):
        if holder.get("stream") is not None and fd == holder["stream"].fd and holder["stream"].ranges is not None:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    stream, got, result = _run(tmp_path, payload, mapping={key: b"report.json"},
                               before_pump=lambda s: holder.update(stream=s))
    monkeypatch.setattr(os, "write", real_write)
    assert got == payload.replace(key, b"report.json")
    assert stream.thread is not None and stream.inline_only
    assert isinstance(result, OSError) and result.errno == errno.ENOSPC


def test_a_descriptor_pair_sendfile_refuses_is_copied_and_the_stream_stays_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sendfile", _raise(errno.EINVAL))
    payload = os.urandom(6 * tee.CHUNK + 11)
    stream, got, result = _run(tmp_path, payload)
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest() and result["bytes"] == len(payload)
    assert stream.thread is not None and stream.inline_only


def test_an_agent_gone_inside_a_range_cuts_the_capture_back_to_what_it_was_given(tmp_path, monkeypatch):
    """sendfile gives part of a range, then the agent's end breaks: the capture, the digest and the
    byte count hold exactly the bytes given, and the child's pipe is closed (it meets EPIPE)."""
    real, given = os.sendfile, []

    def sendfile(out, in_, offset, count):
        if given:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        given.append(real(out, in_, offset, min(count, 5000)))
        return given[0]

    monkeypatch.setattr(tee, "HASH_WINDOW", 1 << 16)
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    import fcntl

    fcntl.fcntl(dst_w, tee.F_SETPIPE_SZ, tee.CHUNK)  # both pipes hold the whole stream: no thread needed
    fcntl.fcntl(src_w, tee.F_SETPIPE_SZ, tee.CHUNK)
    payload = os.urandom(1 << 19)
    head = 1 << 16
    assert os.write(src_w, payload[:head]) == head
    stream = tee.Stream(src_r, dst_w, str(tmp_path / "cap"), {})
    stream.pump()  # the first 64 KiB in the loop: the stream goes capture first
    assert stream.ranges is not None and stream.bytes == head
    assert os.write(src_w, payload[head:]) == len(payload) - head
    monkeypatch.setattr(os, "sendfile", sendfile)
    stream.pump()
    assert not stream.open and stream.dst == -1
    monkeypatch.setattr(os, "sendfile", real)
    result = stream.result("captured/1.out")
    want = payload[: head + 5000]
    assert given == [5000] and result == {"path": "captured/1.out", "sha256": hashlib.sha256(want).hexdigest(),
                                          "bytes": len(want)}
    assert (tmp_path / "cap").read_bytes() == want
    with pytest.raises(BrokenPipeError):
        os.write(src_w, b"x")
    agent = os.read(dst_r, tee.CHUNK)
    while len(agent) < len(want):
        agent += os.read(dst_r, tee.CHUNK)
    assert agent == want
    for fd in (src_w, dst_r, dst_w):
        os.close(fd)


def test_a_capture_that_shrinks_under_the_stream_fails_the_record_and_cuts_the_stream(tmp_path, monkeypatch):
    """sendfile finds the capture shorter than the bytes just put in it (something else wrote the
    store): no endless retry, the record fails, and the stream ends there: the agent has a prefix
    of the tool's bytes, never later bytes after a gap."""
    real, calls = os.sendfile, []

    def sendfile(*args):
        calls.append(1)
        return 0 if len(calls) == 3 else real(*args)  # once, then it works again: no later bytes may follow

    monkeypatch.setattr(os, "sendfile", sendfile)
    payload = os.urandom(8 * tee.CHUNK)
    stream, got, result = _run(tmp_path, payload)
    assert isinstance(result, OSError) and "shrank" in str(result)
    assert not stream.open and got == payload[: len(got)] and len(got) < len(payload)


def test_a_short_read_back_of_a_refused_sendfile_fails_the_record_and_cuts_the_stream(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sendfile", _raise(errno.EINVAL))
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, off: real_pread(fd, max(0, n - 10), off))
    payload = os.urandom(4 * tee.CHUNK)
    stream, got, result = _run(tmp_path, payload)
    assert isinstance(result, OSError) and "shrank" in str(result)
    assert not stream.open and got == payload[: len(got)] and len(got) < len(payload)


def test_a_sendfile_error_that_is_not_the_agents_fails_the_record_but_the_agent_gets_its_bytes(tmp_path, monkeypatch):
    """EIO from sendfile (reading the capture's pages) is not the agent going away: the range is
    copied, the tool is not cut off, and the record fails."""
    monkeypatch.setattr(os, "sendfile", _after(2, os.sendfile, _raise(errno.EIO)))
    payload = os.urandom(8 * tee.CHUNK + 5)
    stream, got, result = _run(tmp_path, payload)
    assert got == payload and stream.dst != -1
    assert isinstance(result, OSError) and result.errno == errno.EIO


def test_a_splice_of_nothing_does_not_end_the_stream(tmp_path, monkeypatch):
    """A splice that moves 0 bytes is not taken as end of stream: the loop's read decides."""
    monkeypatch.setattr(os, "splice", _after(2, os.splice, lambda *_a, **_k: 0))
    payload = os.urandom(8 * tee.CHUNK + 5)
    stream, got, result = _run(tmp_path, payload)
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest() and stream.inline_only


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("high", [False, True])
def test_a_non_blocking_agent_end_is_waited_for_not_dropped(tmp_path, big, high):
    """The agent's descriptor is non-blocking and its reader slow: EAGAIN waits (in the loop's write
    and in capture first's sendfile), no byte is lost, also for a descriptor >= 1024 (select()
    refuses those; the wait must not)."""
    import resource

    if high and resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1100:
        pytest.skip("needs 1100 descriptors")
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    if high:
        low, dst_w = dst_w, os.dup2(dst_w, 1050)
        os.close(low)
    os.set_blocking(dst_w, False)
    got = bytearray()

    def slow_drain():
        import time

        while chunk := os.read(dst_r, 1 << 16):
            got.extend(chunk)
            time.sleep(0.0005)

    reader = threading.Thread(target=slow_drain)
    reader.start()
    payload = os.urandom(4 * tee.CHUNK + 5)
    writer = threading.Thread(target=_feed, args=(src_w, payload))
    writer.start()
    stream = tee.Stream(src_r, dst_w, str(tmp_path / "cap"), {})
    if not big:
        stream.inline_only = True  # the loop's own write path
    try:
        while stream.open:
            stream.pump()
        result = stream.result("x")
    finally:  # a failing wait must fail the test, not hang it
        stream.close()
        os.close(dst_w)
        writer.join()
        reader.join()
        os.close(dst_r)
    assert (stream.thread is not None) == big
    assert bytes(got) == payload and result["sha256"] == hashlib.sha256(payload).hexdigest()


def test_the_digest_lags_the_agent_by_a_bounded_amount(tmp_path, monkeypatch):
    """A slow digest makes the copy wait: never more than _LAG ranges given and not yet hashed."""
    import queue
    import time

    real_preadv, counts, lag = os.preadv, {"given": 0, "hashed": 0}, []

    def slow_preadv(fd, bufs, off):
        time.sleep(0.002)
        n = real_preadv(fd, bufs, off)
        counts["hashed"] += 1
        return n

    class Ranges(queue.Queue):
        def put(self, item, block=True, timeout=None):
            super().put(item, block, timeout)
            if item is not None:
                counts["given"] += 1
                lag.append(counts["given"] - counts["hashed"])

    monkeypatch.setattr(os, "preadv", slow_preadv)
    monkeypatch.setattr(tee.queue, "Queue", Ranges)
    payload = os.urandom(8 * tee.CHUNK)
    _stream, got, result = _run(tmp_path, payload)
    assert got == payload and result["sha256"] == hashlib.sha256(payload).hexdigest()
    assert tee._LAG - 1 <= max(lag) <= tee._LAG + 1, lag


def test_a_thread_that_cannot_start_leaves_the_stream_in_the_loop_and_whole(tmp_path, monkeypatch):
    """The digest thread fails to start (threads exhausted): the stream stays in the loop, records
    the same bytes, and leaks no thread or descriptor."""
    real_start = threading.Thread.start

    def start(self):
        if getattr(self._target, "__self__", None).__class__ is tee.Stream:  # the digest thread, not _run's own
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    before = threading.active_count()
    payload = os.urandom(6 * tee.CHUNK + 11)
    stream, got, result = _run(tmp_path, payload)
    monkeypatch.setattr(threading.Thread, "start", real_start)
    assert got == payload == (tmp_path / "cap").read_bytes()
    assert result["sha256"] == hashlib.sha256(payload).hexdigest()
    assert stream.inline_only and stream.ranges is None and stream.thread is None
    assert threading.active_count() <= before + 2  # _run's own reader and writer threads, joined by now
