"""reference_host.stream.sse_parser against the WHATWG "server-sent events" parsing rules, one
rule per test or table row, and where httpx-sse (0.4.3) parts from those rules.

The httpx-sse tests pin its current behaviour: each one documents a gap that made us write our
own parser for the tests. If httpx-sse changes, the test fails and the note can be revisited.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from httpx_sse import connect_sse

from reference_host.stream import events
from reference_host.stream.events import CONNECTED, KEEP_ALIVE
from reference_host.stream.sse_parser import SSEComment, SSEEvent, SSEParser, parse
from reference_host.stream.sse_parser import events as only_events


def message(data: str, type: str = "message", last_event_id: str = "") -> SSEEvent:
    return SSEEvent(type, data, last_event_id)


def fed(*chunks: bytes | str) -> list[SSEEvent | SSEComment]:
    parser = SSEParser()
    items = [item for chunk in chunks for item in parser.feed(chunk)]
    return items + parser.close()


# -- line endings ------------------------------------------------------------------------


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_each_line_ending(eol: str) -> None:
    stream = f"event: a{eol}data: 1{eol}data: 2{eol}{eol}: c{eol}data: x{eol}{eol}"
    assert parse(stream) == [message("1\n2", "a"), SSEComment("c"), message("x")]


def test_mixed_line_endings() -> None:
    assert parse("data: a\rdata: b\r\ndata: c\n\r\n") == [message("a\nb\nc")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    assert fed("data: a\r", "\n", "\r", "\n") == [message("a")]
    assert fed(b"data: a\r", b"\ndata: b\r", b"\n\r\n") == [message("a\nb")]


def test_cr_at_a_chunk_end_ends_the_line_at_once() -> None:
    parser = SSEParser()
    assert parser.feed("data: a\r\r") == [message("a")]
    assert parser.feed("data: b\r") == []
    assert parser.feed("\r") == [message("b")]


def test_cr_then_other_text_in_the_next_chunk() -> None:
    assert fed("data: a\r", "data: b\r", "\r") == [message("a\nb")]


def test_byte_by_byte_equals_whole() -> None:
    stream = (
        "\ufeff: hello\r\nid: 1\revent: x\ndata: é€😀\r\n\r\ndata: y\n\n".encode()
        + CONNECTED
        + events.done("ok", 1, 1.0).encode()
    )
    whole = parse(stream)
    assert fed(*(stream[i : i + 1] for i in range(len(stream)))) == whole
    assert [type(i).__name__ for i in whole] == [
        "SSEComment",
        "SSEEvent",
        "SSEEvent",
        "SSEComment",
        "SSEEvent",
    ]


# -- decoding and the BOM ----------------------------------------------------------------


def test_a_leading_bom_is_stripped() -> None:
    assert parse(b"\xef\xbb\xbfdata: x\n\n") == [message("x")]
    assert parse("\ufeffdata: x\n\n") == [message("x")]


def test_a_bom_split_across_chunks_is_stripped() -> None:
    assert fed(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [message("x")]


def test_only_one_leading_bom_is_stripped() -> None:
    # the second BOM starts the field name, so the line is an unknown field
    assert parse("\ufeff\ufeffdata: x\n\ndata: y\n\n") == [message("y")]
    assert parse("data: \ufeffx\n\n") == [message("\ufeffx")]


def test_utf8_split_across_chunks_and_invalid_bytes() -> None:
    encoded = "data: é😀\n\n".encode()
    assert fed(*(encoded[i : i + 1] for i in range(len(encoded)))) == [message("é😀")]
    assert parse(b"data: a\xffb\n\n") == [message("a\ufffdb")]


# -- comments ----------------------------------------------------------------------------


def test_comments_are_returned_with_one_leading_space_removed() -> None:
    assert parse(": connected\n:no space\n:\n:  two\n") == [
        SSEComment("connected"),
        SSEComment("no space"),
        SSEComment(""),
        SSEComment(" two"),
    ]


def test_comments_do_not_dispatch_or_disturb_an_event() -> None:
    assert parse("data: a\n: keep-alive\ndata: b\n\n") == [
        SSEComment("keep-alive"),
        message("a\nb"),
    ]


def test_the_chat_streams_comments() -> None:
    assert parse(CONNECTED + KEEP_ALIVE) == [SSEComment("connected"), SSEComment("keep-alive")]


# -- fields ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "data"),
    [
        pytest.param("data: a: b:c\n\n", ["a: b:c"], id="split-on-the-first-colon"),
        pytest.param(
            "data:x\n\ndata:  x\n\ndata:\tx\n\n", ["x", " x", "\tx"], id="one-space-removed"
        ),
        pytest.param("data\n\n", [""], id="no-colon-is-an-empty-value"),
        pytest.param("event\ndata: x\n\n", ["x"], id="no-colon-empty-event-type"),
        pytest.param(
            "Data: x\nfoo: y\nevent : z\ndata: ok\n\n", ["ok"], id="unknown-or-cased-ignored"
        ),
        pytest.param("data: a\ndata: b\n\n", ["a\nb"], id="data-lines-join-with-lf"),
        pytest.param("data\ndata\n\n", ["\n"], id="one-trailing-lf-goes"),
        pytest.param("data: \n\n", [""], id="empty-data"),
    ],
)
def test_fields(stream: str, data: list[str]) -> None:
    """Field and value split on the first colon, with one leading space removed; a line
    without a colon is a field with an empty value; unknown and differently cased fields
    are ignored; data lines join with LF and one trailing LF goes."""
    assert parse(stream) == [message(d) for d in data]


# -- dispatch ----------------------------------------------------------------------------


def test_event_type_defaults_to_message_and_resets_after_dispatch() -> None:
    assert parse("event: tool\ndata: 1\n\ndata: 2\n\n") == [message("1", "tool"), message("2")]


@pytest.mark.parametrize(
    ("stream", "data"),
    [
        pytest.param("event: ping\n\ndata: x\n\n", ["x"], id="no-data-dispatches-nothing"),
        pytest.param("\n\n\ndata: x\n\n\n\n", ["x"], id="extra-blank-lines"),
        pytest.param("data: x\n\ndata: y\n", ["x"], id="unterminated-final-event"),
        pytest.param("data: x\n\nevent: e\ndata: y\n", ["x"], id="unterminated-typed-event"),
        pytest.param("data: x\n\ndata: y", ["x"], id="unterminated-final-line"),
        pytest.param(": tail", [], id="unterminated-comment"),
    ],
)
def test_only_a_blank_line_after_data_dispatches(stream: str, data: list[str]) -> None:
    """No data dispatches nothing (and resets the type), extra blank lines dispatch
    nothing, and an unterminated final event or line is discarded."""
    assert parse(stream) == [message(d) for d in data]


def test_an_unterminated_final_line_is_discarded_at_close() -> None:
    parser = SSEParser()
    assert parser.feed("data: y\n") == []
    assert parser.close() == []


def test_feeding_after_close_is_an_error() -> None:
    parser = SSEParser()
    parser.close()
    assert parser.close() == []
    with pytest.raises(ValueError):
        parser.feed("data: x\n\n")


# -- id and retry ------------------------------------------------------------------------


def test_id_sets_the_last_event_id_which_persists() -> None:
    parser = SSEParser()
    items = parser.feed("id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n")
    assert items == [message("a", last_event_id="1"), message("b", "message", "1"), message("c")]
    assert parser.last_event_id == ""


def test_an_id_with_nul_is_ignored() -> None:
    assert parse("id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n") == [
        message("a", last_event_id="1"),
        message("b", last_event_id="1"),
    ]


def test_an_id_without_data_still_sets_the_last_event_id() -> None:
    parser = SSEParser()
    assert parser.feed("id: 7\n\n") == []
    assert parser.last_event_id == "7"
    assert parser.feed("data: x\n\n") == [message("x", last_event_id="7")]


def test_an_id_is_taken_only_on_dispatch() -> None:
    parser = SSEParser()
    parser.feed("id: 9\ndata: x\n")
    assert parser.last_event_id == ""
    assert parser.close() == [] and parser.last_event_id == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [("3000", 3000), ("0", 0), ("007", 7), ("-1", None), ("+5", None), ("1.5", None),
     ("1_000", None), ("", None), (" 10", None), ("\uff11\uff10", None)],
)  # fmt: skip
def test_retry_only_ascii_digits(value: str, expected: int | None) -> None:
    parser = SSEParser()
    assert parser.feed(f"retry: {value}\ndata: x\n\n") == [message("x")]
    assert parser.reconnection_time == expected


def test_retry_keeps_the_last_valid_value() -> None:
    parser = SSEParser()
    parser.feed("retry: 10\n\nretry: x\n\n")
    assert parser.reconnection_time == 10


# -- the host's own frames ---------------------------------------------------------------


def test_event_encode_round_trips() -> None:
    event = events.tool_result("c1", "t", True, '{"a": "line\\nbreak", "ü": 1}')
    (parsed,) = parse(event.encode())
    assert isinstance(parsed, SSEEvent) and parsed.type == "tool"
    assert parsed.data.count("\n") == 0
    assert only_events(parse(CONNECTED + event.encode())) == [parsed]


# -- httpx-sse: where it agrees and where it parts from the spec -------------------------


class Chunks(httpx.SyncByteStream):
    """A response body in given chunks; `pulled` counts the chunks handed out so far."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.pulled = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.pulled += 1
            yield chunk


