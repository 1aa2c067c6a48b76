"""Where a secret shows up in text, as it is or encoded (spec: mcp.md#secrets,
fengyu-worker.md#sensitive-inputs, host.md#sensitive-inputs).

A tool that leaks a secret need not copy it verbatim: a base64 blob, a hex dump, a URL or a
JSON string carries it just as well, and so do its two halves printed apart. The kit's checks
(MCP-SEC-003, FY-TOOL-004) and the host's masking search the same spellings, built here once
per secret, so what the kit fails the host masks.

The spellings searched, for a secret of SHORTEST_ENCODED characters or more: as it is;
base64 (standard and URL-safe alphabets; each of the 3 byte offsets, so the secret is found
inside a larger blob, padded or not); base32 (RFC 4648 alphabet, each of the 5 byte offsets);
hex (lower and upper case); percent-encoded (`quote(..., safe="")` and every byte as %XX,
lower and upper case); JSON-escaped (json.dumps's own escapes and every character as \\uXXXX,
lower and upper case); reversed. A secret of 2 * SHORTEST_PART characters or more is also
found split: cut into consecutive parts of SHORTEST_PART characters or more, each present
somewhere in the text, in any order, with anything between them. A shorter secret is searched
as it is and JSON-escaped only: its encodings are short enough to turn up by chance.

Not found: other encodings (compression, encryption, rot13, HTML entities, mixed-case hex),
a base64 or base32 blob broken by line breaks, an encoded form split in parts, and parts
shorter than SHORTEST_PART. Each spelling costs one linear scan of the text; a split costs two
more, and about log2(len(secret)) scans per part only where the first and last SHORTEST_PART
characters are both present.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, quote_plus

# A secret shorter than this is searched as it is and JSON-escaped only: an 8-character
# secret's encodings are 10 characters or more, too long to appear by chance.
SHORTEST_ENCODED = 8
# Each part of a split secret: 8 characters of a token do not turn up by chance, 4 might.
SHORTEST_PART = 8
AS_IS = "as it is"
JSON_ESCAPED = "JSON-escaped"
SPLIT = "split in {count} parts"


@dataclass(frozen=True)
class Form:
    """One spelling of a secret, and how it was made from it."""

    text: str
    encoding: str


@dataclass(frozen=True)
class Match:
    """A secret found in a text: how it was spelled there and where (one span per part)."""

    secret: str
    encoding: str
    spans: tuple[tuple[int, int], ...]

    @property
    def plain(self) -> bool:
        return self.encoding == AS_IS


@lru_cache(maxsize=4096)
def forms(secret: str) -> tuple[Form, ...]:
    """Each distinct spelling searched for, the plain one first (computed once per secret)."""
    found: dict[str, str] = {}

    def add(text: str, encoding: str) -> None:
        if text and text not in found:
            found[text] = encoding

    add(secret, AS_IS)
    for ascii_only in (False, True):
        add(json.dumps(secret, ensure_ascii=ascii_only)[1:-1], JSON_ESCAPED)
    if len(secret) < SHORTEST_ENCODED:
        return tuple(Form(text, encoding) for text, encoding in found.items())
    data = secret.encode("utf-8", "surrogatepass")
    for core in _cores(data, 3, 6, base64.b64encode):
        add(core, "base64-encoded")
        add(core.translate(_URLSAFE), "base64url-encoded")
    for core in _cores(data, 5, 5, base64.b32encode):
        add(core, "base32-encoded")
    add(data.hex(), "hex-encoded")
    add(data.hex().upper(), "hex-encoded")
    add(quote(secret, safe=""), "percent-encoded")
    add(quote_plus(secret, safe=""), "percent-encoded")
    add("".join(f"%{b:02X}" for b in data), "percent-encoded")
    add("".join(f"%{b:02x}" for b in data), "percent-encoded")
    units = secret.encode("utf-16-be", "surrogatepass")
    codes = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
    add("".join(f"\\u{c:04x}" for c in codes), JSON_ESCAPED)
    add("".join(f"\\u{c:04X}" for c in codes), JSON_ESCAPED)
    add(secret[::-1], "reversed")
    return tuple(Form(text, encoding) for text, encoding in found.items())


_URLSAFE = str.maketrans("+/", "-_")


def _cores(data: bytes, group: int, bits: int, encode: Callable[[bytes], bytes]) -> list[str]:
    """The characters of an encoding that depend on data alone, for each byte offset data
    can start at within the encoder's groups: what is the same in every blob holding it."""
    cores = []
    for offset in range(group):
        text = encode(bytes(offset) + data + bytes(group)).decode("ascii")
        first = -(-8 * offset // bits)  # the first character after the offset's bits
        end = 8 * (offset + len(data)) // bits  # past the last one inside data's bits
        cores.append(text[first:end])
    return cores


def find(secret: str, text: str) -> Match | None:
    """Where secret appears in text, in the first spelling of forms() found, else split."""
    for form in forms(secret):
        at = text.find(form.text)
        if at >= 0:
            return Match(secret, form.encoding, ((at, at + len(form.text)),))
    parts = split_parts(secret, text)
    if parts is None:
        return None
    spans = tuple((text.find(p), text.find(p) + len(p)) for p in parts)
    return Match(secret, SPLIT.format(count=len(parts)), spans)


def search(secrets: Iterable[str], text: str) -> list[Match]:
    """The secrets found in text, one match each, in the order given."""
    return [m for m in (find(s, text) for s in dict.fromkeys(secrets)) if m is not None]


def split_parts(secret: str, text: str) -> tuple[str, ...] | None:
    """secret cut into 2 or more consecutive parts of SHORTEST_PART characters or more, each
    present in text; None when it cannot be. The cut after each part is the farthest
    possible: a later cut never reaches less far (a substring of what is present is present)."""
    size = len(secret)
    if size < 2 * SHORTEST_PART:
        return None
    if secret[:SHORTEST_PART] not in text or secret[-SHORTEST_PART:] not in text:
        return None  # the cheap test that rules out almost every text
    parts: list[str] = []
    cut = 0
    while True:
        length = _longest_present(secret, cut, text)
        if length < SHORTEST_PART:
            return None
        if cut + length >= size:
            parts.append(secret[cut:])
            return tuple(parts) if len(parts) > 1 else None
        following = min(cut + length, size - SHORTEST_PART)
        if following - cut < SHORTEST_PART:
            return None
        parts.append(secret[cut:following])
        cut = following


def _longest_present(secret: str, start: int, text: str) -> int:
    """The length of the longest piece of secret from start that text holds (0 below
    SHORTEST_PART): a binary search, since every prefix of a piece present is present."""
    if secret[start : start + SHORTEST_PART] not in text:
        return 0
    low, high = SHORTEST_PART, len(secret) - start
    while low < high:
        middle = (low + high + 1) // 2
        if secret[start : start + middle] in text:
            low = middle
        else:
            high = middle - 1
    return low


class Redaction:
    """The secrets to mask in a set of texts (a result's strings, a log line): each spelling
    of forms(), and the parts of a secret split across any of the texts."""

    def __init__(self, secrets: Sequence[str], texts: Sequence[str], mask: str) -> None:
        self.mask = mask
        joined = "\0".join(texts)  # a part holds no NUL, so none spans two texts
        # Each spelling is looked for once in all the texts; most texts then need no scan.
        whole = {f.text for s in secrets for f in forms(s) if f.text in joined}
        self.spellings = sorted(whole, key=len, reverse=True)
        rest = self.apply(joined)  # a secret there whole may be split elsewhere too
        parts = {p for s in secrets for p in split_parts(s, rest) or ()}
        self.spellings = sorted(whole | parts, key=len, reverse=True)

    def apply(self, text: str) -> str:
        """text with every spelling found masked, longest first."""
        for spelling in self.spellings:
            if spelling in text:
                text = text.replace(spelling, self.mask)
        return text
