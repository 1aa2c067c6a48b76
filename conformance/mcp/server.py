"""An MCP server of a run: how it is started (its command, folder and environment), and what
its first session showed (the era it spoke and the tools it listed).

A server has no files to read: its tools are known only once it runs, so loading one starts
it, opens a session and lists its tools, as a client would before offering them. What goes
wrong there is the load requirement's finding (MCP-LIF-001), and every other item is skipped
naming it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from conformance.deadlines import Deadlines
from conformance.findings import Finding
from conformance.mcp.session import (
    Listing,
    Mode,
    Opening,
    Session,
    open_session,
)
from conformance.mcp.wire import Reply, Wire
from plugin_spec.json_types import JsonObject, JsonValue
from plugin_spec.mcp import offered_name
from plugin_spec.secret_search import SHORTEST_ENCODED
from reference_host.mcp.launch import server_data, server_spec
from reference_host.mcp.start_problems import LAUNCHERS, start_hint
from reference_host.process.bounds import DEFAULT_LIMITS, WorkerLimits
from reference_host.process.environment import SECRET_LOOKING
from reference_host.process.launch import WorkerSpec

MCP = "mcp"  # the profile (conformance.profiles.MCP, which imports no MCP module)
LOAD_REQUIREMENT = "MCP-LIF-001"
SHORTEST_SECRET = SHORTEST_ENCODED  # MCP-SEC-003: a shorter one would turn up by chance


@dataclass(frozen=True)
class McpTool:
    """One listed tool: its definition as the server sent it, and where in the listing."""

    definition: JsonObject
    index: int

    @property
    def name(self) -> str | None:
        name = self.definition.get("name")
        return name if isinstance(name, str) else None

    @property
    def input_schema(self) -> JsonValue:
        return self.definition.get("inputSchema")

    @property
    def output_schema(self) -> JsonValue:
        return self.definition.get("outputSchema")

    @property
    def pointer(self) -> str:
        return f"/tools/{self.index}"

    @property
    def task_only(self) -> bool:
        """`execution.taskSupport: "required"`: the tool is called only as a task (a
        tools/call with a `task`), and refuses a plain call, as the spec has it."""
        execution = self.definition.get("execution")
        return isinstance(execution, dict) and execution.get("taskSupport") == "required"


@dataclass(frozen=True)
class LoadProblem:
    """Why the server could not be loaded, and a fix of its own when the cause is known
    (the sandbox's: reference_host/mcp/start_problems.py)."""

    message: str
    fix: str = ""


@dataclass(eq=False)
class McpServer:
    """One server as the run selected it (name, command, folder, environment)."""

    name: str
    argv: tuple[str, ...]
    root: Path
    env: dict[str, str]
    selection: tuple[str, ...]  # the flags that select it again, for rerun lines
    source: str  # where it was selected: the config file, or --mcp-command
    profile: str = MCP
    load_requirement: str = LOAD_REQUIREMENT
    scratch: Path | None = None  # the run's folder for it: its data folder, traces (hidden)
    hidden: tuple[Path, ...] = ()  # the run's own folders its sandbox hides besides
    pass_env: tuple[str, ...] = ()  # --worker-env: the host's variables it also gets
    roots: tuple[Path, ...] = ()  # --mcp-root and the entry's roots: writable in its sandbox
    bounds: WorkerLimits = DEFAULT_LIMITS  # --worker-limit: as the host's bound its servers
    tools: list[McpTool] = field(default_factory=list)
    opening: Opening | None = None
    listing: Listing | None = None
    load_error: LoadProblem | None = None
    mode: Mode = "auto"  # how sessions are opened: legacy once the probe killed the server
    probe_killed: Reply | None = None  # MCP-ERA-001: the discover probe the server died on

    @property
    def label(self) -> str:
        return f"mcp.{self.name}"

    @property
    def era(self) -> str | None:
        return self.opening.era if self.opening else None

    def tool_names(self) -> set[str]:
        """The names a host offers its tools under (what other plugins' names meet)."""
        return {offered_name(self.name, t.name) for t in self.tools if t.name is not None}

    def spec(self, wrapper: tuple[str, ...] = ()) -> WorkerSpec:
        """How the kit starts it: as the reference host does (reference_host/mcp/launch.py),
        in its folder with the MCP clients' environment and its own, in the sandbox where
        there is one, its data folder (and HOME in it) laid out as the host lays it out and
        the run's scratch folder hidden. Every start shares that data folder, as a host's
        restarts do. A server cannot tell the kit's starts from a host's by what it may
        reach, what it finds where, nor by a variable only the kit sets."""
        scratch = self.folder()
        return server_spec(
            self.name,
            self.argv,
            self.root,
            self.data_dir,
            env=self.env,
            hidden=tuple(dict.fromkeys((scratch, *self.hidden))),
            pass_env=self.pass_env,
            roots=self.roots,
            wrapper=wrapper,
            bounds=self.bounds,
        )

    def folder(self) -> Path:
        """The run's scratch folder for the server, made on first use and kept for the run:
        npx fetches a package once, not at each start."""
        if self.scratch is None:
            self.scratch = Path(tempfile.mkdtemp())
        return self.scratch

    @property
    def data_dir(self) -> Path:
        return server_data(self.folder(), self.name)

    def discard(self) -> None:
        """Remove the scratch folder (the run's end)."""
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def secrets(self) -> dict[str, str]:
        """MCP-SEC-003: the secrets it is given, the credential-looking variables of its
        configured env (as the host's environment rules tell them), long enough to be found
        only where they were copied."""
        return {
            name: value
            for name, value in self.env.items()
            if SECRET_LOOKING.search(name) and len(value) >= SHORTEST_SECRET
        }

    def finding(self, requirement: str, message: str, pointer: str = "", fix: str = "") -> Finding:
        """A finding on the server: located at its listing (tools/list) or its session."""
        return Finding(requirement, message, f"{self.label} ({self.source})", pointer, None, fix)


def load_mcp_server(server: McpServer, deadlines: Deadlines) -> McpServer:
    """Start the server once, open a session and list its tools: the run's items per tool
    come from this listing."""
    try:
        wire = Wire(server.spec(), deadlines)
    except OSError as exc:
        server.load_error = LoadProblem(f"the command could not be started: {exc}")
        return server
    try:
        opening = open_session(wire, first_start=True)
        if opening.era is None and opening.discover is not None and opening.discover.exited:
            # It died on the era probe: a legacy client would still reach it, and so does
            # the rest of the run (MCP-ERA-001 reports the probe).
            wire.kill()
            server.probe_killed, server.mode = opening.discover, "legacy"
            wire = Wire(server.spec(), deadlines)
            opening = open_session(wire, "legacy")
        server.opening = opening
        if opening.era is None:
            server.load_error = _no_session(opening, wire)
            return server
        listing = Session(wire, opening).list_tools()
        server.listing = listing
        tools = listing.tools
        server.tools = [McpTool(t, i) for i, t in enumerate(tools) if isinstance(t, dict)]
        if not listing.pages:
            server.load_error = LoadProblem(f"no tool list: {listing.problem}")
    finally:
        wire.kill()
    return server


def _no_session(opening: Opening, wire: Wire) -> LoadProblem:
    if not wire.alive():  # its last stderr lines may still be on their way: read them all
        wire.worker.exit_code(wire.deadlines.term)
    stderr = wire.stderr.strip().splitlines()[-5:]
    tail = ("\nits stderr ended:\n  " + "\n  ".join(stderr)) if stderr else ""
    message = f"no session could be opened in either era: {opening.problem}{tail}"
    spec = wire.spec
    given = spec.environment()
    command = spec.argv[0] if spec.argv else ""
    hint = start_hint("\n".join(stderr), given, os.environ, given.get("HOME", ""), command)
    if hint is None and wire.alive() and command.rsplit("/", 1)[-1] in LAUNCHERS:
        hint = (
            f"a first {command.rsplit('/', 1)[-1]} run downloads the server, which can take "
            "longer than the kit waits for the first answer: give it time with "
            "`--conformance-deadline-scale 5`"
        )
    if hint is None:
        return LoadProblem(message)
    return LoadProblem(f"{message}\n{hint}", fix=hint[0].upper() + hint[1:] + ".")
