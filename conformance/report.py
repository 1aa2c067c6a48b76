"""CI reports: a JSON results file (one record per check) and a Markdown summary.

A record's status tells an item that had nothing to check (`not-applicable`) from one
another requirement's failure kept from running (`skipped`, with `blocked_by` naming it), and
both from one whose tool calls were every one refused (`not-exercised`). `tools` has one
object per target and tool with its calls and successful calls, `claims` each claim a tool
makes about its effects and whether a successful call verified it (exercised.py).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from conformance import __version__
from conformance.catalog import load_catalog
from conformance.exercised import claim_table, tool_table
from conformance.provider_report import provider_matrix_markdown
from conformance.reports.html import html_report
from conformance.reports.sarif import sarif_log
from plugin_spec.json_types import JsonObject, objects_in


@dataclass(frozen=True)
class RunInfo:
    """When the run started and ended (epoch seconds), and the folder it ran in, which
    SARIF's relative file locations start from."""

    started: float
    ended: float
    folder: str

    def to_json(self) -> JsonObject:
        when = datetime.fromtimestamp(self.started, UTC).isoformat(timespec="seconds")
        return {"started": when, "seconds": round(self.ended - self.started, 3), "dir": self.folder}


def report_paths(base: Path) -> tuple[Path, Path, Path]:
    """`--conformance-report PATH`: PATH.json, PATH.md and PATH.html (a .json/.md/.html
    suffix is replaced)."""
    stem = base.with_suffix("") if base.suffix in (".json", ".md", ".html") else base
    json_path, md_path, html_path = (
        stem.with_name(stem.name + x) for x in (".json", ".md", ".html")
    )
    return json_path, md_path, html_path


def write_reports(
    run: RunInfo,
    plugins: list[JsonObject],
    records: list[JsonObject],
    *,
    base: Path | None = None,
    sarif: Path | None = None,
    shard: JsonObject | None = None,
) -> None:
    """The JSON report of a run (with its shard, when it checked one), and what is made
    from it alone."""
    records = sorted(records, key=lambda r: (str(r["plugin"]), str(r["requirement"])))
    summary: JsonObject = {
        str(status): n for status, n in Counter(r["status"] for r in records).items()
    }
    document: JsonObject = {
        "kit": {"name": "ai-plugin-conformance", "version": __version__},
        "run": run.to_json(),
        "summary": summary,
        "plugins": [*plugins],
        "results": [*records],
        "tools": [*tool_table(records)],
        "claims": [*claim_table(plugins, records)],
        **({"shard": shard} if shard is not None else {}),
    }
    write_document(document, base=base, sarif=sarif)


