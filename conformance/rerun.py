"""The rerun line of a failing item: a command that, pasted, runs that item alone again.

It carries every option the item's suite reads (a worker check without the --worker-cmd it
ran with would check another worker) and, for a property search, the seed that failed. It
selects the item by a keyword each item carries, made of characters `-k` accepts and framed
so that no other item's keyword contains it (`-k` matches substrings).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from conformance.kit import KitRun, Target
from conformance.mcp.server import McpServer

_NOT_IN_KEY = re.compile(r"[^\w.+/-]")


def rerun_key(kit: KitRun, target: Target) -> str:
    """The item's own `-k` keyword: `:<plugin>:<requirement>:<tool>:`."""
    parts = (kit.label(target.plugin), target.requirement.id, target.tool_name or "")
    return ":" + ":".join(_NOT_IN_KEY.sub("_", part) for part in parts) + ":"


def rerun_command(kit: KitRun, target: Target, base: Path, seed: int | None) -> str:
    """The pytest command line that reruns the target with the options it depends on;
    base: the folder relative option paths were given from."""
    argv = ["pytest"]
    for plugin in kit.plugins:  # every one: a check may compare the plugin with its peers
        if isinstance(plugin, McpServer):
            argv += plugin.selection
        else:
            argv += ["--plugin-dir", str(plugin.root)]
    argv += kit.options.to_argv(target.requirement.suite, base, seed)
    argv += ["-k", rerun_key(kit, target)]
    return shlex.join(argv)
