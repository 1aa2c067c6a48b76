"""The previous version of a plugin, for the upgrade checks (--previous-manifest).

The option names a manifest.json, a plugin folder (FengYu or ERP), or `git:<ref>` for the
plugin's own manifest.json at that commit of the repository it lives in.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugin_spec.erp_decls import is_erp_folder, read_erp_manifest
from plugin_spec.json_files import JsonFileError, read_json_object
from plugin_spec.workflow_catalog import CatalogDiff, diff, from_manifest


class PreviousError(Exception):
    """The previous version cannot be read; the message says what and where."""


@dataclass(frozen=True)
class Upgrade:
    previous_version: str
    version: str
    changes: CatalogDiff

    @property
    def major_bumped(self) -> bool:
        return _major(self.version) > _major(self.previous_version)


def read_previous(spec: str, plugin_root: Path) -> dict[str, Any]:
    if spec.startswith("git:"):
        return _from_git(spec.removeprefix("git:"), plugin_root)
    path = Path(spec).expanduser()
    try:
        if path.is_dir():
            return (
                read_erp_manifest(path)
                if is_erp_folder(path)
                else read_json_object(path / "manifest.json")
            )
        return read_json_object(path)
    except JsonFileError as exc:
        raise PreviousError(f"--previous-manifest {spec}: {exc}") from None


def current_manifest(plugin_root: Path) -> dict[str, Any]:
    if is_erp_folder(plugin_root):
        return read_erp_manifest(plugin_root)
    return read_json_object(plugin_root / "manifest.json")


def compare(previous: dict[str, Any], current: dict[str, Any], plugin_id: str) -> Upgrade:
    """Both versions' catalog entries under one plugin id, so identities line up."""
    return Upgrade(
        str(previous.get("version", "")),
        str(current.get("version", "")),
        diff(from_manifest(plugin_id, previous), from_manifest(plugin_id, current)),
    )


def _from_git(ref: str, plugin_root: Path) -> dict[str, Any]:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(plugin_root), *args], capture_output=True, text=True, timeout=30
        )
        if done.returncode != 0:
            raise PreviousError(f"--previous-manifest git:{ref}: {done.stderr.strip()}")
        return done.stdout

    prefix = git("rev-parse", "--show-prefix").strip()
    text = git("show", f"{ref}:{prefix}manifest.json")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PreviousError(f"manifest.json at {ref} is not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise PreviousError(f"manifest.json at {ref} is not a JSON object")
    return value


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0
