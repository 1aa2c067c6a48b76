"""The answers of the calls session's calls, so that an argument set already tried is not
sent again (spec: mcp.md#calling-tools).

Checks draw the same arguments more than once: several checks of a tool, and several examples
of one search (a tool whose properties are all optional with defaults gets `{}` again and
again). Some tools take seconds per call (server-everything's
trigger-long-running-operation waits 10 s by default), so a repeat is answered with the
first answer. Only answered calls are kept (and calls still at work, sending progress, when
the kit stopped waiting: sent again, they would work as long), and only for the session that
answered them (a
server started again is asked again); what came meanwhile is left out (a call's progress is
judged once, at the call), and the answers kept are bounded, as everything an MCP session
keeps is.
"""

from __future__ import annotations

import json
from dataclasses import replace

from conformance.mcp.wire import Reply, Wire
from plugin_spec.json_types import ReadOnlyJson

TRIED_BYTES = 8 * 2**20  # answers kept in all
TRIED_ENTRY_BYTES = 2**20  # a larger answer is not kept: the call is sent again


def call_key(tool: str, arguments: ReadOnlyJson) -> str:
    """The argument set as canonical JSON (1 and 1.0, true and 1 stay apart)."""
    return json.dumps([tool, arguments], sort_keys=True, ensure_ascii=False)


class TriedCalls:
    """What each argument set of one session got, within TRIED_BYTES."""

    def __init__(self, limit: int = TRIED_BYTES, entry_limit: int = TRIED_ENTRY_BYTES) -> None:
        self.limit = limit
        self.entry_limit = entry_limit
        self._wire: Wire | None = None
        self._replies: dict[str, Reply] = {}
        self.bytes = 0

    def get(self, wire: Wire, tool: str, arguments: ReadOnlyJson) -> Reply | None:
        """The answer this session gave the same call, if it was kept."""
        if wire is not self._wire:
            return None
        return self._replies.get(call_key(tool, arguments))

    def put(self, wire: Wire, tool: str, arguments: ReadOnlyJson, reply: Reply) -> None:
        """Keep reply as this session's answer to the call, if it is one and fits."""
        if wire is not self._wire:
            self._wire, self._replies, self.bytes = wire, {}, 0
        if (reply.response is None and not reply.working) or reply.refused:
            return
        key = call_key(tool, arguments)
        size = len(key) + len(json.dumps(reply.response, ensure_ascii=False))
        if size > self.entry_limit or self.bytes + size > self.limit or key in self._replies:
            return
        self._replies[key] = replace(reply, meanwhile=(), not_kept=0)
        self.bytes += size
