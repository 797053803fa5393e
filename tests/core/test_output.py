"""output.emit: text lines are written as print() would write them, a batch at a time."""

from __future__ import annotations

import contextlib
import io
from types import SimpleNamespace

import pytest

from skill_eval.core import output


def printed(lines: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        for line in lines:
            print(line)
    return buf.getvalue()


@pytest.mark.parametrize("lines", [
    [],
    [""],
    ["one"],
    ["a", "", "b\nc", "é ✓ \udcff"],  # an empty line, an embedded newline, a lone surrogate
    [f"line {i} " + "x" * (i % 300) for i in range(2000)],  # many batches, boundaries anywhere
    ["y" * (3 * output.BATCH_CHARS), "z"],  # one line longer than a batch
])
def test_text_lines_are_what_print_writes(lines):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        output.emit(SimpleNamespace(json=False), iter(lines), {"ignored": True})
    assert buf.getvalue() == printed(lines)


def test_writes_are_batched_and_a_generator_is_read_as_it_goes():
    writes: list[int] = []
    consumed: list[int] = []

    class Counting(io.StringIO):
        def write(self, s: str) -> int:
            writes.append(len(consumed))
            return super().write(s)

    def lines():
        for i in range(5000):
            consumed.append(i)
            yield "x" * 99

    out = Counting()
    with contextlib.redirect_stdout(out):
        output.emit(SimpleNamespace(json=False), lines(), {})
    assert out.getvalue() == "x" * 99 + "\n" + ("x" * 99 + "\n") * 4999
    assert 5000 * 100 // output.BATCH_CHARS <= len(writes) <= 5000 * 100 // output.BATCH_CHARS + 1
    assert writes[0] < 5000  # the first batch went out before the generator was exhausted


def test_json_is_one_sorted_indented_object():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        output.emit(SimpleNamespace(json=True), ["never printed"], {"b": 1, "a": [1, 2]})
    assert buf.getvalue() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'


def test_lines_made_before_a_failure_are_written_as_print_wrote_them():
    """Found in review: a batch held back when the line generator raised was lost (print had written
    each line as it came)."""
    def lines():
        yield "first"
        yield "second"
        raise RuntimeError("the generator broke")

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(RuntimeError, match="broke"):
        output.write_lines(lines())
    assert buf.getvalue() == "first\nsecond\n"
