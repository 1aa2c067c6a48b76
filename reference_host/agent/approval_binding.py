"""What an approval is bound to (spec: host.md#approval-by-effect): the tool as it was shown.

An approval is asked for one callback of the run's snapshot: one plugin at one version, from
one install, with one definition. Plugin callbacks are rebuilt whenever their plugin's row
changes (upgrade, reinstall, disable, enable, uninstall) and kept otherwise, so the tool is
unchanged exactly when the registry still holds that very callback under its name. When it
does not, the call is not run, and the reason names what changed, from the plugin's row now
and what the binding recorded when the approval was asked.

A tool of a mounted MCP server (tools.callbacks.MountedTool, owner `mcp:<server>`) has no
store row: its callback lives as long as the host, while its definition is the server's to
change at any time (a "rug pull": the tool approved is not the tool that runs). Its approval
is bound to the digest of the definition the server listed when it was mounted, which is
what the model was shown; it is refused when the server's latest listing of the tool says
otherwise, when asked and again before the call (the callback itself lists the server's
tools again once per turn and after `notifications/tools/list_changed`, and refuses a changed
definition whatever the approval: mcp/mount.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reference_host.storage.database import Store
from reference_host.support.quoting import shortened
from reference_host.tools.callbacks import MountedTool, ToolCallback
from reference_host.tools.snapshot import ToolRegistry

BUILTIN = "builtin"


@dataclass(frozen=True)
class Binding:
    """The tool an approval was asked for: its callback, and its plugin's version, install
    (folder and revision) and definition digest at that moment (for a mounted MCP tool: the
    server's version and the digest of its definition as listed at mount, no install)."""

    name: str
    callback: ToolCallback
    owner: str
    version: str | None
    root: str | None
    revision: int | None
    digest: str


class ApprovalBinder:
    """Binds approvals to the tool they show, and tells what changed since."""

    def __init__(self, registry: ToolRegistry, store: Store) -> None:
        self._registry = registry
        self._store = store

    def bind(self, name: str, callback: ToolCallback) -> Binding | str:
        """The binding of an approval of callback (known to the run as name), or why none
        can be asked: the plugin changed after the run's snapshot was taken."""
        owner = callback.owner
        if isinstance(callback, MountedTool):
            return _bind_mounted(name, callback, self._registry.snapshot().get(name))
        if owner == BUILTIN:
            return Binding(name, callback, owner, None, None, None, digest(callback))
        row = self._store.plugin(owner)
        if row is None or self._registry.snapshot().get(name) is not callback:
            return f"{owner} changed after this turn began"
        return Binding(
            name, callback, owner, row.version, str(row.root), row.revision, digest(callback)
        )

    def changed(self, bound: Binding) -> str | None:
        """What changed of the bound tool since the approval was asked, or None."""
        now = self._registry.snapshot().get(bound.name)
        if isinstance(bound.callback, MountedTool):
            return _mounted_changed(bound, now)
        if now is bound.callback:
            return None
        owner, name = bound.owner, bound.name
        row = self._store.plugin(owner) if owner != BUILTIN else None
        version = shortened(bound.version or "")
        if row is None:
            return f"{owner} was uninstalled" if owner != BUILTIN else f"{name} changed"
        if not row.enabled:
            return f"{owner} was disabled"
        if row.version != bound.version:
            return f"{owner} was upgraded from {version} to {shortened(row.version)}"
        if now is None or now.owner != owner:
            return f"{owner} {version} no longer offers {name}"
        if digest(now) != bound.digest:
            return f"the definition of {name} ({owner} {version}) changed"
        if str(row.root) != bound.root:
            return f"{owner} {version} was installed again"
        return f"{owner} {version} was disabled and enabled again"


def remedy(callback: ToolCallback) -> str:
    """What to do after a refused approval. A plugin's tool is bound anew when asked again;
    a mounted tool keeps the definition it was mounted with (what the model was shown), so
    asking again cannot help until the host mounts its server again."""
    if isinstance(callback, MountedTool):
        return f"restart the host to mount the new definition of {callback.owner}"
    return "ask again"


def _bind_mounted(name: str, callback: MountedTool, now: ToolCallback | None) -> Binding | str:
    """The binding of a mounted tool to the definition its server listed at mount, or why
    none can be asked: the server has changed (or dropped) that definition since."""
    owner = callback.owner
    if now is not callback:
        return f"{owner} changed after this turn began"
    relisted = _relisted(name, callback, callback.mounted_digest, " after it was mounted")
    if relisted is not None:
        return relisted
    version = callback.server_version or None
    return Binding(name, now, owner, version, None, None, callback.mounted_digest)


def _mounted_changed(bound: Binding, now: ToolCallback | None) -> str | None:
    """What changed of a bound mounted tool: its server's listing of it, against the digest
    the approval was bound to."""
    owner, name = bound.owner, bound.name
    callback = bound.callback
    assert isinstance(callback, MountedTool)
    if now is not callback:
        return f"{owner} no longer offers {name}"
    return _relisted(name, callback, bound.digest)


def _relisted(name: str, callback: MountedTool, expected: str, since: str = "") -> str | None:
    """Why the server's listing of the tool no longer matches the definition of digest
    expected: it lists the tool no more, or lists another definition (said with since);
    None where it matches."""
    listed = callback.listed_digest()
    if listed is None:
        return f"{callback.owner} no longer lists {name}"
    if listed != expected:
        return f"{callback.owner} changed the definition of {name}{since}"
    return None


def digest(callback: ToolCallback) -> str:
    """sha256 of the tool as the model and the approval show it: name, description, input
    schema and effect."""
    definition = callback.definition
    shown = {"name": definition.name, "description": definition.description}
    shown["effect"] = callback.effect.value
    try:
        schema = json.dumps(_plain(definition.input_schema), sort_keys=True, ensure_ascii=False)
    except (RecursionError, TypeError, ValueError):
        # a schema nested too deep to write (a plugin installed without the kit): the
        # digest goes without it; the callback's identity still tells any change
        schema = ""
    text = json.dumps({**shown, "inputSchema": schema}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any) -> Any:
    """value with every mapping a dict, so that json can write it."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
