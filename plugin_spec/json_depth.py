"""How deep a JSON text nests, measured on the text without recursion.

Python's json module, jsonschema and the kit's own walks all recurse once per level, so a
deeply nested file would end in a RecursionError somewhere inside a check. The kit measures
the text first and refuses a file nested deeper than it can check, naming where.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# A JSON string (as the lexer sees it) or one structural character; whitespace and scalars
# between them do not matter for nesting.
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]')


@dataclass(frozen=True)
class TooDeep:
    """The first container that opens one level past the limit: its path and text offset."""

    tokens: tuple[str | int, ...]
    offset: int


def too_deep(text: str, limit: int) -> TooDeep | None:
    """Where text first nests deeper than limit containers, or None when it does not."""
    # One entry per open container: whether it is an object, and its current key or index.
    open_: list[tuple[bool, str | int]] = []
    last_string = ""
    for match in TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            if len(open_) == limit:
                return TooDeep(tuple(position for _, position in open_), match.start())
            open_.append((token == "{", "" if token == "{" else 0))
        elif token in ("]", "}"):
            if open_:
                open_.pop()
        elif token == "," and open_ and not open_[-1][0]:
            open_[-1] = (False, int(open_[-1][1]) + 1)
        elif token == ":" and open_ and open_[-1][0]:
            open_[-1] = (True, last_string)
        elif token.startswith('"'):
            last_string = _decoded(token)
    return None


def _decoded(token: str) -> str:
    """A string token's value; its raw text when its escapes are not valid JSON."""
    try:
        decoded: str = json.loads(token)  # a string token decodes to a str
    except ValueError:
        return token[1:-1]
    return decoded
