"""`plugin-conformance init fengyu|erp DIR [--id ID]`: a new plugin that passes the kit in
strict mode on its first run, with a CI workflow and a README.

The templates are the folders of conformance/scaffold; names and contents carry
placeholders (`__PLUGIN_ID__`, ...) replaced as they are copied, and a `.tmpl` suffix keeps
a template's Python out of the kit's own linting and type checks. A FengYu plugin also gets
the worker SDK, copied from the fengyu_worker module itself: one source, so the scaffold
holds no copy of it to fall behind."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import fengyu_worker
from conformance.package_data import SCAFFOLD

PROFILES = ("fengyu", "erp")
# FengYu ids are dotted or hyphenated lower-case words; an ERP id becomes a toolCode's first
# segment and a namespace path segment, so it has no dots.
ID_PATTERNS = {
    "fengyu": re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)+$"),
    "erp": re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$"),
}
# Where each profile's plugin vendors the worker SDK (FengYu runs backend/worker.py, whose
# folder is the first place Python looks for an import).
VENDORED_SDK = {"fengyu": Path("backend") / "fengyu_worker.py"}


class InitError(Exception):
    """The plugin cannot be created there, or with that id; the message says why."""


def default_id(profile: str, folder: Path) -> str:
    words = re.findall(r"[a-z0-9]+", folder.resolve().name.lower()) or ["plugin"]
    if profile == "erp":
        return "-".join(words)
    return ".".join(words) if len(words) > 1 else f"com.example.{words[0]}"


def placeholders(profile: str, plugin_id: str) -> dict[str, str]:
    last = re.split(r"[.]", plugin_id)[-1]
    return {
        "__PLUGIN_ID__": plugin_id,
        "__TITLE__": " ".join(w.capitalize() for w in re.split(r"[.-]", last)),
        "__AUTHOR__": "your-name",
        "__TOOL_PREFIX__": (plugin_id if profile == "erp" else last).replace("-", "_"),
        "__PERMISSION_PREFIX__": plugin_id.replace("-", "_").upper(),
    }


def init(profile: str, folder: Path, plugin_id: str | None = None) -> list[Path]:
    """Write the plugin into folder (new or empty); returns the files written."""
    if profile not in PROFILES:
        raise InitError(f"unknown profile {profile!r}: choose {' or '.join(PROFILES)}")
    plugin_id = plugin_id or default_id(profile, folder)
    if not ID_PATTERNS[profile].match(plugin_id):
        raise InitError(
            f"--id {plugin_id!r} is not a {profile} plugin id "
            f"(it must match {ID_PATTERNS[profile].pattern})"
        )
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InitError(f"{folder} exists and is not an empty folder: nothing was written")
    values = placeholders(profile, plugin_id)
    template = SCAFFOLD / profile
    written = []
    for source in sorted(p for p in template.rglob("*") if p.is_file()):
        relative = _fill(str(source.relative_to(template)), values).removesuffix(".tmpl")
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_fill(source.read_text("utf-8"), values), "utf-8")
        shutil.copymode(source, target)
        written.append(target)
    if profile in VENDORED_SDK:
        target = folder / VENDORED_SDK[profile]
        shutil.copyfile(sdk_source(), target)
        written.append(target)
    return written


def sdk_source() -> Path:
    """The worker SDK's one file, as a plugin vendors it."""
    return Path(fengyu_worker.__file__).resolve()


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text
