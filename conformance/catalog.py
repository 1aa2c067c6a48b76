"""The requirement catalog: what the kit checks, loaded once from requirements.toml."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from conformance.package_data import CATALOG

SPEC_DIR = "docs/spec"  # the specification, relative to the repository root


class Level(StrEnum):
    """RFC 2119 strength: MUST findings fail, SHOULD findings warn."""

    MUST = "MUST"
    SHOULD = "SHOULD"


@dataclass(frozen=True)
class Requirement:
    id: str
    level: Level
    title: str
    text: str
    source: str
    hint: str
    profiles: tuple[str, ...]
    suite: str = "manifest"
    also_in: tuple[str, ...] = ()  # suites whose calls it judges too: `-m` on one selects it
    plugin_level: bool = False
    reason: str = ""
    fails: str = ""
    passes: str = ""
    provider: str = ""  # the model provider it speaks for: --conformance-provider makes it MUST
    revisions: tuple[str, ...] = ()  # MCP: the protocol revisions the rule belongs to
    setup: bool = False  # failing, the target could not be loaded or started (not a rule broken)

    @property
    def doc(self) -> str:
        """Where the rule is explained: a section of the project's specification."""
        return f"{SPEC_DIR}/{self.source}"

    @property
    def per_tool(self) -> bool:
        """Checked once per aiTool rather than once per plugin; `plugin_level = true` in the
        catalog keeps a requirement of a per-tool suite to one item per plugin."""
        return self.suite in ("tools", "endpoints") and not self.plugin_level

    @property
    def suites(self) -> str:
        """The suites that select it, as `explain` and the reference page name them."""
        also = f", also selected by -m {' and -m '.join(self.also_in)}" if self.also_in else ""
        return f"{self.suite} suite{also}"

    def applies_to(self, profile: str) -> bool:
        return profile in self.profiles


@cache
def load_catalog() -> dict[str, Requirement]:
    """Requirements by id, in the catalog's order."""
    text = CATALOG.read_text("utf-8")
    return {
        rid: Requirement(
            id=rid,
            level=Level(entry["level"]),
            title=entry["title"],
            text=entry["text"],
            source=entry["source"],
            hint=entry["hint"],
            profiles=tuple(entry["profiles"]),
            suite=entry.get("suite", "manifest"),
            also_in=tuple(entry.get("also_in", ())),
            plugin_level=entry.get("plugin_level", False),
            reason=entry.get("reason", ""),
            fails=entry.get("fails", "").strip("\n"),
            passes=entry.get("passes", "").strip("\n"),
            provider=entry.get("provider", ""),
            revisions=tuple(entry.get("revisions", ())),
            setup=entry.get("setup", False),
        )
        for rid, entry in tomllib.loads(text).items()
    }


def requirement(rid: str) -> Requirement:
    return load_catalog()[rid]


def format_catalog() -> str:
    """The catalog as text, one requirement a line (for --list-requirements)."""
    return "\n".join(
        f"{r.id:<12} {r.level.value:<6} {r.title} - {r.text} [{r.doc}]"
        for r in load_catalog().values()
    )
