"""The `mcpServers` file Claude Desktop, Cursor and VS Code write, read strictly.

`{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}, "cwd": "..."}}}`: a
mistake in it is found when the host starts, not on the first call, and the error names the
file, the JSON pointer of the bad value and the value found, so it can be fixed without
guessing. A server runs in the file's folder unless `cwd` says otherwise (relative to it).
`roots`, the project's addition, lists folders (relative to the file's folder) the server may
write in the sandbox besides the folders its arguments name (reference_host/mcp/launch.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Keys the editors' files carry that a stdio server does not use (VS Code's "type": "stdio",
# Claude Desktop's "disabled"...) are ignored; these are the ones read.
KNOWN_KEYS = ("command", "args", "env", "cwd", "roots")
SHOWN_CHARS = 80


class McpConfigError(ValueError):
    """A config file the host cannot mount: why, with the file and the place in it."""


@dataclass(frozen=True)
class ServerConfig:
    """One server entry: its name (the key), the command line, extra environment, folder."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = Path(".")
    disabled: bool = False
    roots: tuple[Path, ...] = ()


def read_config(path: Path) -> list[ServerConfig]:
    """The servers the file lists, in its order; McpConfigError when it is not a valid file."""
    servers = _member(path, read_document(path), "", "mcpServers", dict, "an object of servers")
    folder = path.parent.resolve()
    return [server_entry(path, folder, name, entry) for name, entry in servers.items()]


def read_document(path: Path) -> Any:
    """The file's JSON; McpConfigError naming the file when it cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise McpConfigError(f"{path}: is not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{path}: is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None


def server_entry(
    path: Path, folder: Path, name: str, entry: Any, servers: str = "mcpServers"
) -> ServerConfig:
    """One entry of the file's servers object (the key `servers` names: VS Code's is
    `servers`), checked; it runs in folder unless its cwd says otherwise."""
    at = f"/{servers}/{escape(name)}"
    if not name:
        raise McpConfigError(f"{path}: {at}: a server needs a non-empty name")
    if not isinstance(entry, dict):
        raise McpConfigError(f"{path}: {at}: must be an object, found {_shown(entry)}")
    command = _member(path, entry, at, "command", str, "a non-empty string")
    if not command.strip():
        raise McpConfigError(f"{path}: {at}/command: must be a non-empty string, found ''")
    args = _strings(path, entry, at, "args", "strings", "a string")
    env = entry.get("env", {})
    if not isinstance(env, dict):
        raise McpConfigError(f"{path}: {at}/env: must be an object of strings, found {_shown(env)}")
    for key, value in env.items():
        if not isinstance(value, str):
            where = f"{at}/env/{escape(key)}"
            raise McpConfigError(f"{path}: {where}: must be a string, found {_shown(value)}")
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise McpConfigError(f"{path}: {at}/cwd: must be a non-empty string, found {_shown(cwd)}")
    roots = _strings(path, entry, at, "roots", "folders", "a folder's path", empty=False)
    return ServerConfig(
        name,
        command,
        tuple(args),
        dict(env),
        (folder / Path(cwd).expanduser()).resolve() if cwd else folder,
        entry.get("disabled") is True,
        tuple((folder / Path(r).expanduser()).resolve() for r in roots),
    )


def _strings(
    path: Path,
    entry: dict[str, Any],
    at: str,
    key: str,
    items: str,
    item: str,
    *,
    empty: bool = True,
) -> list[str]:
    """entry[key] (none when absent): an array of strings, each non-empty unless empty; the
    error names the array (an array of items) or the string (item) that is not."""
    values = entry.get(key, [])
    if not isinstance(values, list):
        where = f"{at}/{key}"
        raise McpConfigError(
            f"{path}: {where}: must be an array of {items}, found {_shown(values)}"
        )
    for index, value in enumerate(values):
        if not isinstance(value, str) or not (value or empty):
            where = f"{at}/{key}/{index}"
            raise McpConfigError(f"{path}: {where}: must be {item}, found {_shown(value)}")
    return values


def _member(path: Path, parent: Any, at: str, key: str, kind: type, wanted: str) -> Any:
    """parent[key], which must be of kind; the error names where it is missing or wrong."""
    if not isinstance(parent, dict):
        raise McpConfigError(f"{path}: {at or '/'}: must be an object, found {_shown(parent)}")
    if key not in parent:
        raise McpConfigError(f"{path}: {at}/{key}: is missing (it must be {wanted})")
    value = parent[key]
    if not isinstance(value, kind):
        raise McpConfigError(f"{path}: {at}/{key}: must be {wanted}, found {_shown(value)}")
    return value


def escape(token: str) -> str:
    """A key as a JSON pointer token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}..."
