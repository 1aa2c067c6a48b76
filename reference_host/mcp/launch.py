"""How one MCP server is started: the workers' sandbox, and the environment MCP clients give,
as the StdioServerParameters the official SDK spawns.

An MCP server from a config file is as untrusted as a plugin's worker, so it gets the same
confinement where the machine has one (process/sandbox.py, through process/launch.py's
WorkerSpec, which the kit starts servers with too): the server's folder and the files its
arguments name read-only, the folders it is handed writable (its roots: see roots()), a data
folder of its own writable with a private HOME in it, the host's state hidden. Unlike a
FengYu manifest, an mcpServers entry declares no permissions, and servers commonly fetch
(npx, uvx, web APIs), so the sandbox shares the network.

Environment: what the MCP SDKs' stdio clients pass (`LOGNAME PATH SHELL TERM USER`, and HOME:
here the server's own, writable, kept across restarts, as a desktop client gives the user's),
the host's `--worker-env` names, TMPDIR in the data folder, the entry's own `env` on top, and
a lineage token (process/lineage.py) that marks every process the server starts.

The SDK's stdio_client passes no file descriptors to the child, and bwrap takes its system
call filter (process/seccomp.py) through one, so the bwrap command is started behind
`sh -c 'exec "$@" 3<FILE'`: the shell opens the filter, written once to a file beside the
data folder (never inside it, where the server could replace it), and becomes bwrap.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from mcp import StdioServerParameters

from reference_host.mcp.config import ServerConfig
from reference_host.process.bounds import DEFAULT_LIMITS, WorkerLimits
from reference_host.process.environment import MCP_PASS_ENV
from reference_host.process.identity import dropped_id
from reference_host.process.launch import WorkerSpec
from reference_host.process.sandbox import (
    NEVER_BOUND,
    SERVER_DATA_PLACE,
    SYSTEM,
    Place,
    SandboxPolicy,
)
from reference_host.process.seccomp import program

SECCOMP_FD = 3
OPEN_FILTER = f'exec "$@" {SECCOMP_FD}<"$0"'
SHELL = "/bin/sh"
DATA_FOLDER = "mcp-data"


def server_data(data_dir: Path, name: str) -> Path:
    """The data folder of the server called name, under a host's (or a kit run's) data_dir;
    the name made one safe path component."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".")
    return data_dir / DATA_FOLDER / (safe or "_")


def prune_server_data(data_dir: Path, names: Iterable[str]) -> None:
    """At a host's start: the data folders of the servers named are kept, with the HOME in
    each (a server's config, npx's and uvx's caches: a server is not downloaded again at
    every start), but for their `tmp`; what else an earlier host left in the servers' folder
    (the folders of servers no longer configured, and their files beside) is removed."""
    folder = data_dir / DATA_FOLDER
    kept = {server_data(data_dir, name).name for name in names}
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        name, path = entry.name, Path(entry.path)
        beside = any(name.startswith(f".{k}.") for k in kept)  # its stderr log, its filter
        if name not in kept and not beside:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path / "tmp", ignore_errors=True)


