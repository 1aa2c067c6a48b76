"""Reading JSON: duplicate keys kept, pointers located, bad input named without a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.sources import JsonLoadError, load_json_file, parse_json, pointer

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


def test_pointer_escapes_tilde_and_slash() -> None:
    assert pointer("rpc", "methods", "$/a~b", 0) == "/rpc/methods/$~1a~0b/0"


def test_duplicate_keys_are_reported_with_their_pointer() -> None:
    doc = parse_json('{"a": {"x": 1, "x": 2}, "b": [{"y": 1, "y": 1}]}', "m.json")
    assert [(d.pointer, d.key) for d in doc.duplicates] == [("/a/x", "x"), ("/b/0/y", "y")]
    assert doc.data["a"]["x"] == 2


def test_line_of_falls_back_to_the_nearest_existing_parent() -> None:
    doc = parse_json('{\n  "a": {\n    "b": 1\n  }\n}', "m.json")
    assert doc.line_of("/a/b") == 3
    assert doc.line_of("/a/missing") == 2
    assert doc.line_of("") == 1


@given(json_values)
def test_every_pointer_resolves_to_its_value_and_a_line(value: object) -> None:
    text = json.dumps(value, indent=1)
    doc = parse_json(text, "m.json")

    def walk(node: object, at: str) -> None:
        assert doc.get(at) == node
        assert doc.line_of(at) is not None
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, at + pointer(key))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, at + pointer(index))

    walk(value, "")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"a": 1,}', r"m\.json is not valid JSON"),
        (b"\xff\xfe{}", "m.json is not UTF-8"),
    ],
)
def test_load_errors_name_the_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(content)
    with pytest.raises(JsonLoadError, match=message):
        load_json_file(path, "m.json")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(JsonLoadError, match=r"m\.json not found"):
        load_json_file(tmp_path / "m.json", "m.json")


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(b"\xef\xbb\xbf{}")
    assert load_json_file(path, "m.json").data == {}
