"""Plugin lifecycle (install, upgrade, enable, disable, uninstall), persisted in SQLite.

Install is all-or-nothing and has two steps. `stage` validates the folder (with the
conformance kit's own checks) and copies it to a staging folder: the slow part, which changes
no state. `commit` then checks tool names and codes against everything the host offers,
moves the copy into place and records it in one transaction. A rejected plugin leaves no row
and no files. Installing an installed id is an upgrade; the replaced version's folder is
left for `remove_unused`, because a worker may still be running from it.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import semver

from plugin_spec.erp_decls import erp_decls, is_erp_folder, read_erp_manifest
from plugin_spec.fengyu_decls import model_tool_names, tool_decls
from plugin_spec.json_files import JsonFileError, read_json_object
from plugin_spec.json_types import JsonObject, as_array, as_object
from reference_host.plugins.install_copy import UnsafeEntry, copy_plain_tree, verify_plain_tree
from reference_host.storage.database import PluginRow, Store
from reference_host.support.quoting import quoted
from reference_host.tools.snapshot import ToolRegistry

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
class Staged:
    """A validated plugin copied to a staging folder, waiting for `commit`."""

    source: Path
    folder: Path
    manifest: JsonObject
    downgrade: bool = False  # an older version may replace the installed one

    @property
    def plugin_id(self) -> str:
        return str(self.manifest["id"])


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

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "profile": self.profile,
            "enabled": self.enabled,
            "supportsAi": self.supports_ai,
            "tools": [*self.tools],
        }


class PluginService:
    """The lifecycle on the store and the plugins folder.

    Each step that reads state and then writes it (commit, enable, disable, unregister, and
    choosing folders to delete) holds one lock, so a concurrent step cannot be undone by a
    stale read; the copy in `stage` runs outside it.
    """

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
        self._lock = threading.RLock()
        self._dir.mkdir(parents=True, exist_ok=True)

    def list(self) -> list[PluginInfo]:
        return [PluginInfo.of(row) for row in self._store.plugins()]

    def get(self, plugin_id: str) -> PluginInfo:
        return PluginInfo.of(self._require(plugin_id))

    def install(self, source: Path | str, downgrade: bool = False) -> PluginInfo:
        """Install (or upgrade to) the plugin in source, for a caller with no worker running
        from the old version; nothing changes if it is refused."""
        staged = self.stage(source, downgrade)
        try:
            info, previous = self.commit(staged)
        finally:
            self.discard(staged)
        self.remove_unused(info.id, previous)
        return info

    def stage(self, source: Path | str, downgrade: bool = False) -> Staged:
        """Validate source and copy it to a staging folder; no state changes.

        The clash checks run here too, so a refused plugin is not copied first; `commit`
        repeats them against the state it writes to. downgrade: an older version than the
        installed one may replace it (else it is refused, naming both versions).
        """
        source = _resolve(source)
        try:
            is_folder = source.is_dir()
        except OSError as exc:  # ENAMETOOLONG, EACCES: is_dir() raises all but "not there"
            raise PluginError(f"{quoted(source)} is not a usable path: {exc.strerror}") from None
        if not is_folder:
            raise PluginError(f"{quoted(source)} is not a folder")
        if self._validator is not None:
            report = self._validator(source)
            if report.errors:
                raise PluginError(f"{source.name} does not pass validation", report.errors)
        manifest = _read_manifest(source)
        self._admit(manifest, self._store.plugin(str(manifest["id"])), downgrade)
        # the copy, not a check before it, refuses links: one renamed into place after a
        # check would be copied as the file it points at
        staging = self._dir / f".staging-{uuid.uuid4().hex}"
        try:
            copy_plain_tree(source, staging)
            verify_plain_tree(staging)
            if _read_manifest(staging) != manifest:
                raise UnsafeEntry(f"{source}: its manifest changed while it was copied")
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, UnsafeEntry):
                raise PluginError(f"{source.name} cannot be installed: {exc}") from None
            if isinstance(exc, OSError):
                raise PluginError(f"{source} cannot be copied: {exc}") from None
            raise
        return Staged(source, staging, manifest, downgrade)

    def commit(self, staged: Staged) -> tuple[PluginInfo, Path | None]:
        """Move the staged copy into place and record it; returns the plugin and the folder
        of the version it replaced (left in place: see `remove_unused`).

        The enabled flag an upgrade keeps is read under the lock that writes it back, so a
        disable committed while the copy ran stays in force.
        """
        plugin_id, manifest = staged.plugin_id, staged.manifest
        # The folder name is ours alone: ids and versions come from the plugin and must not
        # choose where files are written.
        target = self._dir / plugin_id / uuid.uuid4().hex[:12]
        with self._lock:
            previous = self._store.plugin(plugin_id)
            enabled = self._admit(manifest, previous, staged.downgrade)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                staged.folder.replace(target)
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
                    self._store.own_tools(db, plugin_id, _erp_codes(manifest))
                    self._store.set_tools_active(db, plugin_id, enabled)
            except OSError as exc:
                shutil.rmtree(target, ignore_errors=True)
                raise PluginError(f"{staged.source} cannot be installed: {exc}") from None
            except BaseException:
                shutil.rmtree(target, ignore_errors=True)
                raise
        replaced = previous.root if previous is not None and previous.root != target else None
        return self.get(plugin_id), replaced

    def discard(self, staged: Staged) -> None:
        """Delete a staged copy that was not committed (a committed one has moved away)."""
        shutil.rmtree(staged.folder, ignore_errors=True)

    def enable(self, plugin_id: str) -> PluginInfo:
        with self._lock:
            row = self._require(plugin_id)
            self._check_names(plugin_id, row.manifest)
            with self._store.transaction() as db:
                self._store.set_enabled(db, plugin_id, True)
                self._store.set_tools_active(db, plugin_id, True)
        return self.get(plugin_id)

    def disable(self, plugin_id: str) -> PluginInfo:
        with self._lock:
            self._require(plugin_id)
            with self._store.transaction() as db:
                self._store.set_enabled(db, plugin_id, False)
                self._store.set_tools_active(db, plugin_id, False)
        return self.get(plugin_id)

    def uninstall(self, plugin_id: str) -> None:
        """Uninstall, for a caller with no worker running from the plugin's folder."""
        self.remove_unused(plugin_id, self.unregister(plugin_id))

    def unregister(self, plugin_id: str) -> Path:
        """Delete the plugin's row (its tool codes go inactive); returns its folder, left in
        place until its worker has stopped (see `remove_unused`)."""
        with self._lock:
            row = self._require(plugin_id)
            with self._store.transaction() as db:
                self._store.set_tools_active(db, plugin_id, False)
                self._store.delete_plugin(db, plugin_id)
        return row.root

    def remove_unused(self, plugin_id: str, previous: Path | None = None) -> None:
        """Delete the plugin's folders its row does not point at (all of them once it is
        uninstalled), and previous, a folder its row pointed at before; call it once no worker
        runs from them. The emptied <id> folder goes too."""
        folder = self._dir / plugin_id
        with self._lock:
            row = self._store.plugin(plugin_id)
            current = row.root if row is not None else None
            unused = [path for path in _subfolders(folder) if path != current]
            if previous is not None and previous != current and previous not in unused:
                unused.append(previous)
        for path in unused:
            shutil.rmtree(path, ignore_errors=True)
        with self._lock:  # a commit may be moving a new version into folder
            _remove_if_empty(folder)

    def remove_orphans(self) -> None:
        """At start: delete the folders no row points at, left by a crash (staging copies,
        installs cut short before their commit, old versions not yet removed), and the <id>
        folders they leave empty."""
        with self._lock:
            known = {row.root for row in self._store.plugins()}
            for entry in self._dir.iterdir():
                if entry.name.startswith(".staging-"):
                    shutil.rmtree(entry, ignore_errors=True)
                elif not entry.name.startswith(".") and entry.is_dir():
                    for path in _subfolders(entry):
                        if path not in known:
                            shutil.rmtree(path, ignore_errors=True)
                    _remove_if_empty(entry)

    def create_manual_tool(self, code: str) -> None:
        """Register an ERP toolCode created by hand, outside any plugin
        (spec: erp.md#ownership-and-discovery)."""
        known = self._store.tool_owner(code)
        if known is not None:
            raise PluginError(
                f"toolCode {code!r} already exists ({_owner_text(known[0])})", kind="conflict"
            )
        with self._store.transaction() as db:
            self._store.own_tools(db, None, [code])

    def _admit(
        self, manifest: JsonObject, previous: PluginRow | None, downgrade: bool = False
    ) -> bool:
        """Refuse a plugin that clashes with what is installed, or that is older than the
        installed version unless downgrade; returns the enabled flag it gets (an upgrade
        keeps previous's)."""
        plugin_id = str(manifest["id"])  # _read_manifest checked it is a plain name
        if previous is not None and not downgrade:
            _check_not_older(plugin_id, str(manifest.get("version", "")), previous.version)
        enabled = previous.enabled if previous else True
        self._check_ownership(plugin_id, _erp_codes(manifest))
        if enabled:
            self._check_names(plugin_id, manifest)
        return enabled

    def _check_ownership(self, plugin_id: str, codes: Sequence[str]) -> None:
        owned = self._store.tool_codes()
        clashes = [
            f"toolCode {code!r} is already owned by {_owner_text(owned[code][0])}"
            for code in codes
            if code in owned and owned[code][0] != plugin_id
        ]
        if clashes:
            raise PluginError(f"{plugin_id}: tool codes taken", clashes, "conflict")

    def _check_names(self, plugin_id: str, manifest: JsonObject) -> None:
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