def httpx_sse(
    chunks: list[bytes], content_type: str = "text/event-stream"
) -> list[tuple[str, str, str, int | None]]:
    body = Chunks(chunks)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": content_type}, stream=body)

    with (
        httpx.Client(transport=httpx.MockTransport(handler)) as client,
        connect_sse(client, "GET", "http://sse.test/") as source,
    ):
        return [(e.event, e.data, e.id, e.retry) for e in source.iter_sse()]


def test_httpx_sse_agrees_on_ordinary_frames_and_line_endings() -> None:
    stream = CONNECTED + events.token("a").encode() + b"data: x\rdata: y\r\r"
    assert httpx_sse([stream]) == [
        ("token", '{"text":"a"}', "", None),
        ("message", "x\ny", "", None),
    ]
    assert [(e.type, e.data) for e in only_events(parse(stream))] == [
        ("token", '{"text":"a"}'),
        ("message", "x\ny"),
    ]


def test_httpx_sse_does_not_surface_comments() -> None:
    """`: connected` and `: keep-alive` are invisible through httpx-sse."""
    stream = CONNECTED + KEEP_ALIVE
    assert httpx_sse([stream]) == []
    assert parse(stream) == [SSEComment("connected"), SSEComment("keep-alive")]


def test_httpx_sse_dispatches_events_without_data() -> None:
    """Spec: an empty data buffer dispatches nothing. httpx-sse yields an event anyway."""
    stream = b"event: ping\n\nid: 7\n\nretry: 10\n\n"
    assert httpx_sse([stream]) == [
        ("ping", "", "", None),
        ("message", "", "7", None),
        ("message", "", "7", 10),
    ]
    assert parse(stream) == []


