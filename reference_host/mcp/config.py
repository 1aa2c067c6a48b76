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
    args = entry.get("args", [])
    if not isinstance(args, list):
        raise McpConfigError(
            f"{path}: {at}/args: must be an array of strings, found {_shown(args)}"
        )
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            raise McpConfigError(
                f"{path}: {at}/args/{index}: must be a string, found {_shown(arg)}"
            )
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
    roots = entry.get("roots", [])
    if not isinstance(roots, list):
        raise McpConfigError(
            f"{path}: {at}/roots: must be an array of folders, found {_shown(roots)}"
        )
    for index, root in enumerate(roots):
        if not isinstance(root, str) or not root:
            where = f"{at}/roots/{index}"
            raise McpConfigError(f"{path}: {where}: must be a folder's path, found {_shown(root)}")
    return ServerConfig(
        name,
        command,
        tuple(args),
        dict(env),
        (folder / Path(cwd).expanduser()).resolve() if cwd else folder,
        entry.get("disabled") is True,
        tuple((folder / Path(r).expanduser()).resolve() for r in roots),
    )


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
