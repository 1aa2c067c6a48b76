"""units: a small MCP server over stdio, built with the official MCP Python SDK.

Three pure tools about lengths: list the units it knows, convert a length to metres, and
express a length in metres in another unit. Nothing is read or written outside the process,
so every tool is annotated read-only, idempotent and closed-world.

Run it as `python server.py`; it speaks MCP on stdin/stdout (both protocol eras, as the SDK
does) and logs, if at all, to stderr. It exits when its stdin closes.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field

Unit = Literal["mm", "cm", "m", "km", "in", "ft", "yd", "mi", "nmi"]

# Metres in one of each unit: the SI ones by definition, the imperial ones by the 1959
# international yard and pound agreement, the nautical mile by international agreement (1929).
METRES_PER: dict[str, float] = {
    "mm": 0.001,
    "cm": 0.01,
    "m": 1.0,
    "km": 1000.0,
    "in": 0.0254,
    "ft": 0.3048,
    "yd": 0.9144,
    "mi": 1609.344,
    "nmi": 1852.0,
}
NAMES: dict[str, str] = {
    "mm": "millimetre",
    "cm": "centimetre",
    "m": "metre",
    "km": "kilometre",
    "in": "inch",
    "ft": "foot",
    "yd": "yard",
    "mi": "mile (international)",
    "nmi": "nautical mile",
}

PURE = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class UnitInfo(BaseModel):
    symbol: str = Field(description="The unit's symbol: the value to pass as `unit`.")
    name: str = Field(description="The unit's English name.")
    metres: float = Field(description="Metres in one of this unit.")


class UnitList(BaseModel):
    units: list[UnitInfo]


class Metres(BaseModel):
    metres: float = Field(description="The length in metres.")


class Expressed(BaseModel):
    value: float = Field(description="The length in `unit`, unrounded.")
    unit: str = Field(description="The unit's symbol.")
    text: str = Field(description="The value rounded to `precision` places, then the symbol.")


class UnitsServer(MCPServer):
    """The SDK's server, but a call of a tool it does not have is the protocol error the spec
    lists an unknown tool under (-32602), not the SDK's isError result."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name not in {tool.name for tool in await self.list_tools()}:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")
        return await super().call_tool(name, arguments, context)


mcp = UnitsServer(
    "units",
    version="1.0.0",
    instructions="Length units: list_units, convert_length (to metres), express_length "
    "(from metres). All three are pure computations.",
)


# Arguments are validated as their JSON Schema reads: the SDK's default (pydantic's lax mode)
# would also take "3" or true for a number, which the advertised schema rejects.
Length = Annotated[float, Field(strict=True, allow_inf_nan=False)]


def _json_integer(value: Any) -> Any:
    """A JSON Schema integer is any number with no fractional part (2.0 included), never a
    string or a boolean; pydantic's lax int then takes 2.0 and refuses 2.5."""
    if isinstance(value, str | bool):
        raise ValueError("must be an integer")
    return value


def _finite(value: float) -> float:
    """A result too large for a float is an error, not an 'inf' that JSON cannot carry."""
    if not math.isfinite(value):
        raise ToolError("The result is too large to represent as a number.")
    return value


@mcp.tool(
    title="List length units",
    description="List the length units this server knows: each unit's symbol (the value to "
    "pass as `unit` to the other tools), its English name and how many metres one of it is.",
    annotations=PURE,
)
def list_units() -> UnitList:
    return UnitList(
        units=[
            UnitInfo(symbol=symbol, name=NAMES[symbol], metres=metres)
            for symbol, metres in METRES_PER.items()
        ]
    )


@mcp.tool(
    title="Convert a length to metres",
    description="Convert a length given in one of the known units (mm, cm, m, km, in, ft, yd, "
    'mi, nmi) to metres. Example: value 3, unit "ft" gives 0.9144 metres.',
    annotations=PURE,
)
def convert_length(
    value: Annotated[Length, Field(description="The length, in `unit`.")],
    unit: Annotated[Unit, Field(description="The unit `value` is in (see list_units).")],
) -> Metres:
    return Metres(metres=_finite(value * METRES_PER[unit]))


@mcp.tool(
    title="Express metres in another unit",
    description="Express a length in metres in another known unit: the unrounded value and a "
    'text rounded to `precision` decimal places (metres 1609.344, unit "mi" gives "1.000 mi").',
    annotations=PURE,
)
def express_length(
    metres: Annotated[Length, Field(description="The length in metres.")],
    unit: Annotated[Unit, Field(description="The unit to express it in (see list_units).")],
    precision: Annotated[
        int,
        Field(ge=0, le=12, description="Decimal places in `text`."),
        BeforeValidator(_json_integer),
    ] = 3,
) -> Expressed:
    value = _finite(metres / METRES_PER[unit])
    return Expressed(value=value, unit=unit, text=f"{value:.{precision}f} {unit}")


if __name__ == "__main__":
    mcp.run("stdio")
