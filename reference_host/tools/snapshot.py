"""The live tool registry (spec: host.md#tool-snapshots-and-built-in-names): one immutable
snapshot per agent run.

A snapshot holds the built-ins and the tools of every installed and enabled plugin, read
from the store when the snapshot is taken, so lifecycle changes show in the next run without
a restart and never in a run already going. Callbacks are rebuilt only for plugins whose
revision changed; an unchanged registry returns the previous snapshot as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from plugin_spec.tool_definition import ToolDefinition
from reference_host.storage.database import PluginRow, Store
from reference_host.tools.callbacks import ToolCallback

CallbackFactory = Callable[[PluginRow], list[ToolCallback]]


@dataclass(frozen=True)
class Snapshot:
    generation: int
    callbacks: Mapping[str, ToolCallback]
    # What is costly to derive from the snapshot (its provider fit), kept with it: a snapshot
    # never changes, so what was derived from it holds as long as it is the current one.
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def definitions(self) -> list[ToolDefinition]:
        return [callback.definition for callback in self.callbacks.values()]

    def get(self, name: str) -> ToolCallback | None:
        return self.callbacks.get(name)

    def names(self) -> list[str]:
        return list(self.callbacks)

    def only(self, keep: Callable[[ToolCallback], bool]) -> Snapshot:
        """The same snapshot narrowed to the callbacks keep accepts (e.g. per actor)."""
        kept = {name: c for name, c in self.callbacks.items() if keep(c)}
        return Snapshot(self.generation, MappingProxyType(kept))


class ToolRegistry:
    def __init__(
        self, store: Store, builtins: Iterable[ToolCallback], factory: CallbackFactory
    ) -> None:
        self._store = store
        self._builtins = list(builtins)
        self._factory = factory
        self._cache: dict[str, tuple[int, list[ToolCallback]]] = {}
        self._last: Snapshot | None = None

    @property
    def builtin_names(self) -> set[str]:
        return {callback.definition.name for callback in self._builtins}

    def snapshot(self) -> Snapshot:
        generation = self._store.generation()
        if self._last is not None and self._last.generation == generation:
            return self._last
        callbacks: dict[str, ToolCallback] = {c.definition.name: c for c in self._builtins}
        cache: dict[str, tuple[int, list[ToolCallback]]] = {}
        for plugin_id, revision in self._store.revisions(enabled_only=True):
            cached_revision, made = self._cache.get(plugin_id, (-1, []))
            if cached_revision != revision:
                row = self._store.plugin(plugin_id)
                made = self._factory(row) if row is not None else []
            cache[plugin_id] = (revision, made)
            for callback in made:
                callbacks.setdefault(callback.definition.name, callback)
        self._cache = cache
        self._last = Snapshot(generation, MappingProxyType(callbacks))
        return self._last
