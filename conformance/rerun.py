"""The text of a failing item, and its last line, the rerun line: a command that, pasted,
runs that item alone again.

It carries every option the item's suite reads (a worker check without the --worker-cmd it
ran with would check another worker) and, for a property search, the seed that failed. It
selects the item by a keyword each item carries, made of characters `-k` accepts and framed
so that no other item's keyword contains it (`-k` matches substrings).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from conformance.findings import Finding
from conformance.kit import KitRun, Target
from conformance.profiles import is_mcp

_NOT_IN_KEY = re.compile(r"[^\w.+/-]")


def rerun_key(kit: KitRun, target: Target) -> str:
    """The item's own `-k` keyword: `:<plugin>:<requirement>:<tool>:`."""
    parts = (kit.label(target.plugin), target.requirement.id, target.tool_name or "")
    return ":" + ":".join(_NOT_IN_KEY.sub("_", part) for part in parts) + ":"


def rerun_command(kit: KitRun, target: Target, base: Path, seed: int | None) -> str:
    """The pytest command line that reruns the target with the options it depends on;
    base: the folder relative option paths were given from."""
    argv = ["pytest"]
    for plugin in kit.everyone or kit.plugins:  # every one: a check compares with peers
        if is_mcp(plugin):
            argv += plugin.selection
        else:
            argv += ["--plugin-dir", str(plugin.root)]
    argv += kit.options.to_argv(target.requirement.suite, base, seed)
    argv += ["-k", rerun_key(kit, target)]
    return shlex.join(argv)


def failure_text(
    kit: KitRun,
    target: Target,
    findings: list[Finding],
    base: Path,
    seed: int | None,
    headline: str = "",
) -> str:
    """What a failing (or warning) item prints: the requirement with its source, each
    finding where it was found, the fixes, and the rerun line (base and seed as for
    rerun_command)."""
    r = target.requirement
    revisions = f" (MCP {', '.join(r.revisions)})" if r.revisions else ""
    lines = [f"{r.id} ({r.level.value}) {r.title}: {r.text} [{r.doc}]{revisions}"]
    if headline:
        lines.append(headline)
    for finding in findings:
        lines.append(f"  {finding.location}")
        lines += [f"    {line}" for line in finding.message.splitlines()]
    for fix in dict.fromkeys(f.fix or r.hint for f in findings):
        lines.append(f"  fix ({r.id}): {fix}")
    lines.append(f"  rerun: {rerun_command(kit, target, base, seed)}")
    return "\n".join(lines)
