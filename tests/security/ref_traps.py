"""Traps for a schema's refs: a file and a loopback URL that must never be read.

Each trap's target holds `{"type": "integer"}`, so a checker that did read it would judge
strings differently; beyond that, the file trap records every open of its path in this
process (an audit hook sees the kit run in-process, the host and the threads of both), and
the URL trap counts the requests its server answers.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.answering_server import answering_server

TARGET = json.dumps({"type": "integer"}).encode()


@dataclass
class FileTrap:
    """A schema file on disk, and the opens of it seen while the trap is set."""

    path: Path
    opened: list[str] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return self.path.as_uri()


_SET: list[FileTrap] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _SET:
        return
    if event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
        opened = os.fsdecode(args[0])
    elif event == "urllib.Request" and args and isinstance(args[0], str):
        opened = args[0]
    else:
        return
    for trap in _SET:
        if str(trap.path) in opened:
            trap.opened.append(f"{event} {opened}")


sys.addaudithook(_audit)  # hooks cannot be removed: this one does nothing while none is set


@contextmanager
def file_trap(folder: Path) -> Iterator[FileTrap]:
    """A schema file in folder whose opens (open() or urlopen of its file: URL) are recorded
    until the block ends."""
    path = folder / "trap.schema.json"
    path.write_bytes(TARGET)
    trap = FileTrap(path)
    _SET.append(trap)
    try:
        yield trap
    finally:
        _SET.remove(trap)


@dataclass
class UrlTrap:
    """A schema served on 127.0.0.1, and the paths of the requests that reached it."""

    base: str
    hits: list[str] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"


@contextmanager
def url_trap() -> Iterator[UrlTrap]:
    """A server on a free loopback port answering every GET with the target schema, stopped
    when the block ends."""
    hits: list[str] = []
    with answering_server(
        TARGET, "application/schema+json", lambda asked: hits.append(asked.path), name="url-trap"
    ) as port:
        yield UrlTrap(f"http://127.0.0.1:{port}", hits)
