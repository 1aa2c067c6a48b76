"""Secrets a worker's stderr must not carry into the host's log (spec: host.md#sensitive-inputs).

A tool call holds its sensitive values for its plugin before the worker gets them, and the
connection masks them in every stderr line it logs. A line may be read after the answer that
followed it, so values stay held after the call: the last KEPT per plugin.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from plugin_spec.sensitive import redact

KEPT = 256


class HeldSecrets:
    """The sensitive values recently sent to each plugin's worker."""

    def __init__(self) -> None:
        self._by_plugin: dict[str, OrderedDict[str, None]] = {}
        self._lock = threading.Lock()

    def hold(self, plugin_id: str, values: Iterable[str]) -> None:
        with self._lock:
            held = self._by_plugin.setdefault(plugin_id, OrderedDict())
            for value in values:
                held[value] = None
                held.move_to_end(value)
            while len(held) > KEPT:
                held.popitem(last=False)

    def mask(self, plugin_id: str, line: str) -> str:
        """line with every value held for plugin_id masked."""
        with self._lock:
            held = sorted(self._by_plugin.get(plugin_id, ()), key=len, reverse=True)
        return redact(line, held) if held else line


SECRETS = HeldSecrets()
