"""pytest settings read from a folder the run checks: a usage error, unless trusted.

pytest reads pytest.ini, pyproject.toml, tox.ini or setup.cfg from the folder it runs in
(or above) before the kit starts. Inside a folder the run checks (a --plugin-dir, an
--mcp-config's folder, the folder an MCP server runs in), that file belongs to the code under
check: its addopts can deselect checks (-k, -m, --deselect, --ignore), make its failures
expected (--conformance-baseline), load its own modules into the kit's unsandboxed process
(-p, with pythonpath), and conformance_worker_env hands its worker the kit's variables
(tokens). Such a run stops, naming the file, the settings and the fix, unless
--conformance-trust-settings says the file is the user's own. What changes nothing of what
runs passes: the keys below, and addopts words that only shape the terminal output.
A conftest.py is not a setting: a kit run loads none (pytest_plugin.py).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from conformance.findings import printable
from conformance.options import KitOptions

# Keys that change nothing of a kit run: they describe a test suite the kit does not collect,
# or pytest-asyncio's, which a kit run leaves out, or are the kit's own defaults a plugin
# author keeps in the repo (the worker command runs the plugin's code, in the sandbox).
HARMLESS_KEYS = frozenset(
    {
        "testpaths",
        "norecursedirs",
        "python_files",
        "python_classes",
        "python_functions",
        "markers",
        "minversion",
        "asyncio_mode",
        "asyncio_default_fixture_loop_scope",
        "asyncio_default_test_loop_scope",
        "conformance_examples",
        "conformance_worker_cmd",
    }
)
# addopts words that only shape what the terminal shows, each as one word (`--tb=short`).
OUTPUT_WORDS = re.compile(
    r"-[qv]+|--quiet|--verbose|-r[A-Za-z]+|-l|--showlocals|--strict-markers|--strict-config"
    r"|--no-header|--(?:tb|color|code-highlight|durations|durations-min|verbosity)=[\w.]+"
)
TRUST_FLAG = "--conformance-trust-settings"
SHOWN = 60  # characters of a value the message quotes


@dataclass(frozen=True)
class Settings:
    """The settings file pytest read, and what it sets itself (not what `-o` overrode)."""

    path: Path
    values: Mapping[str, object]

    def changing(self) -> list[str]:
        """What the file sets that changes what runs, each as `key (value)`."""
        found = []
        for key, value in self.values.items():
            if key in HARMLESS_KEYS:
                continue
            words = _words(value)
            if key == "addopts":
                words = [w for w in words if not OUTPUT_WORDS.fullmatch(w)]
                if not words:
                    continue
            found.append(f"{key} ({_shown(shlex.join(words))})")
        return found

    def imported(self) -> list[str]:
        """The modules its addopts has pytest import (`-p NAME`): pytest did so before the
        kit was loaded."""
        words = _words(self.values.get("addopts", ""))
        named = [b for a, b in itertools.pairwise(words) if a == "-p"]
        named += [w[2:] for w in words if w.startswith("-p") and len(w) > 2]
        return [_shown(n) for n in named if not n.startswith("no:")]


def file_values(inicfg: Mapping[str, object]) -> dict[str, object]:
    """The values a pytest config's _inicfg took from the file: pytest 9 keeps `-o`
    overrides there too, marked, which are the user's own choice; pytest 8 keeps them apart."""
    return {
        key: getattr(value, "value", value)
        for key, value in inicfg.items()
        if getattr(value, "origin", "file") == "file"
    }


def checked_folders(options: KitOptions, base: Path) -> list[Path]:
    """The folders a run checks: each --plugin-dir, each --mcp-config's folder, and the
    folder each MCP server runs in (the current one for --mcp-command)."""
    folders = [(base / raw).resolve() for raw in options.plugin_dirs]
    folders += [(base / raw).resolve().parent for raw in options.mcp_configs]
    if options.mcp_commands:
        folders.append(base.resolve())
    if options.mcp_configs:  # conformance.mcp only for a run of MCP servers
        from conformance.mcp.selection import SelectionError, selected_servers

        with contextlib.suppress(SelectionError):  # KitRun.load reports it
            servers = selected_servers((), options.mcp_configs, options.mcp_servers, base)
            folders += [server.root.resolve() for server in servers]
    return list(dict.fromkeys(folders))


def refusal(settings: Settings | None, folders: Iterable[Path]) -> str:
    """Why the run must not use these settings, or "" when it may."""
    if settings is None:
        return ""
    inside = [f for f in folders if settings.path.resolve().is_relative_to(f)]
    changing = settings.changing()
    if not inside or not changing:
        return ""
    path = printable(str(settings.path), one_line=True)
    ran = settings.imported()
    already = f" (pytest imported {', '.join(ran)} before the kit started)" if ran else ""
    return (
        f"conformance: pytest's settings come from {path}, inside "
        f"{printable(str(inside[0]), one_line=True)}, a folder this run checks, and change "
        f"what runs: {'; '.join(changing)}. A checked folder's settings can deselect checks or "
        f"load its code into the kit's own process{already}. Code you did not write: run the "
        "kit from a folder of your own (README: Checking code you did not write). Your own "
        "settings: add --conformance-trust-settings"
    )


def trusted_line(settings: Settings | None, folders: Iterable[Path]) -> str:
    """The header line of a run that trusts such settings, for whoever reads its log."""
    if not refusal(settings, folders) or settings is None:
        return ""
    path = printable(str(settings.path), one_line=True)
    return (
        f"conformance: pytest's settings come from {path}, inside a folder this run checks, "
        f"trusted (--conformance-trust-settings): {'; '.join(settings.changing())}"
    )


def _words(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value)
    try:
        return shlex.split(text)
    except ValueError:
        return [text]


def _shown(text: str) -> str:
    text = printable(text, one_line=True)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}..."
