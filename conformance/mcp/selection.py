"""Which servers a run checks: --mcp-command, or the stdio servers of an --mcp-config file
(the `mcpServers` JSON Claude Desktop and Cursor write, or VS Code's `servers`), narrowed by
--mcp-server (spec: mcp.md#selecting-servers).

A config's servers run in the config file's folder unless they name a `cwd`; a command runs
in the folder pytest ran in. A config the kit cannot use is a usage error naming the file,
the JSON pointer and the value found.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from conformance.findings import shown
from conformance.mcp.server import McpServer
from plugin_spec.json_types import JsonValue
from reference_host.mcp.config import McpConfigError, escape, read_document, server_entry

LAUNCHERS = frozenset(
    {"python", "python3", "node", "npx", "uvx", "uv", "bunx", "deno", "pipx", "bun", "pnpm"}
)
_ENTRY_POINTS = frozenset({"index", "main", "__main__"})
_BUILD_FOLDERS = frozenset({"dist", "build", "lib", "src", "bin", "out", "esm", "cjs"})
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


class SelectionError(ValueError):
    """A server selection the kit cannot run."""


def selected_servers(
    commands: tuple[str, ...], configs: tuple[str, ...], names: tuple[str, ...], base: Path
) -> list[McpServer]:
    """The servers of a run, in the order given: each --mcp-command, then each config's."""
    servers = [_from_command(raw, base) for raw in commands]
    for raw in configs:
        servers += _from_config(base / raw, raw, names)
    if names and not configs:
        raise SelectionError("--mcp-server names a server of an --mcp-config file; none given")
    return servers


def command_name(argv: list[str], folder: Path | None = None) -> str:
    """A server's name from its command: the package or script a launcher runs, else the
    program, without folder, npm scope, version or extension. A script with an entry
    point's name (dist/index.js) is named by the package folder it is in, else by the
    folder the command runs in."""
    words = argv[1:] if Path(argv[0]).name in LAUNCHERS else argv
    if Path(argv[0]).name == "uv" and words[:1] == ["run"]:
        words = words[1:]
    chosen = Path(
        re.sub(r"(?<=.)@[^/]*$", "", next((w for w in words if not w.startswith("-")), argv[0]))
    )
    name = re.sub(r"\.(py|js|mjs|cjs|ts|sh|rb|pl|jar|exe)$", "", chosen.name)
    if name in _ENTRY_POINTS:
        named = [p.name for p in chosen.parents if p.name and p.name not in _BUILD_FOLDERS]
        name = named[0] if named else (folder.name if folder else name)
    return _NOT_IN_NAME.sub("-", name).strip("-") or "server"


def _from_command(raw: str, base: Path) -> McpServer:
    try:
        argv = shlex.split(raw)
    except ValueError as exc:
        raise SelectionError(f"--mcp-command {raw!r}: {exc}") from None
    if not argv:
        raise SelectionError("--mcp-command: the command is empty")
    return McpServer(
        name=command_name(argv, base.resolve()),
        argv=tuple(argv),
        root=base.resolve(),
        env={},
        selection=(f"--mcp-command={raw}",),
        source="--mcp-command",
    )


def _from_config(path: Path, raw: str, names: tuple[str, ...]) -> list[McpServer]:
    try:
        data = read_document(path)
    except McpConfigError as exc:
        raise SelectionError(f"--mcp-config {exc}") from None
    key = "mcpServers" if isinstance(data, dict) and "mcpServers" in data else "servers"
    servers = data.get(key) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise SelectionError(
            f"--mcp-config {path}: /{key}: must be an object of servers, found {shown(servers)}"
        )
    unknown = [n for n in names if n not in servers]
    if unknown:
        known = ", ".join(servers) or "none"
        raise SelectionError(
            f"--mcp-server {', '.join(unknown)}: not in {path} /{key} (it has: {known})"
        )
    chosen = [n for n in servers if not names or n in names]
    return [
        s
        for n in chosen
        if (s := _entry(path, key, n, servers[n], explicit=bool(names))) is not None
    ]


def _entry(path: Path, key: str, name: str, entry: JsonValue, explicit: bool) -> McpServer | None:
    """One stdio entry, checked as the reference host checks it (server_entry); another
    transport is left out, or refused when --mcp-server names it."""
    if isinstance(entry, dict) and (entry.get("type", "stdio") != "stdio" or "url" in entry):
        if explicit:
            where = f"--mcp-config {path}: /{key}/{escape(name)}"
            raise SelectionError(f"{where}: not a stdio server (the kit checks stdio servers)")
        return None
    try:
        config = server_entry(path, path.parent.resolve(), name, entry, key)
    except McpConfigError as exc:
        raise SelectionError(f"--mcp-config {exc}") from None
    if not config.cwd.is_dir():
        where = f"--mcp-config {path}: /{key}/{escape(name)}/cwd"
        raise SelectionError(f"{where}: {config.cwd} is not a folder")
    return McpServer(
        name=_NOT_IN_NAME.sub("-", name).strip("-") or "server",
        argv=(config.command, *config.args),
        root=config.cwd,
        env=config.env,
        roots=config.roots,
        selection=("--mcp-config", str(path.resolve()), "--mcp-server", name),
        source=str(path),
    )
