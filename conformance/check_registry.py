"""Check registries: small named functions, each serving one or more requirements of a profile.

One Registry per profile (conformance/checks/fengyu.py, erp.py, mcp.py), each typed by the
context its checks take: a FengYu check sees a FengYuPlugin and its worker services, an MCP
check an McpServer and its sessions, with no narrowing at run time. A registry is a value, so
a run imports only the registries (and the checks, and what they bring) of the profiles it
holds: a FengYu run never imports the MCP machinery (tests/conformance/test_lazy_plugin.py).

A check takes its profile's context and yields Findings. The runner keeps only the findings
for the requirement being tested, so a check that sees many requirements at once (schema
validation) serves each of them without special cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from conformance.catalog import Requirement, load_catalog
from conformance.findings import Finding
from conformance.run_store import RunStore

if TYPE_CHECKING:
    from conformance.previous_version import Upgrade
    from conformance.profiles import Plugin

P = TypeVar("P", covariant=True)  # the profile's plugin type
T = TypeVar("T", covariant=True)  # the profile's tool type


@dataclass(frozen=True)
class CheckContext(Generic[P, T]):
    """What a check may look at: the plugin, the requirement, the other plugins in the run
    and, for per-tool checks, the tool; upgrade is the comparison with --previous-manifest
    (None without it) for the upgrade checks; store holds what the run computes once for many
    items (store.once). Each profile's context adds the live services its checks use."""

    plugin: P
    requirement: Requirement
    peers: Sequence[Plugin] = field(default_factory=tuple)
    tool: T | None = None
    upgrade: Upgrade | None = None
    store: RunStore = field(default_factory=RunStore)

    def finding(
        self, message: str, file: str, pointer: str = "", line: int | None = None, fix: str = ""
    ) -> Finding:
        """A finding of the requirement being checked: a check names its id only in @check."""
        return Finding(self.requirement.id, message, file, pointer, line, fix)


C = TypeVar("C", bound=CheckContext[Any, Any])


def _name(func: Callable[..., object]) -> tuple[str, str]:
    return func.__module__, func.__qualname__


class Registry(Generic[C]):
    """The checks of one profile by requirement id, each taking the profile's context C.

    Filled by its check modules' @registry.check(...) decorators when they are imported
    (conformance/checks/__init__.py imports a profile's modules when a run first needs them).
    """

    def __init__(self, name: str, profiles: tuple[str, ...]) -> None:
        self.name = name
        self.profiles = profiles  # the catalog's profiles whose requirements it may serve
        self._checks: dict[str, list[Callable[[C], Iterable[Finding]]]] = {}

    def __repr__(self) -> str:
        return f"Registry({self.name!r}, {len(self._checks)} requirements)"

    def check(
        self, *requirement_ids: str
    ) -> Callable[[Callable[[C], Iterable[Finding]]], Callable[[C], Iterable[Finding]]]:
        """Register a check for the given requirement ids: each must be in the catalog, for
        one of this registry's profiles."""
        catalog = load_catalog()

        def register(func: Callable[[C], Iterable[Finding]]) -> Callable[[C], Iterable[Finding]]:
            for rid in requirement_ids:
                if rid not in catalog:
                    raise KeyError(f"{func.__qualname__} names {rid}, which is not in the catalog")
                if not set(catalog[rid].profiles) & set(self.profiles):
                    raise KeyError(
                        f"{func.__qualname__} names {rid}, a requirement of "
                        f"{', '.join(catalog[rid].profiles)}, in the {self.name} registry"
                    )
                # A check module imported again (pytester's in-process runs restore sys.modules
                # between runs) replaces its checks rather than adding them twice.
                checks = self._checks.setdefault(rid, [])
                checks[:] = [f for f in checks if _name(f) != _name(func)] + [func]
            return func

        return register

    def checks_for(self, requirement_id: str) -> list[Callable[[C], Iterable[Finding]]]:
        return list(self._checks.get(requirement_id, ()))

    def served(self) -> frozenset[str]:
        """The requirement ids some check of this registry serves."""
        return frozenset(self._checks)

    def run(self, context: C) -> list[Finding]:
        """Every finding for context.requirement, from every check registered for it. A
        requirement no check serves raises: an item with nothing checked must not pass."""
        rid = context.requirement.id
        checks = self.checks_for(rid)
        if not checks:
            raise LookupError(f"the {self.name} registry has no check for {rid}: a kit defect")
        return [
            finding for func in checks for finding in func(context) if finding.requirement == rid
        ]
