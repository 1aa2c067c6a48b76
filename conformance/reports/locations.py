"""Where a finding is, as a file of the repository the run was started in.

A FengYu or ERP finding names a file of its plugin folder (manifest.json, a tool file); an MCP
finding names its server and where the server was selected, `label (config file)` or
`label (--mcp-command)`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from plugin_spec.json_types import JsonMapping

_SELECTED_IN = re.compile(r"\((?P<file>[^()]+)\)$")


@dataclass(frozen=True)
class Place:
    """A finding's file relative to the run's folder (a file: URI when outside it), and line."""

    file: str
    line: int | None
    inside: bool


def place(record: JsonMapping, finding: JsonMapping, run_dir: str) -> Place | None:
    """The finding's file, if it names one that exists (None: a server given by command)."""
    named = str(finding.get("file") or "")
    root = Path(str(record.get("plugin_dir") or run_dir))
    candidates = [root / named]
    if (selected := _SELECTED_IN.search(named)) is not None:
        candidates.append(Path(run_dir, selected["file"]))
    for candidate in candidates:
        if named and candidate.is_file():
            path = candidate.resolve()
            base = Path(run_dir).resolve()
            inside = path.is_relative_to(base)
            shown = path.relative_to(base).as_posix() if inside else path.as_uri()
            line = finding.get("line")
            return Place(shown, line if isinstance(line, int) else None, inside)
    return None
