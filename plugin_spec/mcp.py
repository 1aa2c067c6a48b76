"""The Model Context Protocol as a stdio client sees it (spec: mcp.md): the two protocol eras,
the messages that open a session in each, the tool-name rule, the annotation defaults and the
name a host mints for a server's tool.

Shared by the kit (which drives servers on raw pipes) and the reference host (which mounts
them as plugins), so that both speak the same revisions and mint the same names.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from plugin_spec.json_types import JsonMapping, JsonObject

LEGACY: Final = "2025-11-25"  # the newest revision opened by the initialize handshake
MODERN: Final = "2026-07-28"  # the revision that replaced it with server/discover
HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", LEGACY)
KNOWN_VERSIONS: Final = (*HANDSHAKE_VERSIONS, MODERN)
ERAS: Final = (LEGACY, MODERN)

DISCOVER: Final = "server/discover"
INITIALIZE: Final = "initialize"
INITIALIZED: Final = "notifications/initialized"
TOOLS_LIST: Final = "tools/list"
TOOLS_CALL: Final = "tools/call"
PING: Final = "ping"
SET_LEVEL: Final = "logging/setLevel"
CANCELLED: Final = "notifications/cancelled"
PROGRESS: Final = "notifications/progress"
LOG_MESSAGE: Final = "notifications/message"

# The modern envelope: every request carries these in params._meta.
META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
UNSUPPORTED_VERSION: Final = -32022  # 2026-07-28: the _meta version is not one it speaks

LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

# SEP-986 as the 2025-11-25 tools page states it (the official SDK checks the same pattern).
TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
# What every model provider takes, and so what a host offers a server's tool as.
OFFERED_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NOT_OFFERABLE: Final = re.compile(r"[^A-Za-z0-9_-]")
SEPARATOR: Final = "__"
HASH_CHARS: Final = 8

# The spec's defaults for an absent hint: a client assumes the worst of an unannotated tool.
ANNOTATION_DEFAULTS: Final = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}

# How the kit and the host name themselves to a server: the same, so that a server cannot
# tell the kit's sessions from a host's by the client it is talking to.
CLIENT_INFO: Final = {"name": "ai-plugin-host", "version": "0.1.0"}


def offered_name(server: str, tool: str) -> str:
    """The name a host offers a server's tool under: `<server>__<tool>`, unique across
    servers. When that is not a name every provider takes (a character outside
    [A-Za-z0-9_-], more than 64 characters), the offending characters become `_` and a hash
    of the original pair is appended, shortened to fit, so two tools never mint one name."""
    plain = f"{server}{SEPARATOR}{tool}"
    if OFFERED_NAME.fullmatch(plain):
        return plain
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:HASH_CHARS]
    kept = _NOT_OFFERABLE.sub("_", plain)[: 64 - HASH_CHARS - 1]
    return f"{kept}_{digest}"


def annotation(tool: JsonMapping, hint: str) -> bool:
    """A tool's hint as a client must read it: the declared boolean, else the default."""
    annotations = tool.get("annotations")
    value = annotations.get(hint) if isinstance(annotations, dict) else None
    return value if isinstance(value, bool) else bool(ANNOTATION_DEFAULTS[hint])


def modern_meta(version: str = MODERN) -> JsonObject:
    """The _meta every modern request carries."""
    return {META_VERSION: version, META_CLIENT_INFO: {**CLIENT_INFO}, META_CAPABILITIES: {}}


def initialize_params(version: str = LEGACY) -> JsonObject:
    """The params of an initialize request offering version."""
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {**CLIENT_INFO}}


# --- The reference host's MCP mounts (issue 27, part 5): kept apart from the lead's part above.

# How a host reads an untrusted server's tool: as if it declared no hints.
UNTRUSTED_ANNOTATIONS: Final[JsonMapping] = {"annotations": {}}


def approval_class(tool: JsonMapping, *, trusted: bool) -> str:
    """The approval class ("read", "write" or "external") a host gives a server's tool.

    An untrusted server's hints are read as absent (the spec: annotations are untrusted unless
    the server is trusted), so they can never relax an approval: every such tool takes the
    defaults, readOnlyHint false and openWorldHint true, and is "external". A trusted server's
    declared hints count: read-only tools are "read", closed-world ones "write"."""
    read = tool if trusted else UNTRUSTED_ANNOTATIONS
    if annotation(read, "readOnlyHint"):
        return "read"
    return "external" if annotation(read, "openWorldHint") else "write"


def distinct_name(server: str, tool: str, taken: set[str] | frozenset[str]) -> str:
    """offered_name, or when another tool (of another server, or a built-in) already has it,
    the pair's hashed form, which differs for every distinct pair."""
    name = offered_name(server, tool)
    if name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:HASH_CHARS]
    kept = _NOT_OFFERABLE.sub("_", f"{server}{SEPARATOR}{tool}")[: 64 - HASH_CHARS - 1]
    return f"{kept}_{digest}"
