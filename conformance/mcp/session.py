"""A session with a server in one protocol era: how it is opened (server/discover first, then
initialize, as a dual-era client does), and the requests the checks make in it.

In the modern era every request carries the envelope in params._meta; in the legacy era the
handshake comes first and nothing else does. The fallback to initialize is taken on any
answer that is not a usable DiscoverResult, never on one error code (spec: mcp.md#protocol-eras).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from conformance.mcp.wire import Reply, Wire
from plugin_spec import mcp
from plugin_spec.json_types import JsonArray, JsonMapping, JsonObject, JsonValue, ReadOnlyJson

MAX_PAGES = 100  # MCP-TL-003: a listing longer than this is taken as a loop

Mode = Literal["auto", "legacy", "modern"]


@dataclass(frozen=True)
class Opening:
    """How the session was opened: the era (None: it was not), the server's answers to the
    probe and the handshake, and its capabilities and self-description."""

    era: str | None
    discover: Reply | None = None
    initialize: Reply | None = None
    problem: str = ""

    @property
    def result(self) -> JsonObject:
        reply = self.discover if self.era == mcp.MODERN else self.initialize
        result = reply.result if reply is not None else None
        return result if isinstance(result, dict) else {}

    @property
    def capabilities(self) -> JsonObject:
        capabilities = self.result.get("capabilities")
        return capabilities if isinstance(capabilities, dict) else {}

    @property
    def server_info(self) -> JsonValue:
        if self.era == mcp.MODERN:
            meta = self.result.get("_meta")
            return meta.get(mcp.META_SERVER_INFO) if isinstance(meta, dict) else None
        return self.result.get("serverInfo")


@dataclass
class Listing:
    """Every page of one tools/list, followed to the end or to a problem."""

    pages: list[Reply] = field(default_factory=list)
    problem: str = ""  # why the listing stopped before a last page

    @property
    def tools(self) -> JsonArray:
        return [t for page in self.pages for t in _page_tools(page)]

    @property
    def complete(self) -> bool:
        return not self.problem


def open_session(wire: Wire, mode: Mode = "auto", *, first_start: bool = False) -> Opening:
    """Open a session: probe server/discover (mode auto or modern), fall back to the
    handshake on anything but a DiscoverResult naming the modern version (mode auto); a
    first start (`npx -y` and `uvx` fetch the package then) waits longer for the handshake.
    The wire remembers the era it opened."""
    deadlines = wire.deadlines
    opening = _opened(wire, mode, deadlines.first_start if first_start else deadlines.request)
    wire.era = opening.era
    negotiated = opening.result.get("protocolVersion")
    legacy = negotiated if negotiated in mcp.HANDSHAKE_VERSIONS else opening.era
    wire.version = mcp.MODERN if opening.era == mcp.MODERN else legacy
    return opening


def _opened(wire: Wire, mode: Mode, seconds: float) -> Opening:
    discover = None
    if mode != "legacy":
        discover = wire.request(
            mcp.DISCOVER, {"_meta": mcp.modern_meta()}, seconds=wire.deadlines.discover
        )
        if modern_result(discover):
            return Opening(mcp.MODERN, discover=discover)
        if mode == "modern":
            return Opening(None, discover, problem=f"server/discover: {discover.describe()}")
        if discover.exited:  # its stdout ended: the process may not be reaped yet
            return Opening(None, discover, problem="the server exited on server/discover")
    initialize = wire.request(mcp.INITIALIZE, mcp.initialize_params(), seconds=seconds)
    late = _late_discover(discover, initialize)
    if late is not None:  # a slow start: the probe's answer came after its deadline
        return Opening(mcp.MODERN, discover=late, initialize=initialize)
    result = initialize.result
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        problem = f"initialize: {initialize.describe()}"
        return Opening(None, discover, initialize, problem)
    wire.notify(mcp.INITIALIZED)
    return Opening(mcp.LEGACY, discover, initialize)


def _late_discover(discover: Reply | None, initialize: Reply) -> Reply | None:
    """The probe's answer, when it came only while initialize was waited for and shows a
    modern server (which then refuses initialize): that server is modern, as the Python SDK
    also decides on a late answer."""
    if discover is None or discover.response is not None or initialize.ok:
        return None
    for message in initialize.meanwhile:
        late = Reply(message)
        if "id" in message and "method" not in message and modern_result(late):
            return late
    return None


def modern_result(reply: Reply) -> bool:
    """Whether a discover reply shows a modern server: a result naming 2026-07-28."""
    result = reply.result
    versions = result.get("supportedVersions") if isinstance(result, dict) else None
    return isinstance(versions, list) and mcp.MODERN in versions


@dataclass
class Session:
    """Requests in an opened session, with the era's envelope."""

    wire: Wire
    opening: Opening

    @property
    def era(self) -> str | None:
        return self.opening.era

    def params(self, params: JsonMapping | None = None) -> JsonMapping | None:
        """params with the modern envelope merged into _meta (legacy: as given)."""
        if self.era != mcp.MODERN:
            return params
        merged = dict(params or {})
        meta = merged.get("_meta")
        merged["_meta"] = {**mcp.modern_meta(), **(meta if isinstance(meta, Mapping) else {})}
        return merged

    def request(self, method: str, params: JsonMapping | None = None) -> Reply:
        """A request in the era's envelope, at the wire's default deadline and next id."""
        return self.wire.request(method, self.params(params))

    def list_tools(self) -> Listing:
        """tools/list from the first page, following nextCursor to the last."""
        listing = Listing()
        cursor: JsonValue = None
        seen_cursors: set[str] = set()
        while True:
            reply = self.request(mcp.TOOLS_LIST, {"cursor": cursor} if cursor else None)
            if not isinstance(reply.result, dict) or not isinstance(
                reply.result.get("tools"), list
            ):
                listing.problem = f"tools/list: {reply.describe()}"
                return listing
            listing.pages.append(reply)
            cursor = reply.result.get("nextCursor")
            if cursor is None:
                return listing
            if not isinstance(cursor, str) or cursor in seen_cursors:
                listing.problem = f"nextCursor {cursor!r} was already followed"
                return listing
            if len(listing.pages) >= MAX_PAGES:
                listing.problem = f"no last page within {MAX_PAGES} pages"
                return listing
            seen_cursors.add(cursor)

    def call_tool(
        self, name: str, arguments: ReadOnlyJson, *, progress: int | None = None
    ) -> Reply:
        """tools/call; progress: the request's id, also sent as its progressToken, as the SDK
        does when the caller follows progress (wire.next_id() gives one)."""
        params: dict[str, ReadOnlyJson] = {"name": name, "arguments": arguments}
        if progress is not None:
            params["_meta"] = {"progressToken": progress}
        return self.wire.request(
            mcp.TOOLS_CALL,
            self.params(params),
            request_id=progress,
            seconds=self.wire.deadlines.call,
        )


def _page_tools(page: Reply) -> JsonArray:
    tools = page.result.get("tools") if isinstance(page.result, dict) else None
    return tools if isinstance(tools, list) else []
