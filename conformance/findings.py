"""What a check reports: one Finding per problem, located in a file."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any

NAMED_REQUIREMENT = re.compile(r"\(((?:FY|ERP|MCP)-[A-Z]+-\d{3})\)")
SHOWN_CHARS = 200
# What a terminal or a Markdown viewer would act on rather than show: C0 and C1 controls
# (ESC starts the sequences that erase lines and fake colours), DEL, the bidirectional
# overrides and isolates, and the Unicode line separators. Tab and newline are kept in text.
_CONTROLS = "\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069"
_UNPRINTABLE = re.compile(f"[{_CONTROLS}]")
_UNPRINTABLE_IN_NAME = re.compile(f"[{_CONTROLS}\\t\\n]")


def printable(text: str, *, one_line: bool = False) -> str:
    """text with what a terminal would act on written as escapes (\\x1b, \\u202e): a
    plugin's or server's words (stderr, a tool name, an error message) reach the kit's output,
    and must not erase lines or print a fake PASSED there. one_line escapes tab and newline
    too (a node id)."""
    pattern = _UNPRINTABLE_IN_NAME if one_line else _UNPRINTABLE
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


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

    def __post_init__(self) -> None:
        for name in ("message", "file", "pointer", "fix"):
            object.__setattr__(self, name, printable(getattr(self, name)))

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


class NotExercised(Exception):
    """Raised by a check whose tool calls were every one refused or answered with an error:
    nothing the tool does was examined, so the item is not a pass (a status of its own,
    `not-exercised`; a failure under --conformance-strict unless the baseline accepts it).

    last_error is how the latest refused call was answered, for the user to see why.
    """

    def __init__(self, reason: str, last_error: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.last_error = last_error
