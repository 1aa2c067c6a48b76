"""`--targets FILE`: what a marketplace checks, one JSON object per line.

Each line names one target, in one of three forms:

- `{"plugin": "PATH"}`: a FengYu or ERP plugin folder, or a `.zip`/`.tar.gz` of one (a
  relative path is taken from the file's folder);
- `{"server": {...}}`: an MCP server as the MCP registry's `server.json` describes it, run
  from its npm or PyPI package (`"package": N` picks one of its `packages`, default the first
  with a stdio transport), with `"env"` giving values of the variables it declares;
- `{"mcpServer": {"command": ..., "args": [...], "env": {...}}, "name": NAME}`: a client
  configuration's `mcpServers` entry.

`"id"` names the target in reports, shards and comparisons across nights; without it the id
is derived from what stays the same: the plugin path as written, the server's registry name,
the entry's name. Two lines with one id are an error, as is anything else the file holds that
is not one of these; the message names the file, the line and the JSON pointer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from plugin_spec.json_types import JsonObject, loads

KINDS = ("plugin", "server", "mcpServer")
_ID = re.compile(r"^[A-Za-z0-9_.:@/+-]{1,200}$")


class TargetsError(ValueError):
    """The targets file cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Target:
    """One line of the targets file: its id, its kind, and what it names."""

    id: str
    kind: str  # one of KINDS
    line: int
    plugin: Path | None = None  # kind plugin: the folder or archive
    server: JsonObject = field(default_factory=dict)  # kind server: server.json
    package: int | None = None  # kind server: which of its packages
    entry: JsonObject = field(default_factory=dict)  # kind mcpServer: the entry
    env: dict[str, str] = field(default_factory=dict)  # kind server: values it declares


def load_targets(path: Path) -> list[Target]:
    """The targets of the file, in its order."""
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise TargetsError(f"{path}: cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise TargetsError(f"{path}: not UTF-8 text ({exc.reason})") from None
    targets: list[Target] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        target = _target(path, number, raw)
        if target.id in seen:
            raise TargetsError(
                f"{path}:{number} /id: {target.id!r} is the id of line {seen[target.id]} too: "
                "give each target an id of its own"
            )
        seen[target.id] = number
        targets.append(target)
    return targets


def _target(path: Path, number: int, raw: str) -> Target:
    where = f"{path}:{number}"
    try:
        data = loads(raw)
    except json.JSONDecodeError as exc:
        raise TargetsError(f"{where}: not a JSON object: {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, dict):
        raise TargetsError(f"{where} /: expected a JSON object, found {_kind(data)}")
    named = [kind for kind in KINDS if kind in data]
    if len(named) != 1:
        raise TargetsError(
            f"{where} /: expected exactly one of {', '.join(KINDS)}, found "
            f"{', '.join(named) or 'none'}"
        )
    kind = named[0]
    given_id = data.get("id")
    if given_id is not None and not (isinstance(given_id, str) and _ID.match(given_id)):
        raise TargetsError(f"{where} /id: {given_id!r} is not an id ({_ID.pattern})")
    if kind == "plugin":
        value = data["plugin"]
        if not isinstance(value, str) or not value:
            raise TargetsError(f"{where} /plugin: expected a path, found {_kind(value)}")
        return Target(
            given_id or value.rstrip("/"), kind, number, plugin=(path.parent / value).resolve()
        )
    if kind == "server":
        server = data["server"]
        server_name = server.get("name") if isinstance(server, dict) else None
        if not isinstance(server, dict) or not isinstance(server_name, str):
            raise TargetsError(f"{where} /server: expected a server.json object with a name")
        package = data.get("package")
        if package is not None and not (isinstance(package, int) and package >= 0):
            raise TargetsError(f"{where} /package: expected an index, found {package!r}")
        env = _strings(data.get("env", {}), f"{where} /env")
        return Target(
            given_id or server_name, kind, number, server=server, package=package, env=env
        )
    entry = data["mcpServer"]
    name = data.get("name")
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        raise TargetsError(f"{where} /mcpServer: expected an entry with a command")
    if not isinstance(name, str) and given_id is None:
        raise TargetsError(f"{where} /name: an mcpServer entry needs a name (or an id)")
    return Target(given_id or str(name), kind, number, entry=entry)


def _strings(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TargetsError(f"{where}: expected an object of strings")
    return dict(value)


def _kind(value: object) -> str:
    return json.dumps(value)[:80] if value is not None else "null"