def safe_repositories(folders: Iterable[Path], env: dict[str, str]) -> dict[str, str]:
    """git's `safe.directory` for each handed folder, as variables after those env has
    (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n: added to, never replacing, the
    system's and HOME's settings), and for the repositories inside it (_repositories_in).
    Where the sandbox runs as another id than the user (the host runs as root), git refuses
    a repository the user owns ("dubious ownership"): every call of mcp-server-git failed in
    the folder it was handed, and cyanheads-git in the repository inside its working folder.
    A desktop client runs the server as the user, who owns it."""
    try:
        start = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        return {}
    added: dict[str, str] = {}
    trusted = [path for folder in folders for path in (folder, *_repositories_in(folder))]
    for index, folder in enumerate(dict.fromkeys(trusted), start):
        added[f"GIT_CONFIG_KEY_{index}"] = "safe.directory"
        added[f"GIT_CONFIG_VALUE_{index}"] = str(folder)
    if added:
        added["GIT_CONFIG_COUNT"] = str(start + len(added) // 2)
    return added


# How far down a handed folder git repositories are looked for, and how many are named: a
# server handed a workspace (cyanheads-git's working folder) opens the repositories in it.
REPOSITORY_DEPTH = 3
REPOSITORIES_NAMED = 64


def _repositories_in(folder: Path) -> list[Path]:
    """The git repositories (a `.git` inside) below folder, breadth first, bounded; a
    repository's own folders and node_modules are not searched."""
    found: list[Path] = []
    level = [folder]
    for _ in range(REPOSITORY_DEPTH):
        below: list[Path] = []
        for parent in level:
            try:
                children = sorted(p for p in parent.iterdir() if p.is_dir() and not p.is_symlink())
            except OSError:
                continue
            for child in children:
                if child.name in (".git", "node_modules"):
                    continue
                if (child / ".git").exists():
                    found.append(child)
                    if len(found) >= REPOSITORIES_NAMED:
                        return found
                else:
                    below.append(child)
        level = below
    return found


def handed_folders(args: Iterable[str], cwd: Path, roots: Iterable[Path] = ()) -> HandedFolders:
    """What a server's arguments hand it: a folder argument (server-filesystem's allowed
    folders, mcp-server-git's `--repository`, an `--opt=/path` value) is a root it works in,
    writable; a file argument's package is readable (its script, its config: see
    _package_of). Folders that hold the machine, HOME or a
    system folder are never handed out; roots (`--mcp-root`, the
    entry's `roots`) are writable too."""
    writable: list[Path] = [r.resolve() for r in roots]
    readable: list[Path] = []
    for arg in args:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if not value.startswith(("/", "~", "./", "../")):
            continue
        path = (cwd / Path(value).expanduser()).resolve()
        if path.is_dir() and _may_hand(path):
            writable.append(path)
        elif path.is_file():
            readable.append(_package_of(path))
    return HandedFolders(tuple(dict.fromkeys(writable)), tuple(dict.fromkeys(readable)))


# What marks the top of a script's package: node resolves `node_modules` from there up, and
# Python finds its own modules beside its project file.
PACKAGE_MARKERS = ("package.json", "node_modules", "pyproject.toml", "setup.py")


def _package_of(script: Path) -> Path:
    """What a file argument needs readable: for a script inside a node_modules folder, the
    outermost node_modules (its dependencies lie beside it there); else the package it lies
    in (the nearest folder up that holds a package.json, node_modules or a Python project
    file: `node .../dist/index.js` needs the package's node_modules), else its own folder, or
    the file alone where that folder may not be handed out (HOME, a folder holding it)."""
    folder = script.parent
    if not _may_hand(folder):
        return script
    if "node_modules" in script.parts:
        # An installed package: npm puts its dependencies in the outermost node_modules
        # (`npm install` in a project folder), which node reaches by walking up.
        top = Path(*script.parts[: script.parts.index("node_modules") + 1])
        if _may_hand(top):
            return top
    for candidate in (folder, *folder.parents):
        if not _may_hand(candidate):
            break
        if any((candidate / marker).exists() for marker in PACKAGE_MARKERS):
            return candidate
    return folder


@dataclass(frozen=True)
class HandedFolders:
    writable: tuple[Path, ...]
    readable: tuple[Path, ...]


def _may_hand(folder: Path) -> bool:
    """Not the whole machine, a shared or system folder, nor HOME or a folder holding it."""
    if folder in NEVER_BOUND or any(folder.is_relative_to(s) for s in SYSTEM):
        return False
    home = os.environ.get("HOME")
    return not (home and Path(home).is_relative_to(folder))


def server_spec(
    name: str,
    argv: tuple[str, ...],
    cwd: Path,
    data: Path,
    *,
    env: dict[str, str],
    hidden: tuple[Path, ...] | None,
    pass_env: tuple[str, ...] = (),
    roots: Iterable[Path] = (),
    wrapper: tuple[str, ...] = (),
    bounds: WorkerLimits = DEFAULT_LIMITS,
) -> WorkerSpec:
    """How kit and host start one server (hidden None: unconfined): its folder read-only
    where it may be handed out (else only its data folder is there), its handed folders,
    its data folder writable, the network shared, the MCP clients' environment, and the
    bounds of every worker (bounds.py: an mcpServers entry declares none of its own)."""
    sandbox = None
    if hidden is not None:
        handed = handed_folders(argv[1:], cwd, roots)
        package = cwd if _may_hand(cwd) else data
        sandbox = SandboxPolicy(
            package,
            data,
            handed=handed.writable,
            readable=handed.readable,
            hidden=hidden,
            network=True,
            places=(Place(data, SERVER_DATA_PLACE),),
        )
        if dropped_id() is not None:
            env = {**env, **safe_repositories(handed.writable, env)}
    return WorkerSpec(
        plugin_id=name,
        root=cwd,
        argv=argv,
        data_dir=data,
        extra_env=env,
        pass_env=pass_env,
        sandbox=sandbox,
        wrapper=wrapper,
        host_variables=False,
        env_defaults=MCP_PASS_ENV,
        private_home=True,
        limits=bounds,
    )


@dataclass(frozen=True)
class Launch:
    """What the host needs to start one server: its config, its data folder, the folders its
    sandbox hides (None: unconfined), the host's pass-through variable names and the roots
    the host hands every server (`--mcp-root`), and its bounds (`--worker-limit`)."""

    server: ServerConfig
    data_dir: Path
    hidden: tuple[Path, ...] | None = None
    pass_env: tuple[str, ...] = ()
    roots: tuple[Path, ...] = ()
    bounds: WorkerLimits = DEFAULT_LIMITS

    @cached_property
    def spec(self) -> WorkerSpec:
        """How the server starts (worked out once: it looks at the folders its arguments
        name)."""
        return server_spec(
            self.server.name,
            (self.server.command, *self.server.args),
            self.server.cwd,
            self.data_dir,
            env=self.server.env,
            hidden=self.hidden,
            pass_env=self.pass_env,
            roots=(*self.roots, *self.server.roots),
            bounds=self.bounds,
        )

    @property
    def sandboxed(self) -> bool:
        return self.spec.sandboxed

    @property
    def tmp(self) -> Path:
        return self.data_dir / "tmp"

    def argv(self) -> list[str]:
        """The command line: the entry's, in the sandbox where there is one, under the
        kernel's share of its bounds."""
        spec = self.spec
        if not spec.sandboxed:
            return list(spec.command())
        return [SHELL, "-c", OPEN_FILTER, str(self._filter_file()), *spec.command(SECCOMP_FD)]

    def environment(self, lineage: str) -> dict[str, str]:
        return self.spec.environment(lineage)

    def parameters(self, lineage: str) -> StdioServerParameters:
        """The SDK's spawn parameters, after creating the data folders."""
        self.spec.prepare_folders()
        command_line = self.argv()
        return StdioServerParameters(
            command=command_line[0],
            args=command_line[1:],
            env=self.environment(lineage),
            cwd=self.server.cwd,
        )

    def _filter_file(self) -> Path:
        """The seccomp program in a file the shell opens (outside the sandbox)."""
        path = self.data_dir.parent / f".{self.data_dir.name}.seccomp"
        path.write_bytes(program())
        return path
