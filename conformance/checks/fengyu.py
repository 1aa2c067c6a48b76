"""The FengYu profile's checks: their context and their registry (check_registry.Registry).

The checks are the conformance/checks/fengyu_*.py modules; conformance.checks.fengyu_checks()
imports them, which fills FENGYU_CHECKS. A FengYu check sees a FengYuPlugin, its AiTool for per-tool
requirements, and the plugin's worker services (started on first use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from conformance.check_registry import CheckContext, Registry
from conformance.fengyu.manifest import FENGYU_V1, FENGYU_V2, AiTool, FengYuPlugin
from conformance.findings import Finding, NotApplicable
from plugin_spec.json_types import JsonArray, JsonObject

if TYPE_CHECKING:  # the services start workers: only their type is needed here
    from conformance.fengyu.services import WorkerServices

Member = TypeVar("Member", JsonArray, JsonObject)


@dataclass(frozen=True)
class FengYuContext(CheckContext[FengYuPlugin, AiTool]):
    """A FengYu check's view: workers serves the worker, tool and host suites (None for the
    manifest and upgrade suites, which start nothing)."""

    workers: WorkerServices | None = None

    def manifest_finding(self, at: str, message: str, fix: str = "") -> Finding:
        """A finding at pointer `at` of the plugin's manifest.json, with its line."""
        return self.plugin.finding(self.requirement.id, at, message, fix)

    def declared(self, key: str, kind: type[Member], absent: str) -> Member:
        """The manifest's top-level `key` when it is a non-empty list or object (kind); without
        one a check of that optional member has nothing to judge: NotApplicable(absent)."""
        value = self.plugin.data.get(key)
        if not isinstance(value, kind) or not value:
            raise NotApplicable(absent)
        return value


FENGYU_CHECKS = Registry[FengYuContext]("FengYu", (FENGYU_V2, FENGYU_V1))
check = FENGYU_CHECKS.check
