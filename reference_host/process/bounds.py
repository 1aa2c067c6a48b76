"""The bounds every worker and MCP server runs under, resources declared or not
(spec: host.md#worker-bounds): a plugin that declares no backend.resources still cannot start
processes, open files or fill its data folder without end.

The kernel holds what it can, set by prlimit just before the worker's program runs (after
the sandbox's setpriv): open files per process (RLIMIT_NOFILE: an open past it fails with
EMFILE), the size of any one file written (RLIMIT_FSIZE), the sandbox's /tmp (a tmpfs of
the data size), and, where the worker has a user namespace of its own (a host that is not
root), its process count (RLIMIT_NPROC, counted per user namespace since Linux 5.14). As
root every sandbox runs as the same dropped id (identity.py), whose RLIMIT_NPROC would count
every worker's processes together (and any other process of that id), so it is not set
there. The file size and process caps sit one past the limit: the kernel stops the growth
there, and the sampled watcher (limits.py) sees the tree over its limit and ends it with
RESOURCE_LIMIT, the error a declared limit gives. The data folder's bytes, which no rlimit
counts, are the watcher's alone.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache

from plugin_spec.fengyu_decls import ResourceLimits

KIB = 1024
GIB = KIB**3
# The sandbox's own process in the worker's user namespace: bwrap's init (pid 1, made by
# --unshare-pid), which RLIMIT_NPROC counts with the worker's.
SANDBOX_INIT = 1
NAMES = {"processes": "processes", "open-files": "open_files", "data": "data_bytes"}
UNITS = {"": 1, "k": KIB, "kib": KIB, "m": KIB**2, "mib": KIB**2, "g": GIB, "gib": GIB}
SETTING = re.compile(r"(?P<number>[0-9]+)\s*(?P<unit>[a-z]*)")


class LimitSettingError(ValueError):
    """A --worker-limit value that names no limit or gives no whole positive number."""


@dataclass(frozen=True)
class WorkerLimits:
    """What a worker's tree may hold: processes at once, open files per process, and bytes
    in its data folder (also the most one file it writes may hold, and the size of its /tmp)."""

    processes: int = 256
    open_files: int = 4096
    data_bytes: int = GIB

    def declared(self, resources: ResourceLimits) -> WorkerLimits:
        """These bounds with the manifest's own: a declared maxProcesses is the process
        limit (memoryMb has no default: the watcher takes it from the manifest)."""
        if resources.max_processes is None:
            return self
        return replace(self, processes=resources.max_processes)

    def with_settings(self, settings: Iterable[tuple[str, int]]) -> WorkerLimits:
        """These bounds with the configured ones (limit_setting's pairs) in their place."""
        return replace(self, **{NAMES[name]: value for name, value in settings})

    def prlimit(self, own_user_namespace: bool) -> tuple[str, ...]:
        """The prlimit words in front of the worker's command: open files, the size of one
        file one byte past the data limit, and, only in a user namespace of the worker's own,
        its processes one past the limit (and the sandbox's init); () without prlimit."""
        program = _prlimit()
        if program is None:
            return ()
        words = [program, f"--nofile={self.open_files}", f"--fsize={self.data_bytes + 1}"]
        if own_user_namespace:
            words.append(f"--nproc={self.processes + 1 + SANDBOX_INIT}")
        return (*words, "--")


DEFAULT_LIMITS = WorkerLimits()


def limit_setting(text: str) -> tuple[str, int]:
    """One `NAME=VALUE` of --worker-limit: processes, open-files or data, a whole number
    above 0; data in bytes, or with K, M or G (KiB, MiB, GiB)."""
    name, equals, value = text.partition("=")
    name = name.strip().lower()
    if not equals or name not in NAMES:
        raise LimitSettingError(
            f"--worker-limit {text!r}: expected NAME=VALUE with NAME one of "
            f"{', '.join(NAMES)} (e.g. processes=512, data=2GiB)"
        )
    matched = SETTING.fullmatch(value.strip().lower())
    unit = matched.group("unit") if matched else ""
    if matched is None or unit not in UNITS or (unit and name != "data"):
        units = " (bytes, or with K, M or G)" if name == "data" else ""
        raise LimitSettingError(f"--worker-limit {text!r}: {value!r} is not a number{units}")
    number = int(matched.group("number")) * UNITS[unit]
    if number < 1:
        raise LimitSettingError(f"--worker-limit {text!r}: {name} must be at least 1")
    return name, number


def configured(settings: Iterable[str]) -> WorkerLimits:
    """The default bounds with the `NAME=VALUE` settings given (the last of a name wins)."""
    return DEFAULT_LIMITS.with_settings(limit_setting(s) for s in settings)


@cache
def _prlimit() -> str | None:
    return shutil.which("prlimit")
