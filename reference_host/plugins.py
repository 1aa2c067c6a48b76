"""Plugin lifecycle (install, upgrade, enable, disable, uninstall), persisted in SQLite.

Install is all-or-nothing: the folder is validated (with the conformance kit's own checks),
its tool names are checked against everything the host offers, its files are copied into
the host's data folder, and only then is it recorded, in one transaction. A rejected plugin
leaves no row and no files. Installing an installed id is an upgrade.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reference_host.erp import is_erp_folder, read_erp_manifest
from reference_host.manifests import model_tool_names
from reference_host.registry import ToolRegistry
from reference_host.sources_json import JsonFileError, read_json_object
from reference_host.store import PluginRow, Store

PLUGIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class PluginError(Exception):
    """A lifecycle request the host refuses; `problems` lists each reason.

    kind: "invalid" (the plugin itself is wrong), "conflict" (it clashes with what is
    installed: tool names, tool codes) or "not_found" (no such plugin).
    """

    def __init__(
        self, message: str, problems: list[str] | None = None, kind: str = "invalid"
    ) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []
        self.kind = kind


@dataclass(frozen=True)
class ValidationReport:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


Validator = Callable[[Path], ValidationReport]


@dataclass(frozen=True)
class PluginInfo:
    """A plugin as the plugin list shows it."""

    id: str
    name: str
    version: str
    profile: str
    enabled: bool
    supports_ai: bool
    tools: list[str]
    root: str

    @classmethod
    def of(cls, row: PluginRow) -> PluginInfo:
        tools = model_tool_names(row.manifest)
        return cls(
            row.id,
            str(row.manifest.get("name", row.id)),
            row.version,
            row.profile,
            row.enabled,
            bool(tools),
            tools,
            str(row.root),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "profile": self.profile,
            "enabled": self.enabled,
            "supportsAi": self.supports_ai,
            "tools": self.tools,
        }


class PluginService:
    def __init__(
        self,
        store: Store,
        registry: ToolRegistry,
        plugins_dir: Path,
        validator: Validator | None,
    ) -> None:
        self._store = store
        self._registry = registry
        self._dir = plugins_dir
        self._validator = validator
        self._dir.mkdir(parents=True, exist_ok=True)

    def list(self) -> list[PluginInfo]:
        return [PluginInfo.of(row) for row in self._store.plugins()]

    def get(self, plugin_id: str) -> PluginInfo:
        return PluginInfo.of(self._require(plugin_id))

    def install(self, source: Path | str) -> PluginInfo:
        """Install (or upgrade to) the plugin in source; nothing changes if it is refused."""
        source = Path(source).resolve()
        if not source.is_dir():
            raise PluginError(f"{source} is not a folder")
        if self._validator is not None:
            report = self._validator(source)
            if report.errors:
                raise PluginError(f"{source.name} does not pass validation", report.errors)
        manifest = _read_manifest(source)
        plugin_id = manifest["id"]
        previous = self._store.plugin(plugin_id)
        enabled = previous.enabled if previous else True
        erp_codes = [str(t.get("toolCode")) for t in manifest.get("erpTools", [])]
        self._check_ownership(plugin_id, erp_codes)
        if enabled:
            self._check_names(plugin_id, manifest)
        _refuse_escaping_links(source)
        # The folder name is ours alone: ids and versions come from the plugin and must not
        # choose where files are written.
        target = self._dir / plugin_id / uuid.uuid4().hex[:12]
        staging = self._dir / f".staging-{uuid.uuid4().hex}"
        try:
            shutil.copytree(source, staging)  # symlinks inside are copied as their targets
            target.parent.mkdir(parents=True, exist_ok=True)
            staging.replace(target)
            with self._store.transaction() as db:
                self._store.put_plugin(
                    db,
                    plugin_id=plugin_id,
                    profile=_profile(manifest),
                    version=str(manifest.get("version", "")),
                    root=target,
                    manifest=manifest,
                    enabled=enabled,
                )
                self._store.own_tools(db, plugin_id, erp_codes)
                self._store.set_tools_active(db, plugin_id, enabled)
        except (OSError, shutil.Error) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(target, ignore_errors=True)
            raise PluginError(f"{source} cannot be copied: {exc}") from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(target, ignore_errors=True)
            raise
        if previous is not None and previous.root != target:
            shutil.rmtree(previous.root, ignore_errors=True)
        return self.get(plugin_id)

    def enable(self, plugin_id: str) -> PluginInfo:
        row = self._require(plugin_id)
        self._check_names(plugin_id, row.manifest)
        with self._store.transaction() as db:
            self._store.set_enabled(db, plugin_id, True)
            self._store.set_tools_active(db, plugin_id, True)
        return self.get(plugin_id)

    def disable(self, plugin_id: str) -> PluginInfo:
        self._require(plugin_id)
        with self._store.transaction() as db:
            self._store.set_enabled(db, plugin_id, False)
            self._store.set_tools_active(db, plugin_id, False)
        return self.get(plugin_id)

    def uninstall(self, plugin_id: str) -> None:
        row = self._require(plugin_id)
        with self._store.transaction() as db:
            self._store.set_tools_active(db, plugin_id, False)
            self._store.delete_plugin(db, plugin_id)
        shutil.rmtree(row.root, ignore_errors=True)

    def remove_orphans(self) -> None:
        """Delete copied folders no row points at (left by a crash during an install)."""
        known = {row.root for row in self._store.plugins()}
        for folder in self._dir.glob("*/*"):
            if folder.is_dir() and folder not in known:
                shutil.rmtree(folder, ignore_errors=True)
        for staging in self._dir.glob(".staging-*"):
            shutil.rmtree(staging, ignore_errors=True)

    def create_manual_tool(self, code: str) -> None:
        """Register an ERP toolCode created by hand, outside any plugin (SPEC E4)."""
        known = self._store.tool_owner(code)
        if known is not None:
            raise PluginError(
                f"toolCode {code!r} already exists ({_owner_text(known[0])})", kind="conflict"
            )
        with self._store.transaction() as db:
            self._store.own_tools(db, None, [code])

    def _check_ownership(self, plugin_id: str, codes: list[str]) -> None:
        owned = self._store.tool_codes()
        clashes = [
            f"toolCode {code!r} is already owned by {_owner_text(owned[code][0])}"
            for code in codes
            if code in owned and owned[code][0] != plugin_id
        ]
        if clashes:
            raise PluginError(f"{plugin_id}: tool codes taken", clashes, "conflict")

    def _check_names(self, plugin_id: str, manifest: dict[str, Any]) -> None:
        offered = {name: "the host's built-in tools" for name in self._registry.builtin_names}
        for row in self._store.plugins(enabled_only=True):
            if row.id != plugin_id:
                for name in model_tool_names(row.manifest):
                    offered.setdefault(name, f"plugin {row.id}")
        clashes = [
            f"tool name {name!r} is already offered by {offered[name]}"
            for name in model_tool_names(manifest)
            if name in offered
        ]
        if clashes:
            raise PluginError(f"{plugin_id}: tool names clash", clashes, "conflict")

    def _require(self, plugin_id: str) -> PluginRow:
        row = self._store.plugin(plugin_id)
        if row is None:
            raise PluginError(f"no plugin {plugin_id!r} is installed", kind="not_found")
        return row


def _profile(manifest: dict[str, Any]) -> str:
    if "erpTools" in manifest:
        return "erp"
    return "fengyu-v1" if manifest.get("schemaVersion") == 1 else "fengyu-v2"


def _owner_text(owner: str | None) -> str:
    return f"plugin {owner}" if owner else "a tool created manually"


def _read_manifest(source: Path) -> dict[str, Any]:
    """The plugin's manifest (FengYu) or its tool files gathered into one (ERP)."""
    try:
        manifest = (
            read_erp_manifest(source)
            if is_erp_folder(source)
            else read_json_object(source / "manifest.json")
        )
    except JsonFileError as exc:
        raise PluginError(str(exc)) from None
    plugin_id = manifest.get("id")
    if not isinstance(plugin_id, str) or not PLUGIN_ID.fullmatch(plugin_id) or ".." in plugin_id:
        raise PluginError(f"{source}: plugin id {plugin_id!r} is not a plain name")
    return manifest


def _refuse_escaping_links(source: Path) -> None:
    """A symlink out of the plugin folder (or a loop) would copy files the plugin does not own."""
    for path in source.rglob("*"):
        if path.is_symlink():
            try:
                inside = path.resolve(strict=True).is_relative_to(source)
            except (OSError, RuntimeError):
                inside = False
            if not inside:
                raise PluginError(f"{path} links outside the plugin folder")
