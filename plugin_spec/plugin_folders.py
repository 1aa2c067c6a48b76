"""Which folders are plugins: the one rule the host's --plugins and the kit's --plugin-dir
share, so a folder of plugins (a monorepo, a catalog) means the same to both."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

MANIFEST = "manifest.json"
ERP_TOOLS = Path("metadata", "tool")


def is_plugin_folder(path: Path) -> bool:
    """A FengYu plugin (manifest.json) or an ERP one (metadata/tool/)."""
    return (path / MANIFEST).exists() or (path / ERP_TOOLS).is_dir()


def is_erp_plugin(path: Path) -> bool:
    """ERP when it has metadata/tool/ and no manifest.json (which makes it FengYu)."""
    return (path / ERP_TOOLS).is_dir() and not (path / MANIFEST).exists()


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
