"""`--examples-file PATH`: argument sets the user knows to work, to seed each tool's search.

A tool that needs a real time zone, repository or workbook gets every generated call refused;
one good call from its author makes it exercised. The file is JSON, one key per tool name with
a list of argument objects, and optionally `setup`, calls made before any other (a stateful
server's `git_set_working_dir`), in order, each time the kit starts the process tools are
called in:

    {"get_current_time": [{"timezone": "Europe/Warsaw"}],
     "setup": [{"tool": "git_set_working_dir", "arguments": {"path": "/srv/repo"}}]}

A run of several targets shares the file: each takes the entries naming its own tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.sources import JsonLoadError, load_json_file

SETUP = "setup"


class ExamplesError(Exception):
    """The examples file is unreadable or malformed; the message names file and pointer."""


@dataclass(frozen=True)
class SetupCall:
    """One call to make before the others, and where the file gives it."""

    tool: str
    arguments: dict[str, Any]
    pointer: str


@dataclass(frozen=True)
class ToolExamples:
    """The file's argument sets by tool name, and its setup calls."""

    path: Path | None = None
    by_tool: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    setup: tuple[SetupCall, ...] = ()

    def of(self, tool: str) -> tuple[Any, ...]:
        """The tool's argument sets: its own, then those of its setup calls (known to work)."""
        setup = tuple(call.arguments for call in self.setup if call.tool == tool)
        return self.by_tool.get(tool, ()) + setup

    def pointer(self, tool: str) -> str:
        """Where the tool's examples are, as messages name them."""
        return f"{self.path} /{tool.replace('~', '~0').replace('/', '~1')}"

    def setup_for(self, tools: set[str]) -> list[SetupCall]:
        """The setup calls naming one of tools (a target's tools), in file order."""
        return [call for call in self.setup if call.tool in tools]


def load_examples(path: Path | None) -> ToolExamples:
    if path is None:
        return ToolExamples()
    try:
        data = load_json_file(path, str(path)).data
    except JsonLoadError as exc:
        raise ExamplesError(f"examples file {exc.message}") from None
    if not isinstance(data, dict):
        raise ExamplesError(f"examples file {path} /: expected an object of tool names")
    by_tool: dict[str, tuple[Any, ...]] = {}
    setup: list[SetupCall] = []
    for name, value in data.items():
        at = f"/{name.replace('~', '~0').replace('/', '~1')}"
        if not isinstance(value, list):
            raise ExamplesError(f"examples file {path} {at}: expected a list, got {value!r:.80}")
        if name == SETUP:
            setup = [_setup_call(path, f"{at}/{i}", entry) for i, entry in enumerate(value)]
            continue
        for index, arguments in enumerate(value):
            if not isinstance(arguments, dict):
                raise ExamplesError(
                    f"examples file {path} {at}/{index}: expected an argument object, "
                    f"got {arguments!r:.80}"
                )
        by_tool[name] = tuple(value)
    return ToolExamples(path, by_tool, tuple(setup))


def _setup_call(path: Path, at: str, entry: Any) -> SetupCall:
    if not (
        isinstance(entry, dict)
        and isinstance(entry.get("tool"), str)
        and isinstance(entry.get("arguments", {}), dict)
    ):
        raise ExamplesError(
            f"examples file {path} {at}: expected an object with a string 'tool' and an "
            f"'arguments' object, got {entry!r:.80}"
        )
    return SetupCall(entry["tool"], dict(entry.get("arguments", {})), at)
