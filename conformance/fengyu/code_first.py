"""A code-first FengYu folder: manifest.base.json plus the manifest/ sidecars, before the build.

FengYu's build merges the base with the contract the SDK generates (rpc, aiTools) and the
sidecars (flowNodes, i18n) into target/fengyu-manifest/manifest.json. Until then only the base
fields and the sidecars' own shape can be judged, so every other requirement is skipped with
a reason that says what to build and where the result will be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from conformance.sources import JsonDocument, JsonLoadError, load_json_file

BASE_MANIFEST = "manifest.base.json"
SIDECARS = "manifest"
FLOW_NODES = "flow-nodes.json"
I18N = "i18n"
BUILT_MANIFEST = "target/fengyu-manifest/manifest.json"
CONTRACT_KEYS = ("rpc", "aiTools", "flowNodes", "i18n")
LOCALE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]+)*")

# Requirements a base and its sidecars can be judged by without the contract step.
CHECKABLE = frozenset(
    {
        "FY-MAN-001",
        "FY-MAN-002",
        "FY-MAN-003",
        "FY-MAN-013",
        "FY-MAN-014",
        "FY-MAN-015",
        "FY-MAN-016",
        "FY-MAN-017",
        "FY-MAN-018",
        "FY-MAN-021",
        "FY-MAN-026",
        "FY-MAN-028",
        "FY-LEG-001",
    }
)

BUILD_ADVICE = (
    "code-first folder (manifest.base.json, no manifest.json): rpc and aiTools come from the "
    "SDK's contract step, which this folder has not been through; build it with `fengyu build` "
    "(the contract step alone: java `mvn generate-resources`, python `python3 contract.py`, go "
    f"`go run ./cmd/fengyu-contract`), which writes {BUILT_MANIFEST}, then point --plugin-dir "
    "at the built package, the folder with that manifest.json at its root"
)


@dataclass(frozen=True)
class Sidecar:
    """One JSON file under manifest/: the flow nodes or one locale's translation."""

    display: str
    locale: str | None = None
    document: JsonDocument | None = None
    error: JsonLoadError | None = None


@dataclass
class CodeFirst:
    """The sidecars of a code-first folder and what is wrong with its manifest/ layout."""

    sidecars: list[Sidecar] = field(default_factory=list)
    layout: list[tuple[str, str, str]] = field(default_factory=list)  # file, message, fix


def unbuilt_reason(requirement_id: str) -> str | None:
    """Why a requirement is skipped on a code-first folder, or None when it can be judged."""
    return None if requirement_id in CHECKABLE else BUILD_ADVICE


def read_sidecars(root: Path) -> CodeFirst:
    """Load manifest/flow-nodes.json and manifest/i18n/*.json; note every other entry."""
    found = CodeFirst()
    folder = root / SIDECARS
    if not folder.is_dir():
        return found
    for entry in sorted(folder.iterdir()):
        display = f"{SIDECARS}/{entry.name}"
        if entry.name == FLOW_NODES and entry.is_file():
            found.sidecars.append(_load(entry, display))
        elif entry.name == I18N and entry.is_dir():
            _read_locales(entry, found)
        elif entry.is_dir() or entry.suffix == ".json":
            kind = "folder" if entry.is_dir() else "file"
            found.layout.append(
                (
                    display,
                    f"{display}: found the {kind} {entry.name!r}; manifest/ may hold only "
                    f"{FLOW_NODES} and {I18N}/<locale>.json",
                    f"remove {display} or move its content into manifest/{FLOW_NODES} or "
                    f"manifest/{I18N}/<locale>.json",
                )
            )
    return found


def _read_locales(folder: Path, found: CodeFirst) -> None:
    first: dict[str, str] = {}
    for entry in sorted(folder.iterdir()):
        display = f"{SIDECARS}/{I18N}/{entry.name}"
        if entry.is_dir() or entry.suffix != ".json":
            if entry.is_dir() or entry.name.lower().endswith(".json"):
                found.layout.append(
                    (
                        display,
                        f"{display}: found {entry.name!r}; manifest/{I18N}/ may hold only "
                        "<locale>.json files",
                        f"remove {display}, or rename it to <locale>.json in lower case",
                    )
                )
            continue
        locale = entry.stem.lower()
        if not LOCALE.fullmatch(locale):
            found.layout.append(
                (
                    display,
                    f"{display}: found the locale {locale!r} (the lower-cased file name); "
                    "expected a locale tag such as zh or pt-br",
                    f"rename {display} to a locale tag such as zh.json",
                )
            )
            continue
        if locale in first:
            found.layout.append(
                (
                    display,
                    f"{display}: found a second file for the locale {locale!r}, already given "
                    f"by {first[locale]} (the locale is the lower-cased file name)",
                    f"merge {display} into {first[locale]} and delete it",
                )
            )
            continue
        first[locale] = display
        found.sidecars.append(_load(entry, display, locale))


def _load(path: Path, display: str, locale: str | None = None) -> Sidecar:
    try:
        return Sidecar(display, locale, document=load_json_file(path, display))
    except JsonLoadError as exc:
        return Sidecar(display, locale, error=exc)
