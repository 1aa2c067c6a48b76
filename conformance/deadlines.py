"""How long the kit waits on what it runs: every deadline of a run, in one value.

A deadline the kit waits out is a finding's evidence ("no answer within 5 s") or a pause the
honest path takes (a worker left to live a moment after its latest call, as a host leaves it).
They are defaults chosen for a loaded CI runner; `--conformance-deadline-scale` multiplies them
all (above 1 for a slow machine; the kit's own tests run below 1). The docs list each one
(docs/guide/options.md#deadlines), and a finding quotes the value the run used.

A tool's own declared timeout is the plugin's, not the kit's, and is not here; where the kit
waits as a host or client would (FengYu's handshake, the MCP SDK's SIGTERM grace), the default
is that host's or client's figure.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from plugin_spec.fengyu_runtime import HANDSHAKE_SECONDS


@dataclass(frozen=True)
class Deadlines:
    """The kit's waits, in seconds."""

    reply: float = 5.0  # FengYu probe: a request's answer (the 4 MiB frame gets twice this)
    startup: float = 20.0  # FengYu probe and host suite: a new worker's first request
    handshake: float = HANDSHAKE_SECONDS  # FengYu probe: the host's wait for the handshake
    grace: float = 0.5  # FengYu probe: after the sentinel's answer, for a step's late replies
    request: float = 10.0  # MCP: a protocol request's answer
    call: float = 30.0  # MCP: a tools/call's answer
    discover: float = 10.0  # MCP: server/discover unanswered this long means a legacy server
    first_start: float = 60.0  # MCP: the first start's session (`npx -y`/`uvx` fetch then)
    quiet: float = 0.5  # MCP: what a notification made the server write
    eof: float = 5.0  # both: a process's exit after its stdin is closed
    exit: float = 2.0  # both: a process's exit after its stdout ended
    term: float = 2.0  # MCP: after SIGTERM, before SIGKILL (the Python SDK's figure)
    leftover: float = 1.0  # both: the last lines of a killed process
    linger: float = 3.0  # FengYu tools: a worker lives this long after its latest call
    # FengYu tools and MCP: past its latest call, how long a process or thread a call started
    # is waited on while it sleeps (or runs daemonised), so that what it does then is seen
    late: float = 10.0
    start: float = 60.0  # FengYu tools and host: a worker's start through the host's manager
    replay: float = 10.0  # an MCP reproduction: one expected server line
    http: float = 30.0  # ERP: one request to the plugin's backend

    def scaled(self, factor: float) -> Deadlines:
        """Every deadline multiplied by factor (> 0)."""
        return replace(self, **{f.name: getattr(self, f.name) * factor for f in fields(self)})