def write_document(
    document: JsonObject, *, base: Path | None = None, sarif: Path | None = None
) -> None:
    """A JSON report (a run's, or shards merged) at base, with the Markdown, HTML and SARIF
    made from it alone, so that the reports of one run never disagree."""
    if base is not None:
        json_path, md_path, html_path = report_paths(base)
        json_path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(json_path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        plugins, records = objects_in(document["plugins"]), objects_in(document["results"])
        _write_atomically(md_path, markdown(plugins, records))
        _write_atomically(html_path, html_report(document))
    if sarif is not None:
        sarif.parent.mkdir(parents=True, exist_ok=True)
        log = sarif_log(document)
        _write_atomically(sarif, json.dumps(log, indent=2, ensure_ascii=False) + "\n")


def markdown(plugins: list[JsonObject], records: list[JsonObject]) -> str:
    lines = ["# Plugin conformance report", ""]
    lines += [
        "| plugin | profile | passed | warned | failed | expected | stale | skipped "
        "| not applicable | not exercised |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for plugin in plugins:
        counts = Counter(r["status"] for r in records if r["plugin"] == plugin["label"])
        lines.append(
            f"| {plugin['label']} | {_profile(plugin)} | {counts['passed']} | {counts['warned']} "
            f"| {counts['failed']} | {counts['expected-failure']} "
            f"| {counts['stale-baseline-entry']} | {counts['skipped']} "
            f"| {counts['not-applicable']} | {counts['not-exercised']} |"
        )
    lines += suite_times(records)
    lines += exercised_markdown(plugins, records)
    quiet = ("passed", "skipped", "not-applicable", "not-exercised")
    problems = [r for r in records if r["status"] not in quiet]
    setup = [r for r in problems if r.get("setup")]
    for heading, shown in (
        ("Setup failures: the target could not be loaded or started", setup),
        ("Findings", [r for r in problems if not r.get("setup")]),
    ):
        if not shown:
            continue
        lines += ["", f"## {heading}", ""]
        for record in shown:
            lines.append(
                f"### {record['plugin']} {record['requirement']} "
                f"({record['level']}, {record['status']}): {record['title']}"
            )
            lines.append("")
            for finding in objects_in(record["findings"]):
                where = str(finding["file"]) + (f":{finding['line']}" if finding["line"] else "")
                lines.append(f"- `{where}` `{finding['pointer'] or '/'}`:")
                lines += fenced(str(finding["message"]))
            if record.get("reason"):
                lines.append(f"- baseline: {record['reason']}")
            lines.append("")
    lines += provider_matrix_markdown(plugins)
    lines += _parameter_table(
        plugins,
        "file_parameters",
        "File-class parameters",
        {"class": "class", "route": "route"},
    )
    lines += _parameter_table(
        plugins,
        "path_like_parameters",
        "Parameters that look like paths but are not file-class (FY-FILE-004)",
        {"why": "because", "to make it file-class": "add"},
    )
    for plugin in plugins:
        if "v2_equivalent" in plugin:
            text = json.dumps(plugin["v2_equivalent"], indent=2, ensure_ascii=False)
            lines += [
                "",
                f"## {plugin['label']}: v2 equivalent of its v1 manifest",
                "",
                "<details><summary>manifest.json (schemaVersion 2)</summary>",
                "",
                "```json",
                text,
                "```",
                "",
                "</details>",
            ]
    return "\n".join(lines) + "\n"


def exercised_markdown(plugins: list[JsonObject], records: list[JsonObject]) -> list[str]:
    """How many tools a successful call exercised, each tool's calls, and the claims such
    calls verified (none called: no section)."""
    tools = tool_table(records)
    if not tools:
        return []
    exercised = sum(1 for t in tools if t["exercised"])
    lines = [
        "",
        "## Tool calls",
        "",
        f"{exercised} of {len(tools)} tools exercised with a successful call.",
        "",
        "| target | tool | calls | successful calls | last error |",
        "|---|---|---|---|---|",
    ]
    for t in tools:
        error = str(t.get("last_error", "")).replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {t['target']} | {t['tool']} | {t['calls']} | {t['successful_calls']} | {error} |"
        )
    claims = claim_table(plugins, records)
    if claims:
        lines += ["", "| target | tool | claim | verified | why not |", "|---|---|---|---|---|"]
        for c in claims:
            why = str(c.get("why", "")).replace("|", "\\|").replace("\n", " ")
            verified = "yes" if c["verified"] else "no"
            lines.append(f"| {c['target']} | {c['tool']} | {c['claim']} | {verified} | {why} |")
    return lines


def _parameter_table(
    plugins: list[JsonObject], key: str, heading: str, columns: dict[str, str]
) -> list[str]:
    """A section listing each plugin's summary[key] parameters (none: no section), with the
    plugin, tool and parameter, then columns (header -> member)."""
    found = [(p["label"], f) for p in plugins for f in objects_in(p.get(key, []))]
    if not found:
        return []
    header = ["plugin", "tool", "parameter", *columns]
    lines = ["", f"## {heading}", "", _row(header), "|" + "---|" * len(header)]
    for label, f in found:
        cells = [label, f["tool"], f["parameter"], *(f[m] for m in columns.values())]
        lines.append(_row([str(cell) for cell in cells]))
    return lines


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def fenced(text: str, indent: str = "  ") -> list[str]:
    """text as a code block inside a list item, its fence longer than any run of backticks
    in it: a finding quotes what a worker wrote, which must not become the report's markup
    (a heading, a comment hiding the findings after it)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [
        f"{indent}{fence}text",
        *(f"{indent}{line}" for line in text.splitlines()),
        f"{indent}{fence}",
    ]


def suite_times(records: list[JsonObject]) -> list[str]:
    """A table of the seconds each plugin's suites took, summed from item durations, so a
    slow suite (or a slow worker behind it) shows where a kit run spends its time."""
    totals: dict[tuple[str, str], list[float]] = {}
    for record in records:
        key = (str(record["plugin"]), str(record.get("suite", "")))
        spent = record.get("seconds")
        totals.setdefault(key, []).append(float(spent) if isinstance(spent, int | float) else 0.0)
    if not totals:
        return []
    lines = [
        "",
        "## Time per suite",
        "",
        "| plugin | suite | items | seconds | seconds per item |",
        "|---|---|---|---|---|",
    ]
    order = list(dict.fromkeys(r.suite for r in load_catalog().values()))
    rank = {suite: order.index(suite) if suite in order else len(order) for _, suite in totals}
    for (plugin, suite), seconds in sorted(totals.items(), key=lambda i: (i[0][0], rank[i[0][1]])):
        total = sum(seconds)
        lines.append(
            f"| {plugin} | {suite} | {len(seconds)} | {total:.2f} | {total / len(seconds):.4f} |"
        )
    return lines


def _write_atomically(path: Path, text: str) -> None:
    """Write beside the target and rename, so a crash never leaves half a report."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _profile(plugin: JsonObject) -> str:
    """The profile, and for an MCP server the protocol era it spoke."""
    era = plugin.get("era")
    return f"{plugin['profile']} ({era})" if era else str(plugin["profile"])
