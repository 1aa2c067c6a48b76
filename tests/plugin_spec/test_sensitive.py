"""Which values are secrets, and how they are masked (spec: host.md#sensitive-inputs)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from plugin_spec.sensitive import (
    HIDDEN,
    MASK,
    has_sensitive,
    mask,
    mask_arguments,
    redact,
    secrets,
    sensitive_pointers,
)

SECRET = {"type": "string", "x-fengyu-sensitive": True}
SCHEMA = {
    "type": "object",
    "properties": {
        "user": {"type": "string"},
        "password": SECRET,
        "auth": {"type": "object", "properties": {"token": SECRET}},
        "keys": {"type": "array", "items": SECRET},
        "plain": {"type": "string", "x-fengyu-sensitive": False},
    },
}


def test_pointers_name_every_marked_property_nested_ones_too() -> None:
    assert list(sensitive_pointers(SCHEMA)) == [
        "/properties/password",
        "/properties/auth/properties/token",
        "/properties/keys/items",
    ]
    assert has_sensitive(SCHEMA)
    assert not has_sensitive({"type": "object", "properties": {"plain": {"type": "string"}}})


def test_mask_replaces_marked_values_only() -> None:
    sent = {
        "user": "ann",
        "password": "hunter22",
        "auth": {"token": "t-1234", "other": 1},
        "keys": ["a-1111", "b-2222"],
        "plain": "visible",
    }
    assert mask(sent, SCHEMA) == {
        "user": "ann",
        "password": MASK,
        "auth": {"token": MASK, "other": 1},
        "keys": [MASK, MASK],
        "plain": "visible",
    }
    assert sent["password"] == "hunter22"  # a new structure: the worker still gets the value


def test_arguments_keep_their_text_when_nothing_is_masked() -> None:
    text = '{"user":  "ann"}'
    assert mask_arguments(text, SCHEMA) is text
    assert mask_arguments('{"password": "x"}', {"type": "object"}) == '{"password": "x"}'
    assert json.loads(mask_arguments('{"password": "hunter22"}', SCHEMA)) == {"password": MASK}


def test_arguments_that_do_not_parse_are_hidden_whole() -> None:
    assert mask_arguments('{"password": "hunter22"', SCHEMA) == HIDDEN
    assert mask_arguments('["hunter22"]', SCHEMA) == HIDDEN


def test_redact_finds_secrets_in_free_text_and_in_json_text() -> None:
    sent = {"password": 'pa"ss\\word', "auth": {"token": "abc"}, "keys": [12345678]}
    found = secrets(sent, SCHEMA)
    assert found == ['pa"ss\\word', "12345678"]  # "abc" is too short to look for
    echoed = json.dumps({"summary": f"logged in with {sent['password']} and 12345678"})
    assert redact(echoed, found) == json.dumps({"summary": f"logged in with {MASK} and {MASK}"})


JSON_LEAF = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
SECRET_TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters='"\\'),
    min_size=4,
    max_size=12,
)


@given(
    secret=SECRET_TEXT,
    extra=st.dictionaries(st.text(max_size=5), JSON_LEAF, max_size=4),
    nested=st.booleans(),
)
def test_masked_arguments_and_echoes_never_hold_the_secret(
    secret: str, extra: dict[str, object], nested: bool
) -> None:
    extra = {k: v for k, v in extra.items() if k not in ("password", "auth")}
    if secret in json.dumps(extra, ensure_ascii=False):
        return  # the secret also sits in an unmarked value, which is not masked
    sent = {**extra, **({"auth": {"token": secret}} if nested else {"password": secret})}
    text = json.dumps(sent, ensure_ascii=False)
    assert secret not in mask_arguments(text, SCHEMA)
    echoed = json.dumps({"echo": f"got {secret}", "args": sent}, ensure_ascii=False)
    assert secret not in redact(echoed, secrets(sent, SCHEMA))
