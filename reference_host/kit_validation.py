"""The host's install validator: the conformance kit's own static checks.

The one place the host reaches into the kit (the composition root passes it to Host), so
the host core stays free of kit imports and the kit keeps depending on the host.
"""

from __future__ import annotations

from pathlib import Path

from reference_host.plugins import ValidationReport


def kit_validator(root: Path) -> ValidationReport:
    """MUST findings of the kit's manifest suite are errors; SHOULD findings are warnings."""
    from conformance.baseline import Baseline
    from conformance.catalog import Level
    from conformance.kit import KitRun, Status

    root = root.resolve()
    run = KitRun.load([str(root)], Baseline(None), strict=False, base=root)
    errors: list[str] = []
    warnings: list[str] = []
    try:
        plugin = run.plugins[0]
        for target in run.targets(plugin):
            if target.requirement.suite != "manifest":
                continue
            verdict = run.judge(target)
            if verdict.status not in (Status.FAILED, Status.WARNED):
                continue
            bucket = errors if target.requirement.level is Level.MUST else warnings
            bucket += [f"{f.requirement} {f.location}: {f.message}" for f in verdict.findings]
    finally:
        run.close()
    return ValidationReport(errors, warnings)
