"""What a check reports: one Finding per problem, located in a file."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

SHOWN_CHARS = 200


@dataclass(frozen=True)
class Finding:
    """One problem with a plugin, tied to the requirement it breaks and the value at fault.

    fix is what to change for this kind of problem; empty means the requirement's own hint,
    which is only right when a requirement can fail in one way.
    """

    requirement: str
    message: str
    file: str
    pointer: str = ""
    line: int | None = None
    fix: str = ""

    @property
    def location(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where} {self.pointer}" if self.pointer else where

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A found value as JSON text for a message, cut to limit characters so that a huge value
    cannot drown the report (the cut says how long the whole was)."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return cut(text, limit)


def cut(text: str, limit: int = SHOWN_CHARS) -> str:
    """Text (a reply body, a line) cut to limit characters, saying how long the whole was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class NotApplicable(Exception):
    """Raised by a check that cannot run on this plugin (the item is skipped with the reason)."""
