"""StderrTail: the worker's recent stderr, bounded in lines and in bytes."""

from __future__ import annotations

from reference_host.process.tail import StderrTail


def test_lines_are_split_across_chunks_and_the_last_one_counts_at_close() -> None:
    seen: list[str] = []
    tail = StderrTail(seen.append)
    for chunk in (b"first li", b"ne\r\nsecond\n\nthi", b"rd"):
        tail.feed(chunk)
    assert list(tail) == ["first line", "second", ""]
    tail.close()
    assert tail.text == "first line\nsecond\n\nthird"
    assert seen == list(tail)


def test_the_oldest_lines_go_first_when_over_the_line_cap() -> None:
    tail = StderrTail(max_lines=3)
    tail.feed(b"".join(b"line %d\n" % n for n in range(10)))
    assert list(tail) == ["line 7", "line 8", "line 9"]


def test_the_byte_cap_keeps_whole_lines() -> None:
    tail = StderrTail(max_bytes=100, max_line_bytes=40)
    tail.feed(b"".join(b"%02d" % n + b"x" * 28 + b"\n" for n in range(10)))  # 30 B a line
    assert len(tail) == 3 and tail.size == 90
    assert [line[:2] for line in tail] == ["07", "08", "09"]


def test_a_giant_line_is_cut_short() -> None:
    tail = StderrTail(max_bytes=1000, max_line_bytes=100)
    for _ in range(1000):
        tail.feed(b"L" * 10_000)
    tail.feed(b"\nafter\n")
    giant, after = list(tail)
    assert giant == "L" * 100 + " [9999900 more bytes cut]"
    assert after == "after" and tail.size == 105


def test_invalid_utf8_is_replaced() -> None:
    tail = StderrTail()
    tail.feed(b"caf\xc3\xa9 \xff\n")
    assert list(tail) == ["café \ufffd"]
