"""Install validators from installed packages, found through an entry-point group.

A package offers a validator by naming a `Validator` in the `reference_host.validators`
group (the conformance kit names its manifest suite there). The command line passes what it
finds to the host, so the host depends on no validator's package, the kit included.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from reference_host.plugins.lifecycle import ValidationReport, Validator

GROUP = "reference_host.validators"


def installed_validator() -> Validator | None:
    """Every installed validator as one, or None when no package offers one."""
    found: list[Validator] = [entry.load() for entry in entry_points(group=GROUP)]
    if not found:
        return None
    if len(found) == 1:
        return found[0]

    def combined(root: Path) -> ValidationReport:
        reports = [validate(root) for validate in found]
        return ValidationReport(
            [e for r in reports for e in r.errors], [w for r in reports for w in r.warnings]
        )

    return combined
