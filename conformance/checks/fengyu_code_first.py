"""Checks of a plugin's authoring source (spec: fengyu-manifest.md#code-first-folders): one
source per folder, and a code-first base with sidecars that FengYu's build can merge."""

from __future__ import annotations

from collections.abc import Iterator

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.code_first import BASE_MANIFEST, CONTRACT_KEYS, SIDECARS
from conformance.fengyu.manifest import MANIFEST
from conformance.findings import Finding, NotApplicable
from conformance.sources import pointer


@check("FY-MAN-016")
def one_authoring_source(ctx: FengYuContext) -> Iterator[Finding]:
    plugin = ctx.plugin
    if plugin.code_first is None and (plugin.root / BASE_MANIFEST).exists():
        yield ctx.finding(
            f"found both {MANIFEST} and {BASE_MANIFEST}; FengYu allows exactly one authoring "
            "source per plugin folder",
            BASE_MANIFEST,
            fix=f"keep one: delete {BASE_MANIFEST} (and {SIDECARS}/) to stay manifest-first, "
            f"or delete {MANIFEST} and let `fengyu build` generate it (code-first)",
        )


@check("FY-MAN-017")
def base_declares_no_contract(ctx: FengYuContext) -> Iterator[Finding]:
    plugin = ctx.plugin
    if plugin.code_first is None:
        raise NotApplicable(f"a manifest-first folder: there is no {BASE_MANIFEST}")
    where = {
        "rpc": "the SDK's contract (it generates rpc.methods)",
        "aiTools": "the SDK's contract (ai_tool / @FengYuRpc registrations)",
        "flowNodes": f"{SIDECARS}/flow-nodes.json",
        "i18n": f"{SIDECARS}/i18n/<locale>.json, one file per locale",
    }
    for key in CONTRACT_KEYS:
        if key in plugin.data:
            yield ctx.manifest_finding(
                pointer(key),
                f"{BASE_MANIFEST} declares {key!r}, which the build merges in from elsewhere "
                "and may not overlap",
                f"remove {key!r} from {BASE_MANIFEST} and declare it in {where[key]}",
            )


@check("FY-MAN-018")
def sidecar_layout(ctx: FengYuContext) -> Iterator[Finding]:
    code_first = ctx.plugin.code_first
    if code_first is None:
        raise NotApplicable(f"a manifest-first folder: there is no {BASE_MANIFEST}")
    for file, message, fix in code_first.layout:
        yield ctx.finding(message, file, fix=fix)
