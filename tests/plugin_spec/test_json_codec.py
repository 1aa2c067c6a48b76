"""The frames' JSON codec (fengyu_worker.encode_json / decode_json): with orjson installed or
not, the same values are written with the same meaning and the same are refused, and the
same text reads as the same value. orjson is the `fast` extra; the test extra installs it."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fengyu_worker
from fengyu_worker import decode_json, encode_json
from plugin_spec.framing import decode_line, decode_message, line_head

orjson = pytest.importorskip("orjson")


@pytest.fixture
def stdlib_only() -> Iterator[None]:
    saved = fengyu_worker._orjson
    fengyu_worker._orjson = None
    try:
        yield
    finally:
        fengyu_worker._orjson = saved


def _both(work: Callable[[], Any]) -> tuple[Any, Any]:
    """What work gives (or the type of what it raises) with orjson, then without it."""

    def outcome() -> Any:
        try:
            return work()
        except Exception as exc:
            return type(exc)

    with_orjson = outcome()
    saved, fengyu_worker._orjson = fengyu_worker._orjson, None
    try:
        return with_orjson, outcome()
    finally:
        fengyu_worker._orjson = saved


class Colour(Enum):
    RED = "red"


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and infinities included
    st.text(),  # lone surrogates included
    st.sampled_from([uuid.UUID(int=1), Colour.RED, (1, 2)]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@given(values, st.booleans())
def test_what_is_written_means_the_same_and_the_same_is_refused(
    value: Any, allow_nan: bool
) -> None:
    fast, plain = _both(lambda: encode_json(value, allow_nan=allow_nan))
    if isinstance(plain, type):
        assert fast is plain
        return
    assert _same(json.loads(fast), json.loads(plain))


@given(values.map(lambda v: json.dumps(v, default=str)) | st.text())
def test_what_is_read_is_the_same_value_or_the_same_refusal(text: str) -> None:
    fast, plain = _both(lambda: decode_json(text))
    if isinstance(plain, type):
        assert isinstance(fast, type) and issubclass(fast, ValueError)
        assert issubclass(plain, ValueError)
        return
    assert _same(fast, plain) and type(fast) is type(plain)


@pytest.mark.parametrize(
    "text",
    ['{"a":1,"a":2}', "NaN", "[1e400]", str(2**80), '"\\ud800"', "-0", "1.0", '{"b":[]}'],
)
def test_the_edges_orjson_leaves_to_json_read_alike(text: str) -> None:
    fast, plain = _both(lambda: decode_json(text))
    assert _same(fast, plain) and type(fast) is type(plain)


def test_big_text_is_written_by_orjson() -> None:
    """The point of the extra: a plain value goes through orjson, whose bytes are its own."""
    value = {"text": "x" * 1000, "n": 1.5}
    assert encode_json(value) == orjson.dumps(value)


def test_without_orjson_json_writes_everything(stdlib_only: None) -> None:
    assert encode_json({"text": "é"}) == '{"text":"é"}'.encode()
    with pytest.raises(ValueError):
        encode_json(float("nan"))


lines = st.one_of(
    values.map(lambda v: json.dumps(v, default=str, ensure_ascii=False).encode("utf-8", "replace")),
    st.binary(max_size=40),
    st.sampled_from(
        [
            b'\xef\xbb\xbf{"id":"1"}',  # a BOM: not JSON text as the host reads a line
            '{"id":"1"}'.encode("utf-16-le"),
            b'{"id":"\xff"}',  # not UTF-8: read with a replacement character
            b'{"id":"1"}\r',
            b'  {"id":"1"}',
            b'{"id":1e400}',
        ]
    ),
).map(lambda raw: raw + b"\n")


@given(lines)
def test_the_reader_s_fast_way_reads_a_line_as_the_text_way_does(raw: bytes) -> None:
    """framing.decode_message (the bytes as they came) against decode_line (the text)."""
    fast, plain = _both(lambda: decode_message(raw))
    text_way = decode_line(raw)[1]
    assert _same(fast, text_way) and _same(plain, text_way)
    assert line_head(raw) == decode_line(raw)[0][:1000]
