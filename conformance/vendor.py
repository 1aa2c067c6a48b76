"""`plugin-conformance vendor [DIR]`: a wheel of the running kit in DIR/.conformance/.

A plugin's CI must install the very kit its author checked with, on a runner that has nothing
of the author's machine: the package index has no ai-plugin-conformance, and a folder of that
machine is on no runner. A wheel kept in the plugin's repository is installed from the
checkout itself.

The wheel is packed from the kit's modules where they are imported from (an editable checkout
or an installed copy alike) and from its installed distribution's metadata (dependencies,
entry points), so packing needs no build backend and no network. Entries are sorted and dated
1980-01-01, so vendoring the same kit twice writes the same bytes (no diff to commit)."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
import zipfile
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

DISTRIBUTION = "ai-plugin-conformance"
# The import names the distribution installs ([tool.hatch.build.targets.wheel] only-include):
# three packages and the one-file worker SDK, fengyu_worker.py.
PACKAGES = ("plugin_spec", "conformance", "reference_host", "fengyu_worker")
FOLDER = ".conformance"  # in the plugin's repository
WHEEL_NAME = DISTRIBUTION.replace("-", "_")
INSTALL = f"pip install {FOLDER}/{WHEEL_NAME}-*.whl"  # the workflow's line: any version
_EPOCH = (1980, 1, 1, 0, 0, 0)
_SKIPPED = re.compile(r"(^|/)__pycache__(/|$)|\.py[co]$")


class VendorError(Exception):
    """The running kit cannot be packed; the message says why and what to do instead."""


def vendor(folder: Path) -> Path:
    """Write the running kit's wheel into folder/.conformance (replacing any other version
    of it there); returns the wheel's path."""
    try:
        found = distribution(DISTRIBUTION)
    except PackageNotFoundError:
        raise VendorError(
            f"the running kit is not an installed {DISTRIBUTION} distribution, so its "
            "dependencies and entry points are unknown: install it (pip install -e .) first"
        ) from None
    metadata = found.read_text("METADATA")
    if metadata is None:
        raise VendorError(f"the installed {DISTRIBUTION} has no METADATA to pack")
    version = found.version
    info = f"{WHEEL_NAME}-{version}.dist-info"
    files: list[tuple[str, bytes]] = list(_package_files())
    files.append((f"{info}/METADATA", metadata.encode()))
    if (entry_points := found.read_text("entry_points.txt")) is not None:
        files.append((f"{info}/entry_points.txt", entry_points.encode()))
    wheel = f"Wheel-Version: 1.0\nGenerator: {DISTRIBUTION} vendor\nRoot-Is-Purelib: true\n"
    files.append((f"{info}/WHEEL", (wheel + "Tag: py3-none-any\n").encode()))
    record = "".join(f"{name},{_digest(data)},{len(data)}\n" for name, data in files)
    files.append((f"{info}/RECORD", (record + f"{info}/RECORD,,\n").encode()))

    target = folder / FOLDER
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{WHEEL_NAME}-{version}-py3-none-any.whl"
    partial = path.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            entry = zipfile.ZipInfo(name, _EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    for older in target.glob(f"{WHEEL_NAME}-*.whl"):
        older.unlink()
    partial.replace(path)
    return path


def _package_files() -> Iterator[tuple[str, bytes]]:
    """Each file of the kit's packages (a single-file module as itself), by its wheel path."""
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise VendorError(f"the kit's module {name} cannot be found")
        origin = Path(spec.origin)
        if origin.name != "__init__.py":
            yield origin.name, origin.read_bytes()
            continue
        root = origin.parent
        for path in sorted(root.rglob("*")):
            relative = f"{name}/{path.relative_to(root).as_posix()}"
            if path.is_file() and not _SKIPPED.search(relative):
                yield relative, path.read_bytes()


def _digest(data: bytes) -> str:
    """RECORD's hash: urlsafe base64 of the sha256, unpadded (the wheel specification)."""
    raw = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={raw.decode()}"
