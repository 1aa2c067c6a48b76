"""Which folders are plugins: the one rule the host's --plugins and the kit's --plugin-dir
share, so a folder of plugins (a monorepo, a catalog) means the same to both."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

MANIFEST = "manifest.json"
BASE_MANIFEST = "manifest.base.json"  # a code-first FengYu plugin before its build
ERP_TOOLS = Path("metadata", "tool")


def is_plugin_folder(path: Path) -> bool:
    """A FengYu plugin (manifest.json, or manifest.base.json when code-first) or an ERP one
    (metadata/tool/)."""
    return is_fengyu_plugin(path) or (path / ERP_TOOLS).is_dir()


def is_fengyu_plugin(path: Path) -> bool:
    """Either authoring source makes a folder FengYu's: the kit says which one it found."""
    return (path / MANIFEST).exists() or (path / BASE_MANIFEST).exists()


def is_erp_plugin(path: Path) -> bool:
    """ERP when it has metadata/tool/ and neither FengYu manifest (which makes it FengYu)."""
    return (path / ERP_TOOLS).is_dir() and not is_fengyu_plugin(path)


def expand(paths: Iterable[Path]) -> list[Path]:
    """Each folder as given, or, for a folder that is not a plugin itself, its plugin
    subfolders in name order. A folder with neither stays, so whoever loads it says why it
    is not a plugin."""
    folders: list[Path] = []
    for path in paths:
        if path.is_dir() and not is_plugin_folder(path):
            children = sorted(c for c in path.iterdir() if c.is_dir() and is_plugin_folder(c))
            if children:
                folders += children
                continue
        folders.append(path)
    return folders
