"""The kit's manifest suite as the reference host's install validator.

The kit registers `kit_validator` in the `reference_host.validators` entry-point group, and
the host's command line loads what that group holds: the host never imports the kit, and a
host installed without the kit simply installs without validation.
"""

from __future__ import annotations

from pathlib import Path

from conformance.catalog import Level
from conformance.kit import KitRun, Status
from conformance.options import KitOptions
from reference_host.plugins.lifecycle import ValidationReport


def kit_validator(root: Path) -> ValidationReport:
    """MUST findings of the kit's manifest suite are errors; SHOULD findings are warnings."""
    root = root.resolve()
    run = KitRun.load(KitOptions(plugin_dirs=(str(root),)), base=root)
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
