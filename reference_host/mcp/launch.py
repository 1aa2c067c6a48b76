"""How one MCP server is started: the workers' sandbox and environment rules, as the
StdioServerParameters the official SDK spawns.

An MCP server from a config file is as untrusted as a plugin's worker, so it gets the same
confinement where the machine has one (process/sandbox.py): the server's folder read-only, a
data folder of its own writable, the host's state hidden. Unlike a FengYu manifest, an
mcpServers entry declares no permissions, and servers commonly fetch (npx, uvx, web APIs), so
the sandbox shares the network.

The SDK's stdio_client passes no file descriptors to the child, and bwrap takes its system
call filter (process/seccomp.py) through one, so the bwrap command is started behind
`sh -c 'exec "$@" 3<FILE'`: the shell opens the filter, written once to a file in the data
folder, as descriptor 3 and becomes bwrap.

Environment: the workers' allow-list of the host's environment (process/environment.py,
`--worker-env`), TMPDIR in the data folder, HOME there when unconfined, the launchers' caches
there too (launcher_caches), the entry's own `env` on top, and a lineage token
(process/lineage.py) that marks every process the server starts, so what left its process
group is still found and ended.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mcp import StdioServerParameters

from reference_host.mcp.config import ServerConfig
from reference_host.process.environment import passed_through
from reference_host.process.lineage import LINEAGE_VARIABLE
from reference_host.process.sandbox import SandboxPolicy, command, support
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


def launcher_caches(data_dir: Path) -> dict[str, str]:
    """Where the launchers an entry names (npx, uvx, pipx run) keep what they fetch and
    install: `cache` in the server's data folder (npm's cache; the XDG cache, data and state
    folders, where uv keeps its tools and Python builds). The user's own are read-only in the
    sandbox, where npx and uvx fail on them (EROFS), and a shared writable one would let one
    server plant code that another server's launcher runs. XDG_CONFIG_HOME stays the user's:
    a registry mirror configured there still applies."""
    folder = data_dir / "cache"
    return {
        "npm_config_cache": str(folder / "npm"),
        "XDG_CACHE_HOME": str(folder / "xdg-cache"),
        "XDG_DATA_HOME": str(folder / "xdg-data"),
        "XDG_STATE_HOME": str(folder / "xdg-state"),
    }


@dataclass(frozen=True)
class Launch:
    """What the host needs to start one server: its config, its data folder, the folders its
    sandbox hides (None: unconfined) and the host's pass-through variable names."""

    server: ServerConfig
    data_dir: Path
    hidden: tuple[Path, ...] | None = None
    pass_env: tuple[str, ...] = ()

    @property
    def sandboxed(self) -> bool:
        return self.hidden is not None and support().available

    @property
    def tmp(self) -> Path:
        return self.data_dir / "tmp"

    def argv(self) -> list[str]:
        """The command line: the entry's, in the sandbox where there is one."""
        argv = [self.server.command, *self.server.args]
        if not self.sandboxed or self.hidden is None:
            return argv
        # The server's folder is seen through the read-only root, not bound again: bound over
        # the hidden folders, a folder holding the host's data (cwd = $HOME, say) would show
        # that data again. The "package" bound is the data folder, bound writable after it.
        policy = SandboxPolicy(self.data_dir, self.data_dir, hidden=self.hidden, network=True)
        confined = command(support().program, policy, argv, self.server.cwd, SECCOMP_FD)
        return [SHELL, "-c", OPEN_FILTER, str(self._filter_file()), *confined]

    def environment(self, lineage: str) -> dict[str, str]:
        env = passed_through(os.environ, self.pass_env)
        tmp = str(self.tmp)
        env.update({"TMPDIR": tmp, "TMP": tmp, "TEMP": tmp})
        if not self.sandboxed:
            env["HOME"] = str(self.data_dir / "home")
        elif "HOME" in os.environ:
            env["HOME"] = os.environ["HOME"]
        env.update(launcher_caches(self.data_dir))
        env.update(self.server.env)
        env[LINEAGE_VARIABLE] = lineage
        return env

    def parameters(self, lineage: str) -> StdioServerParameters:
        """The SDK's spawn parameters, after creating the data folders."""
        self.tmp.mkdir(parents=True, exist_ok=True)
        if not self.sandboxed:
            (self.data_dir / "home").mkdir(parents=True, exist_ok=True)
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
