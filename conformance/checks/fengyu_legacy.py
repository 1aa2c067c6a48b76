"""Checks of legacy v1 manifests (spec: fengyu-manifest.md#legacy-version-1-manifests):
recognised, reported, still checked where possible."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.manifest import FENGYU_V1
from conformance.findings import Finding
from conformance.schema_messages import label


@check("FY-LEG-001")
def manifest_is_v2(ctx: FengYuContext) -> Iterator[Finding]:
    if ctx.plugin.profile != FENGYU_V1:
        return
    yield ctx.manifest_finding(
        "/schemaVersion",
        "schemaVersion 1 is the legacy format (schemas as escaped strings on aiTools, "
        f"backend.command); `python -m conformance migrate {ctx.plugin.root}` prints the "
        "equivalent v2 manifest",
    )


@check("FY-LEG-002")
def schema_strings_parse(ctx: FengYuContext) -> Iterator[Finding]:
    for at, message in ctx.plugin.embedded_errors:
        yield ctx.manifest_finding(
            at,
            message,
            f"fix the escaped JSON in the {label(at)} string, or better, migrate to v2 where "
            "schemas are plain JSON objects",
        )


@check("FY-LEG-003")
def tools_declare_effect(ctx: FengYuContext) -> Iterator[Finding]:
    for tool in ctx.plugin.tools:
        if "effect" not in tool.entry:
            yield ctx.manifest_finding(
                f"{tool.pointer}/effect",
                f"tool {tool.name!r} declares no effect, so hosts treat it as external",
            )
