"""A secret is found in the spellings a leak takes, and not by chance (plugin_spec/secret_search.py;
spec: mcp.md#secrets, fengyu-worker.md#sensitive-inputs)."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from itertools import pairwise
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from plugin_spec.secret_search import (
    AS_IS,
    SHORTEST_PART,
    Redaction,
    find,
    forms,
    search,
    split_parts,
)
from plugin_spec.sensitive import MASK, redact

TOKEN = "sk-live-4f9c2a71d03be8e6"


def _b64(prefix: bytes, secret: str, suffix: bytes) -> str:
    return base64.b64encode(prefix + secret.encode() + suffix).decode()


def _b64url(prefix: bytes, secret: str, suffix: bytes) -> str:
    return base64.urlsafe_b64encode(prefix + secret.encode() + suffix).decode().rstrip("=")


def _b32(prefix: bytes, secret: str, suffix: bytes) -> str:
    return base64.b32encode(prefix + secret.encode() + suffix).decode()


def _escaped(_: bytes, secret: str, __: bytes) -> str:
    """Every character as \\uXXXX (a pair of them beyond the BMP)."""
    return "".join(f"\\u{ord(c):04x}" if c.isascii() else json.dumps(c)[1:-1] for c in secret)


# How a leak spells the secret (with the bytes around it in the same blob), and the encoding
# a finding names for it.
ENCODERS: dict[str, tuple[Callable[[bytes, str, bytes], str], str]] = {
    "plain": (lambda _, s, __: s, AS_IS),
    "base64": (_b64, "base64-encoded"),
    "base64url": (_b64url, "base64"),  # base64-encoded or base64url-encoded: which core differs
    "base32": (_b32, "base32-encoded"),
    "hex": (lambda _, s, __: s.encode().hex(), "hex-encoded"),
    "HEX": (lambda _, s, __: s.encode().hex().upper(), "hex-encoded"),
    "percent": (lambda _, s, __: "".join(f"%{b:02X}" for b in s.encode()), "percent-encoded"),
    "json": (_escaped, "JSON-escaped"),
    "reversed": (lambda _, s, __: s[::-1], "reversed"),
}

SECRETS = st.text(
    st.characters(codec="utf-8", exclude_characters="\0", exclude_categories=["Cs"]),
    min_size=8,
    max_size=40,
)
FILLER = st.text(st.characters(codec="ascii"), max_size=200)


@pytest.mark.parametrize("name", ENCODERS)
def test_each_spelling_is_found_and_named(name: str) -> None:
    encode, encoding = ENCODERS[name]
    for before in (b"", b"x", b"xy", b"xyz", b'{"user": "ann", "token": "'):
        blob = encode(before, TOKEN, b'", "more": 1}')
        text = f"result: {blob} (end)"
        match = find(TOKEN, text)
        assert match is not None, (name, before, text)
        assert match.encoding.startswith(encoding)


@given(
    secret=SECRETS,
    name=st.sampled_from(sorted(ENCODERS)),
    before=st.binary(max_size=7),
    after=st.binary(max_size=7),
    left=FILLER,
    right=FILLER,
)
@example(secret="aaaaaaaa", name="base32", before=b"\0", after=b"", left="", right="")
def test_any_secret_of_8_characters_or_more_is_found_in_each_spelling(
    secret: str, name: str, before: bytes, after: bytes, left: str, right: str
) -> None:
    encode, _ = ENCODERS[name]
    text = left + encode(before, secret, after) + right
    assert find(secret, text) is not None


@given(secret=SECRETS.filter(lambda s: len(s) >= 2 * SHORTEST_PART), data=st.data())
def test_a_secret_split_in_parts_of_8_or_more_is_found(secret: str, data: st.DataObject) -> None:
    count = data.draw(st.integers(2, len(secret) // SHORTEST_PART))
    bounds = [0]
    for left in range(count - 1, 0, -1):  # each cut leaves room for the parts after it
        last = len(secret) - left * SHORTEST_PART
        bounds.append(data.draw(st.integers(bounds[-1] + SHORTEST_PART, last)))
    bounds.append(len(secret))
    parts = [secret[a:b] for a, b in pairwise(bounds)]
    filler = data.draw(FILLER) or " | "
    text = filler.join(data.draw(st.permutations(parts)))
    match = find(secret, text)
    assert match is not None
    if secret not in text:
        assert match.encoding.startswith("split in")


@given(secret=SECRETS, text=st.text(max_size=300))
def test_a_text_without_any_8_characters_of_any_spelling_holds_no_secret(
    secret: str, text: str
) -> None:
    grams = {f.text[i : i + 8] for f in forms(secret) for i in range(max(len(f.text) - 7, 1))}
    assume(not any(g in text for g in grams))
    assert find(secret, text) is None


def test_halves_shorter_than_8_characters_are_not_a_split() -> None:
    assert split_parts("abcd1234", "abcd and 1234") is None  # 8 characters: halves of 4
    assert find("abcdefgh12345", "abcdefgh then 12345") is None  # a part of 5
    assert split_parts("abcdefgh12345678", "abcdefgh then 12345678") == ("abcdefgh", "12345678")
    # the last part is cut back to 8 characters when the longest piece leaves less
    assert split_parts("abcdefghij123456", "abcdefghij1 and ghij123456") == (
        "abcdefgh",
        "ij123456",
    )


def test_a_secret_in_three_parts_is_found() -> None:
    secret = "0123456789abcdefghijklmnopqrstuv"
    text = f"{secret[20:]} -- {secret[:10]} -- {secret[10:20]}"
    match = find(secret, text)
    assert match is not None and match.encoding == "split in 3 parts"
    assert [text[a:b] for a, b in match.spans] == [secret[:10], secret[10:20], secret[20:]]


def test_a_short_secret_is_looked_for_as_it_is_and_json_escaped_only() -> None:
    assert [f.encoding for f in forms("hunter2")] == [AS_IS]
    assert {f.encoding for f in forms('pa"ss')} == {AS_IS, "JSON-escaped"}
    assert find("hunter2", "aHVudGVyMg==") is None


def test_search_names_each_secret_found_once() -> None:
    other = "ghp_0123456789abcdefXYZ"
    text = f"{TOKEN} and {quote(other, safe='')} and {TOKEN}"
    assert [(m.secret, m.encoding) for m in search([TOKEN, other, "never-there-0"], text)] == [
        (TOKEN, AS_IS),
        (other, AS_IS),
    ]


def test_random_base64_and_hex_do_not_hold_a_random_secret() -> None:
    """No false positive in 1 MiB of random base64, hex and text for 50 random tokens."""
    rng = random.Random(35)
    blob = base64.b64encode(rng.randbytes(3 << 18)).decode()
    text = blob + rng.randbytes(1 << 18).hex() + "".join(rng.choices("abcdef ghij-_", k=1 << 18))
    for _ in range(50):
        secret = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=rng.randint(8, 40)))
        assert find(secret, text) is None, secret


def test_redaction_masks_every_spelling_and_split_parts_across_texts() -> None:
    texts = [
        f"as is {TOKEN}",
        f"blob {_b64(b'ab', TOKEN, b'cd')}",
        f"dump {TOKEN.encode().hex()}",
        f"starts {TOKEN[:10]}",
        f"ends {TOKEN[10:]}",
        json.dumps(TOKEN, ensure_ascii=True),
    ]
    redaction = Redaction([TOKEN], texts, MASK)
    masked = [redaction.apply(t) for t in texts]
    assert all(MASK in t for t in masked), masked
    assert all(find(TOKEN, t) is None for t in masked)
    assert redaction.apply("nothing here") == "nothing here"


def test_redact_keeps_masking_short_secrets_as_they_are() -> None:
    assert redact('{"pin": "4321", "again": "4321"}', ["4321"]) == (
        f'{{"pin": "{MASK}", "again": "{MASK}"}}'
    )
    masked = redact("key aGVsbG8td29ybGQ=", ["hello-world"])  # base64 of it
    assert MASK in masked and find("hello-world", masked) is None


class Scanned(str):
    """A text that counts the scans made of it (find and `in`, each linear in its length)."""

    scans = 0

    def find(self, sub: str, *args: Any) -> int:
        self.scans += 1
        return super().find(sub, *args)

    def __contains__(self, sub: object) -> bool:
        self.scans += 1
        return super().__contains__(sub)  # type: ignore[operator]


def test_ten_mebibytes_are_searched_in_linear_time() -> None:
    """10 MiB without the secret: every spelling of 10 secrets searched, in as many scans of
    the text as 1 KiB takes (one per spelling, one or two for a split), so the time grows
    linearly with the text's size. The time itself (in docs/guide/guarantees.md) is a
    figure for a benchmark, not a test."""
    rng = random.Random(11)
    secrets = [f"tok-{rng.randbytes(12).hex()}" for _ in range(10)]
    spellings = sum(len(forms(secret)) for secret in secrets)
    scans = []
    for size in (3 << 8, 15 << 19):  # 1 KiB and 10 MiB of base64
        text = Scanned(base64.b64encode(rng.randbytes(size)).decode())
        assert search(secrets, text) == []
        scans.append(text.scans)
    assert scans[0] == scans[1], scans
    assert spellings <= scans[1] <= spellings + 2 * len(secrets), (scans, spellings)
