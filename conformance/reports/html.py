"""`--conformance-report PATH` also writes PATH.html: one page a reviewer takes in at a glance.

Per target: a matrix of requirement areas (the middle word of an id: MAN, WRK, TOOL, CALL,
...) by status, the tools exercised with a successful call, then each finding with its text,
fix and reproduction. Setup failures (the target did not load or start) come first, apart
from the rules a running target broke. Self-contained: inline CSS, no script, no font or
image fetched, so it opens from a CI artifact with no network. Every text from the run is
escaped: a finding quotes what a plugin wrote."""

from __future__ import annotations

from collections import Counter
from html import escape

from plugin_spec.json_types import JsonObject, as_object, objects_in

STATUSES = (
    "failed",
    "stale-baseline-entry",
    "warned",
    "not-exercised",
    "expected-failure",
    "passed",
    "skipped",
    "not-applicable",
)
_QUIET = ("passed", "skipped", "not-applicable")
_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#1d2125}
body{padding:0 1rem}
h1{font-size:1.6rem}h2{margin-top:2.5rem;border-bottom:2px solid #d0d7de;padding-bottom:.3rem}
table{border-collapse:collapse;margin:.8rem 0}
th,td{border:1px solid #d0d7de;padding:.25rem .6rem;text-align:center}
th:first-child,td:first-child{text-align:left}
.failed,.stale-baseline-entry{background:#ffd7d5}.warned{background:#fff1c2}
.not-exercised{background:#e8e0ff}.expected-failure{background:#eeeeee}.passed{background:#d8f5dd}
td.zero{background:#fff;color:#aaa}
.setup{border-left:6px solid #cf222e;background:#fff5f5;padding:.6rem 1rem;margin:1rem 0}
.finding{border-left:6px solid #d0d7de;padding:.2rem 1rem;margin:1rem 0}
.finding.failed{border-color:#cf222e;background:#fff}.finding.warned{border-color:#bf8700;background:#fff}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.6rem;font-size:13px}
.meta{color:#57606a}
"""


def html_report(document: JsonObject) -> str:
    """The page for one JSON report (conformance/report.py's document)."""
    records = objects_in(document["results"])
    run = as_object(document.get("run"))
    kit = as_object(document["kit"])
    targets = list(
        dict.fromkeys(
            [str(p["label"]) for p in objects_in(document["plugins"])]
            + [str(r["plugin"]) for r in records]
        )
    )
    totals = Counter(r["status"] for r in records)
    summary = ", ".join(f"{totals[s]} {s}" for s in STATUSES if totals[s])
    body = [
        "<h1>Plugin conformance report</h1>",
        f'<p class="meta">{escape(str(kit["name"]))} {escape(str(kit["version"]))}'
        + (f", started {escape(str(run['started']))}" if run.get("started") else "")
        + (f", run time {_seconds(run):.1f} s" if run.get("seconds") is not None else "")
        + f"</p><p>{len(targets)} target(s): {escape(summary) or 'no items'}</p>",
    ]
    tools = objects_in(document.get("tools") or [])
    for target in targets:
        body += _target(
            target,
            [r for r in records if r["plugin"] == target],
            [t for t in tools if t["target"] == target],
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width">'
        "<title>Plugin conformance report</title>"
        f"<style>{_STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _seconds(run: JsonObject) -> float:
    seconds = run["seconds"]
    if not isinstance(seconds, int | float | str):
        raise TypeError(f"run seconds is not a number: {seconds!r}")
    return float(seconds)


def _target(target: str, records: list[JsonObject], tools: list[JsonObject]) -> list[str]:
    parts = [f"<h2>{escape(target)}</h2>"]
    setup = [r for r in records if r.get("setup") and r["status"] == "failed"]
    for record in setup:
        parts.append(
            f'<div class="setup"><strong>Setup failure: {escape(str(record["requirement"]))} '
            f"{escape(str(record['title']))}</strong>: the kit could not load or start the target "
            "as its host does; what depends on that was skipped or ran another way."
            + "".join(_finding_text(f) for f in objects_in(record["findings"]))
            + _rerun(record)
            + "</div>"
        )
    parts.append(_matrix(records))
    if tools:
        exercised = sum(1 for t in tools if t.get("exercised"))
        parts.append(
            f"<p><strong>{exercised} of {len(tools)} tools exercised with a successful "
            "call</strong></p>"
        )
        rows = "".join(
            f"<tr><td>{escape(str(t['tool']))}</td><td>{t['calls']}</td>"
            f"<td>{t['successful_calls']}</td>"
            f"<td>{escape(str(t.get('last_error') or ''))}</td></tr>"
            for t in tools
        )
        parts.append(
            "<table><tr><th>tool</th><th>calls</th><th>successful</th><th>last error</th></tr>"
            f"{rows}</table>"
        )
    shown = [r for r in records if r["status"] not in _QUIET and r not in setup]
    if shown:
        parts.append("<h3>Findings</h3>")
    for record in shown:
        tool = f" [{escape(str(record['tool']))}]" if record.get("tool") else ""
        detail = "".join(_finding_text(f) for f in objects_in(record["findings"]))
        if record["status"] == "not-exercised":
            detail += f"<pre>{escape(str(record.get('not_exercised') or ''))}</pre>"
        elif record.get("reason"):
            detail += f"<p>{escape(str(record['reason']))}</p>"
        detail += _rerun(record)
        parts.append(
            f'<div class="finding {escape(str(record["status"]))}">'
            f"<h4>{escape(str(record['requirement']))}"
            f"{tool} {escape(str(record['title']))} ({escape(str(record['level']))}, "
            f"{escape(str(record['status']))})</h4>{detail}</div>"
        )
    return parts


def _matrix(records: list[JsonObject]) -> str:
    """Areas by status, each cell the count of items (coloured by status when not zero)."""
    counts: Counter[tuple[str, str]] = Counter()
    areas: dict[str, None] = {}
    for record in records:
        area = _area(str(record["requirement"]))
        areas[area] = None
        counts[(area, str(record["status"]))] += 1
    used = [s for s in STATUSES if any(counts[(a, s)] for a in areas)]
    head = "".join(f"<th>{escape(s)}</th>" for s in used)
    rows = []
    for area in areas:
        cells = "".join(
            f'<td class="{escape(s)}">{counts[(area, s)]}</td>'
            if counts[(area, s)]
            else '<td class="zero">0</td>'
            for s in used
        )
        rows.append(f"<tr><td>{escape(area)}</td>{cells}</tr>")
    return f'<table class="matrix"><tr><th>area</th>{head}</tr>{"".join(rows)}</table>'


def _rerun(record: JsonObject) -> str:
    """The command that runs the item again, when the record has one."""
    if not record.get("rerun"):
        return ""
    return f"<p><strong>Reproduce:</strong></p><pre>{escape(str(record['rerun']))}</pre>"


def _area(requirement: str) -> str:
    """FY-MAN-003 -> FY-MAN: the profile and area of an id."""
    return requirement.rsplit("-", 1)[0]


def _finding_text(finding: JsonObject) -> str:
    where = str(finding.get("file") or "")
    if finding.get("line"):
        where += f":{finding['line']}"
    if finding.get("pointer"):
        where += f" {finding['pointer']}"
    fix = (
        f"<p><strong>Fix:</strong> {escape(str(finding['fix']))}</p>" if finding.get("fix") else ""
    )
    return f'<p class="meta">{escape(where)}</p><pre>{escape(str(finding["message"]))}</pre>{fix}'
