"""The terminal's account of a run's tool calls: how many tools a successful call exercised,
which were not exercised and why, and which claims such calls verified (exercised.py).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from conformance.exercised import claim_table, tool_table
from conformance.findings import cut, printable
from plugin_spec.json_types import JsonObject

SHOWN = 10  # tools, and claims, listed by name before the rest are counted
REASON_CHARS = 160


def tell_calls(
    terminal: pytest.TerminalReporter,
    plugins: Iterable[JsonObject],
    records: list[JsonObject],
    strict: bool,
) -> None:
    """A "tool calls" section, when the run called (or meant to call) any tool."""
    tools = tool_table(records)
    claims = claim_table(plugins, records)
    if not tools and not claims:
        return
    idle = [t for t in tools if not t["exercised"]]
    terminal.section("tool calls", sep="-", yellow=bool(idle), red=bool(idle) and strict)
    write = terminal.write_line
    exercised = len(tools) - len(idle)
    write(f"{exercised} of {len(tools)} tools exercised with a successful call")
    for tool in idle[:SHOWN]:
        last = f"; the last answer: {tool['last_error']}" if tool.get("last_error") else ""
        how = f"{tool['calls']} calls, none succeeded{cut(last, REASON_CHARS)}"
        if not tool["calls"]:
            not_called = str(tool.get("not_called", "no item called it"))
            how = f"not called ({cut(not_called, REASON_CHARS)})"
        if tool.get("accepted"):
            how += " (accepted in the baseline)"
        write(printable(f"  not exercised: {tool['target']} {tool['tool']}: {how}", one_line=True))
    if len(idle) > SHOWN:
        write(f"  ... and {len(idle) - SHOWN} more (the JSON report lists them all)")
    if any(tool["calls"] and not tool.get("accepted") for tool in idle):
        write(
            "  give arguments they accept with --examples-file, or accept them in the baseline"
            + (" (--conformance-strict fails the run for them)" if strict else "")
        )
    if not claims:
        return
    verified = [c for c in claims if c["verified"]]
    write(f"{len(verified)} of {len(claims)} claims verified by a successful call")
    unverified = [c for c in claims if not c["verified"]]
    for claim in unverified[:SHOWN]:
        write(
            printable(
                f"  not verified: {claim['target']} {claim['tool']} {claim['claim']}: "
                f"{cut(str(claim.get('why', '')), REASON_CHARS)}",
                one_line=True,
            )
        )
    if len(unverified) > SHOWN:
        write(f"  ... and {len(unverified) - SHOWN} more (the JSON report lists them all)")
