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

from conformance.kit import EndpointSettings, KitRun, Target
from conformance.properties import PropertySettings

_NOT_IN_KEY = re.compile(r"[^\w.+/-]")

WORKER_SUITES = ("worker", "tools", "host")
SEARCH_SUITES = ("tools", "endpoints")


def rerun_key(kit: KitRun, target: Target) -> str:
    """The item's own `-k` keyword: `:<plugin>:<requirement>:<tool>:`."""
    parts = (kit.label(target.plugin), target.requirement.id, target.tool_name or "")
    return ":" + ":".join(_NOT_IN_KEY.sub("_", part) for part in parts) + ":"


def rerun_command(kit: KitRun, target: Target, base: Path, seed: int | None) -> str:
    """The pytest command line that reruns the target with the options it depends on;
    base: the folder relative option paths were given from."""
    argv = ["pytest"]
    for plugin in kit.plugins:  # every one: a check may compare the plugin with its peers
        argv += ["--plugin-dir", str(plugin.root)]
    argv += _options(kit, target.requirement.suite, base, seed)
    argv += ["-k", rerun_key(kit, target)]
    return shlex.join(argv)


def _options(kit: KitRun, suite: str, base: Path, seed: int | None) -> list[str]:
    options: list[str] = []
    if kit.strict:
        options.append("--conformance-strict")
    if kit.baseline.path is not None:
        options += ["--conformance-baseline", str(base / kit.baseline.path)]
    if kit.providers:
        options += ["--conformance-provider", ",".join(sorted(kit.providers))]
    if suite in WORKER_SUITES:
        if kit.worker_override:
            options.append(f"--worker-cmd={kit.worker_override}")
        for name in kit.worker_env:
            options += ["--worker-env", name]
    if suite in SEARCH_SUITES:
        options += _search_options(kit.settings, seed)
    if suite == "endpoints":
        options += _endpoint_options(kit.endpoints)
    if suite == "upgrade" and kit.previous is not None:
        previous = kit.previous
        if not previous.startswith("git:"):
            previous = str(base / Path(previous).expanduser())
        options += ["--previous-manifest", previous]
    return options


def _search_options(settings: PropertySettings, seed: int | None) -> list[str]:
    options = ["--conformance-examples", str(settings.examples)]
    chosen = settings.seed if settings.seed is not None else seed
    if chosen is not None:
        options += ["--conformance-seed", str(chosen)]
    elif settings.derandomize:
        options.append("--conformance-derandomize")
    return options


def _endpoint_options(endpoints: EndpointSettings) -> list[str]:
    options: list[str] = []
    if endpoints.base_url is not None:
        options += ["--plugin-base-url", endpoints.base_url]
    defaults = EndpointSettings()
    if endpoints.tenant != defaults.tenant:
        options += ["--erp-tenant", endpoints.tenant]
    if endpoints.actor != defaults.actor:
        options += ["--erp-actor", endpoints.actor]
    return options
