"""The nesting a JSON line is refused for (plugin_spec/line_depth.py): brackets in strings do
not count, the limit itself passes, and a 16 MiB line is measured in well under a second."""

from __future__ import annotations

import json

from plugin_spec.line_depth import MAX_DEPTH, depth, depth_over, too_deep


def nested(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


def test_depth_counts_arrays_and_objects_not_brackets_in_strings() -> None:
    assert depth(b'{"a": [1, {"b": "[[[{{{"}], "c": "\\"[["}') == 3
    assert depth(b"[]") == 1
    assert depth(b'"just a string"') == 0


def test_the_limit_passes_and_one_more_level_does_not() -> None:
    assert not too_deep(nested(MAX_DEPTH))
    assert too_deep(nested(MAX_DEPTH + 1))
    assert too_deep(b"[" * 5000 + b"]" * 5000)


def test_a_refusal_names_the_depth_found() -> None:
    assert depth_over(nested(MAX_DEPTH)) is None
    assert depth_over(b"[" * 5000 + b"]" * 5000) == 5000
    assert depth_over(nested(40), limit=30) == 40


def test_a_wide_answer_is_not_deep() -> None:
    wide = json.dumps({"rows": [{"cell": [i]} for i in range(10_000)]}).encode()
    assert not too_deep(wide)


def test_a_16_mib_line_is_measured_whole() -> None:
    """The deepest line the frame cap admits (how fast: benchmarks, not a timed assertion)."""
    half = 8 * 1024 * 1024
    assert depth_over(b"[" * half + b"]" * half) == half


def test_both_kinds_of_bracket_count_toward_the_limit_anywhere_in_a_long_line() -> None:
    """Half the levels in arrays and half in objects, after a long string: the bracket
    pre-count sums both kinds over the whole line."""
    levels = MAX_DEPTH + 2
    opened = b"[" * (levels // 2) + b'{"a":' * (levels // 2)
    closed = b"1" + b"}" * (levels // 2) + b"]" * (levels // 2)
    padding = b'"' + b"x" * 100_000 + b'",'
    assert too_deep(b"[" + padding + opened + closed + b"]")
    assert not too_deep(b"[" + padding + nested(MAX_DEPTH - 1) + b"]")