def _resolve(source: Path | str) -> Path:
    """source made absolute; a path the OS cannot take (a NUL byte, a loop) is the caller's
    mistake, refused like any other bad plugin path."""
    try:
        return Path(source).resolve()
    except (OSError, RuntimeError, ValueError):
        raise PluginError(f"{quoted(source)} is not a usable path") from None


def _erp_codes(manifest: JsonObject) -> list[str]:
    return [str(as_object(t).get("toolCode")) for t in as_array(manifest.get("erpTools"))]


def _subfolders(folder: Path) -> list[Path]:
    return [path for path in folder.iterdir() if path.is_dir()] if folder.is_dir() else []


def _remove_if_empty(folder: Path) -> None:
    """rmdir, which refuses a folder that is not empty (or gone): nothing else is deleted."""
    with contextlib.suppress(OSError):
        folder.rmdir()


def _profile(manifest: JsonObject) -> str:
    if "erpTools" in manifest:
        return "erp"
    return "fengyu-v1" if manifest.get("schemaVersion") == 1 else "fengyu-v2"


def _owner_text(owner: str | None) -> str:
    return f"plugin {owner}" if owner else "a tool created manually"


def _check_not_older(plugin_id: str, version: str, installed: str) -> None:
    """Refuse version where it is older than installed by SemVer precedence (versions that
    are not SemVer are not compared: the manifest check reports them)."""
    try:
        older = semver.Version.parse(version) < semver.Version.parse(installed)
    except (ValueError, TypeError):
        return
    if older:
        raise PluginError(
            f"{plugin_id} {version} is older than the installed {installed}: a downgrade is "
            "refused unless asked for (the API's \"downgrade\": true, the host's "
            "--allow-downgrade)",
            [f"installed: {installed}", f"offered: {version}"],
            "conflict",
        )


def _read_manifest(source: Path) -> JsonObject:
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
    _check_declarations(source, manifest)
    return manifest


def _check_declarations(source: Path, manifest: JsonObject) -> None:
    """Every snapshot, discovery and catalog builds the tools from the stored manifest, so a
    manifest they cannot be built from is refused here, even without the kit's validation,
    instead of failing every later snapshot."""
    try:
        erp_decls(manifest) if "erpTools" in manifest else tool_decls(manifest)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PluginError(f"{source}: its tools cannot be loaded: {exc}") from None
