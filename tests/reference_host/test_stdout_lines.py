"""A worker's stdout cut into lines in the pipe callback (reference_host/process/stdout_lines.py):
however the pipe chunks the bytes, each line reaches the consumer once, whole and in order."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_host.process.stdout_lines import StdoutLines

LOOP = asyncio.new_event_loop()  # only makes the `closed` futures; it never runs


@pytest.fixture(autouse=True, scope="module")
def _close_loop() -> Iterator[None]:
    yield
    LOOP.close()


def _lines(limit: int = 64) -> tuple[StdoutLines, list[bytes]]:
    got: list[bytes] = []
    lines = StdoutLines(limit, LOOP)
    lines.attach(got.append)
    return lines, got


@given(
    st.lists(st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    st.lists(st.integers(min_value=1, max_value=9), min_size=1),
)
def test_any_chunking_hands_on_the_same_lines(body: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(line + b"\n" for line in body)
    lines, got = _lines()
    position, index = 0, 0
    while position < len(stream):
        step = cuts[index % len(cuts)]
        lines.feed(stream[position : position + step])
        position, index = position + step, index + 1
    lines.feed_eof()
    assert got == [line + b"\n" for line in body]
    assert lines.closed.done() and not lines.overrun


def test_lines_before_the_consumer_wait_for_it() -> None:
    lines = StdoutLines(64, LOOP)
    lines.feed(b"banner\n{")
    got: list[bytes] = []
    lines.attach(got.append)
    lines.feed(b'"id":"1"}\n')
    assert got == [b"banner\n", b'{"id":"1"}\n']


def test_a_last_line_without_newline_is_handed_on_at_eof_and_a_blank_one_is_not() -> None:
    lines, got = _lines()
    lines.feed(b'{"a":1}\n{"b":2}')
    lines.feed_eof()
    assert got == [b'{"a":1}\n', b'{"b":2}']
    blank, nothing = _lines()
    blank.feed(b"  ")
    blank.feed_eof()
    assert nothing == [] and blank.closed.done()


def test_a_line_over_the_limit_stops_the_delivery_for_good() -> None:
    lines, got = _lines(limit=8)
    lines.feed(b"short\n" + b"x" * 5)
    lines.feed(b"y" * 5)  # 10 bytes without a newline: over 8
    assert lines.overrun and lines.closed.done()
    lines.feed(b"\nlater\n")
    lines.feed_eof()
    assert got == [b"short\n"]
    whole, none = _lines(limit=8)
    whole.feed(b"123456789\n")  # one complete line over the limit
    assert whole.overrun and none == []
