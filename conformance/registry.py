"""The check registry: small named functions, each serving one or more requirements.

A check takes a CheckContext and yields Findings. The runner keeps only the findings for the
requirement being tested, so a check that sees many requirements at once (schema validation)
serves each of them without special cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.catalog import Requirement, load_catalog
from conformance.findings import Finding

CheckFn = Callable[["CheckContext"], Iterable[Finding]]


@dataclass(frozen=True)
class CheckContext:
    """What a check may look at: the plugin, the requirement, the other plugins in the run,
    the plugin's worker services (started on first use) and, for per-tool checks, the tool."""

    plugin: Any
    requirement: Requirement
    peers: Sequence[Any] = field(default_factory=tuple)
    workers: Any = None
    tool: Any = None


_CHECKS: dict[str, list[CheckFn]] = {}


def check(*requirement_ids: str) -> Callable[[CheckFn], CheckFn]:
    """Register a check for the given requirement ids (each must be in the catalog)."""
    catalog = load_catalog()

    def register(func: CheckFn) -> CheckFn:
        for rid in requirement_ids:
            if rid not in catalog:
                raise KeyError(f"{func.__qualname__} names {rid}, which is not in the catalog")
            _CHECKS.setdefault(rid, []).append(func)
        return func

    return register


def checks_for(requirement_id: str) -> list[CheckFn]:
    return list(_CHECKS.get(requirement_id, ()))


def run_checks(context: CheckContext) -> list[Finding]:
    """Every finding for context.requirement, from every check registered for it."""
    rid = context.requirement.id
    return [
        finding
        for func in checks_for(rid)
        for finding in func(context)
        if finding.requirement == rid
    ]


def unchecked_requirements() -> list[str]:
    """Catalog entries no check serves: each one is a defect of the kit."""
    return [rid for rid in load_catalog() if rid not in _CHECKS]