def test_httpx_sse_accepts_retry_values_that_are_not_digits() -> None:
    """Spec: retry must be ASCII digits only; httpx-sse takes whatever int() takes."""
    assert httpx_sse([b"retry: -1\ndata: a\n\nretry: +5\ndata: b\n\n"]) == [
        ("message", "a", "", -1),
        ("message", "b", "", 5),
    ]
    parser = SSEParser()
    parser.feed("retry: -1\ndata: a\n\nretry: +5\ndata: b\n\n")
    assert parser.reconnection_time is None


def test_httpx_sse_keeps_a_leading_bom_and_loses_the_first_event() -> None:
    """Spec: a leading BOM is stripped. httpx-sse reads `\\ufeffdata` as an unknown field."""
    stream = b"\xef\xbb\xbfdata: first\n\ndata: second\n\n"
    assert httpx_sse([stream]) == [("message", "second", "", None)]
    assert parse(stream) == [message("first"), message("second")]


def test_httpx_sse_decodes_with_the_declared_charset() -> None:
    """Spec: the stream is always UTF-8. httpx-sse follows a charset parameter."""
    stream = "data: é\n\n".encode()
    assert httpx_sse([stream], "text/event-stream; charset=iso-8859-1") == [
        ("message", "Ã©", "", None)
    ]
    assert parse(stream) == [message("é")]


def test_httpx_sse_holds_back_a_cr_that_ends_a_chunk() -> None:
    """With CR line ends, the CR that completes an event is held until the next chunk
    arrives (it might be a CRLF), so the event is dispatched one chunk late; on a live
    stream that can be a whole keep-alive interval. The spec ends the line at the CR."""
    body = Chunks([b"data: a\r\r", b": keep-alive\r\r"])

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, stream=body)

    with (
        httpx.Client(transport=httpx.MockTransport(handler)) as client,
        connect_sse(client, "GET", "http://sse.test/") as source,
    ):
        first = next(iter(source.iter_sse()))
        assert (first.data, body.pulled) == ("a", 2)  # needed the second chunk
    parser = SSEParser()
    assert parser.feed(b"data: a\r\r") == [message("a")]  # dispatched from the first
