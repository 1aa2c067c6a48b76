"""What a check reports: one Finding per problem, located in a file."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

NAMED_REQUIREMENT = re.compile(r"\(((?:FY|ERP)-[A-Z]+-\d{3})\)")


@dataclass(frozen=True)
class Finding:
    """One problem with a plugin, tied to the requirement it breaks and the value at fault."""

    requirement: str
    message: str
    file: str
    pointer: str = ""
    line: int | None = None

    @property
    def location(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where} {self.pointer}" if self.pointer else where

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
