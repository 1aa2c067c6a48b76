"""Which tools a run exercised with a successful call, and which claims such calls verified.

A check that only ever saw its tool refuse (a generated string that is no time zone, a git
tool before its working folder is set) examined nothing: a pass there would claim what
nobody checked. So every tool call the run makes is counted, per target and tool, and each
item's record carries the calls made while it ran (calls are counted in the process that
makes them, and with -n the controller adds the items' counts up). The reports then say,
per target and tool, how many calls were made and how many succeeded, and, per claim a tool
makes about itself (readOnlyHint, destructiveHint, openWorldHint, a FengYu effect), whether a
check judged it on a successful call.
"""

from __future__ import annotations

from collections.abc import Iterable

from conformance.fengyu.manifest import AiTool, FengYuPlugin
from conformance.profiles import Plugin, is_mcp
from plugin_spec import mcp
from plugin_spec.json_types import JsonObject, JsonValue, as_array, objects_in

# The requirements whose items judge that a tool's valid calls are answered: a tool whose
# calls all failed is `not-exercised` there.
EXERCISING = ("MCP-CALL-001", "FY-TOOL-001")
# Statuses of an item that judged what it checks.
JUDGED = ("passed", "warned", "failed")
NOT_JUDGED = "no requirement of the kit judges it"
# The annotation values that restrict what a tool's calls may do (the others allow anything).
RESTRICTING = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


def tool_table(records: Iterable[JsonObject]) -> list[JsonObject]:
    """One object per target and tool the run called or meant to call (an item of
    EXERCISING): target, tool, calls, successful_calls, exercised, and the last error of a
    call that failed."""
    rows: dict[tuple[JsonValue, JsonValue], JsonObject] = {}

    def row(target: JsonValue, tool: JsonValue) -> JsonObject:
        return rows.setdefault(
            (target, tool),
            {"target": target, "tool": tool, "calls": 0, "successful_calls": 0},
        )

    for record in records:
        tool = record.get("tool")
        if record.get("requirement") in EXERCISING and isinstance(tool, str):
            entry = row(record["plugin"], tool)
            if record.get("status") in ("skipped", "not-applicable"):
                entry["not_called"] = (
                    f"{record['requirement']} {record['status']}: {record.get('reason')}"
                )
            if record.get("not_exercised"):  # its valid calls' answer says more than any
                entry["not_exercised"] = record["not_exercised"]
                entry["last_valid_error"] = record.get("last_error", "")
                entry["accepted"] = record.get("status") == "expected-failure"  # baselined
        for made in objects_in(record.get("calls")):
            entry = row(made["target"], made["tool"])
            entry["calls"] = _count(entry["calls"]) + _count(made["calls"])
            entry["successful_calls"] = _count(entry["successful_calls"]) + _count(
                made["successful_calls"]
            )
            if made.get("last_error"):
                entry["last_error"] = made["last_error"]
    for entry in rows.values():
        entry["exercised"] = _count(entry["successful_calls"]) > 0
        if valid := entry.pop("last_valid_error", ""):
            entry["last_error"] = valid
    return [rows[key] for key in sorted(rows, key=lambda key: (str(key[0]), str(key[1])))]


def _count(value: JsonValue) -> int:
    """A count of a record (an int in every record the kit writes)."""
    return value if isinstance(value, int) else 0


def claims_of(plugin: Plugin) -> list[JsonObject]:
    """The claims each tool makes about what its calls do not do, with the requirements that
    judge them (none: the kit does not judge it): for an MCP tool its annotations
    readOnlyHint: true, destructiveHint: false and openWorldHint: false where given, for a
    FengYu tool its effect read or write. The other values (and effect external) allow
    everything, so there is nothing to verify."""
    found: list[JsonObject] = []
    for tool in plugin.tools:
        if not isinstance(tool.name, str):
            continue
        if is_mcp(plugin) and hasattr(tool, "definition"):
            annotations = tool.definition.get("annotations")
            if not isinstance(annotations, dict):
                continue
            read_only = mcp.annotation(tool.definition, "readOnlyHint")
            for hint, restricting in RESTRICTING.items():
                value = annotations.get(hint)
                if value is not restricting or (hint == "destructiveHint" and read_only):
                    continue  # destructiveHint means something only when not read-only
                judged = (hint == "readOnlyHint" and value) or (
                    hint == "openWorldHint" and not value and read_only
                )
                found.append(
                    _claim(tool.name, f"{hint}: {str(value).lower()}", judged, "MCP-ANN-001")
                )
        elif isinstance(plugin, FengYuPlugin) and isinstance(tool, AiTool):
            effect = tool.effect if isinstance(tool.effect, str) else "external"
            rules = {"read": ("FY-EFF-001", "FY-EFF-003"), "write": ("FY-EFF-002", "FY-EFF-003")}
            if effect not in rules:
                continue
            found.append(
                {
                    "tool": tool.name,
                    "claim": f"effect: {effect}",
                    "requirements": [*rules.get(effect, ())],
                }
            )
    return found


def _claim(tool: str, claim: str, judged: bool, requirement: str) -> JsonObject:
    return {"tool": tool, "claim": claim, "requirements": [requirement] if judged else []}


def claim_table(plugins: Iterable[JsonObject], records: Iterable[JsonObject]) -> list[JsonObject]:
    """Each claim of each target's tools: verified when every requirement that judges it
    judged it on this tool and the tool had a successful call; otherwise why not."""
    records = list(records)
    by_item = {(r["plugin"], r["requirement"], r.get("tool")): r for r in records}
    exercised = {(t["target"], t["tool"]) for t in tool_table(records) if t["exercised"]}
    table: list[JsonObject] = []
    for plugin in plugins:
        target = plugin["label"]
        for claim in objects_in(plugin.get("claims", [])):
            tool, requirements = claim["tool"], claim["requirements"]
            why = "" if requirements else NOT_JUDGED
            for rid in as_array(requirements):
                record = by_item.get((target, rid, tool))
                if why:
                    break
                if record is None:
                    why = f"{rid} did not run on it in this run"
                elif record["status"] not in JUDGED:
                    said = record.get("not_exercised") or record.get("reason") or ""
                    why = f"{rid} {record['status']}: {said}"
            if not why and (target, tool) not in exercised:
                why = "no call of the tool succeeded"
            table.append(
                {
                    "target": target,
                    "tool": tool,
                    "claim": claim["claim"],
                    "requirements": requirements,
                    "verified": not why,
                    **({"why": why.rstrip(": ")} if why else {}),
                }
            )
    return table
