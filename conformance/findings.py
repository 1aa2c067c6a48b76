"""What a check reports: one Finding per problem, located in a file."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
    """Raised by a check that cannot run on this plugin (the item is skipped with the reason)."""
