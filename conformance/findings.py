"""What a check reports: one Finding per problem, located in a file."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any

NAMED_REQUIREMENT = re.compile(r"\(((?:FY|ERP)-[A-Z]+-\d{3})\)")
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
    """Raised by a check that cannot run on this plugin (the item is skipped with the reason).

    blocked_by names the requirements whose failure keeps the check from running, so a report
    tells "nothing to check here" apart from "skipped because of another failure". Without
    it, the requirements a reason names in parentheses, as in "(FY-WRK-001)", are taken.
    """

    def __init__(self, reason: str, blocked_by: tuple[str, ...] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.blocked_by = named_requirements(reason) if blocked_by is None else blocked_by


def named_requirements(reason: str) -> tuple[str, ...]:
    """The requirement ids a skip reason names in parentheses, in order, once each."""
    return tuple(dict.fromkeys(NAMED_REQUIREMENT.findall(reason)))
