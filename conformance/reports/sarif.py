"""`--conformance-sarif PATH`: the run's findings as SARIF 2.1.0, for code scanning.

One rule per requirement the run judged (its title, text, fix, reason and the section of
docs/spec that explains it; MUST is `error`, SHOULD `warning`), one result per finding, at
the file and line the finding names. A finding's identity across runs is its partial
fingerprint: the target, requirement, tool, file and JSON pointer (never the message, which
may quote a seed or a temporary path). An item the baseline accepts is a suppressed result;
an item whose every call was refused is `open` (the kit could not tell). A setup failure (the
target did not load or start) is also a tool execution notification, so a reviewer sees that
the rest was not checked rather than a clean run."""

from __future__ import annotations

import hashlib
from collections import Counter
from importlib.metadata import PackageNotFoundError, metadata
from pathlib import Path

from conformance.catalog import Requirement, load_catalog
from conformance.reports.locations import place
from plugin_spec.json_types import JsonArray, JsonObject, as_object, objects_in

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT = "conformanceItem/v1"
_LEVEL = {"failed": "error", "stale-baseline-entry": "error", "warned": "warning"}
_SHOWN = ("failed", "stale-baseline-entry", "warned", "expected-failure", "not-exercised")


def sarif_log(document: JsonObject) -> JsonObject:
    """The SARIF log of one JSON report (conformance/report.py's document)."""
    catalog = load_catalog()
    run_info = as_object(document.get("run"))
    run_dir = str(run_info.get("dir") or ".")
    records = [r for r in objects_in(document["results"]) if r["status"] in _SHOWN]
    used = sorted(
        {rid for r in records if isinstance(rid := r["requirement"], str) and rid in catalog}
    )
    rules: JsonArray = [_rule(catalog[rid]) for rid in used]
    index = {rid: i for i, rid in enumerate(used)}
    seen: Counter[str] = Counter()
    results: JsonArray = [
        result for record in records for result in _results(record, index, run_dir, seen)
    ]
    notifications: JsonArray = [
        {
            "level": "error",
            "message": {
                "text": f"{r['plugin']}: {r['requirement']} {r['title']} failed, so "
                "what depends on it was not checked"
            },
            "descriptor": {"id": r["requirement"]},
        }
        for r in records
        if r.get("setup") and r["status"] == "failed"
    ]
    invocation: JsonObject = {"executionSuccessful": True}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    base = Path(run_dir).resolve().as_uri() + "/"
    kit = as_object(document["kit"])
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": kit["name"],
                        "version": kit["version"],
                        "rules": rules,
                    }
                },
                "invocations": [invocation],
                "originalUriBaseIds": {"SRCROOT": {"uri": base}},
                "results": results,
            }
        ],
    }


def _rule(requirement: Requirement) -> JsonObject:
    level = "error" if requirement.level.value == "MUST" else "warning"
    help_text = (
        f"{requirement.hint}\n\nWhy: {requirement.reason}\n\nSpecification: {requirement.doc}"
    )
    rule: JsonObject = {
        "id": requirement.id,
        "name": "".join(word.capitalize() for word in requirement.title.split()),
        "shortDescription": {"text": requirement.title},
        "fullDescription": {"text": requirement.text},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": level},
        "properties": {
            "level": requirement.level.value,
            "specification": requirement.doc,
            "setup": requirement.setup,
            "tags": [requirement.suite, *requirement.profiles],
        },
    }
    if (docs := _documentation_url()) is not None:
        rule["helpUri"] = f"{docs.rstrip('/')}/{requirement.doc.removeprefix('docs/')}"
    return rule


def _results(
    record: JsonObject, index: dict[str, int], run_dir: str, seen: Counter[str]
) -> list[JsonObject]:
    findings = objects_in(record["findings"]) or [
        {"message": record.get("reason") or record["title"], "file": "", "pointer": ""}
    ]
    return [_result(record, finding, index, run_dir, seen) for finding in findings]


def _result(
    record: JsonObject,
    finding: JsonObject,
    index: dict[str, int],
    run_dir: str,
    seen: Counter[str],
) -> JsonObject:
    status = record["status"]
    text = str(finding["message"])
    if finding.get("fix"):
        text += f"\nFix: {finding['fix']}"
    if status == "not-exercised":
        text = f"not exercised: {record.get('not_exercised') or text}"
    properties: JsonObject = {
        "target": record["plugin"],
        "status": status,
        "setup": bool(record.get("setup")),
    }
    result: JsonObject = {
        "ruleId": record["requirement"],
        "message": {"text": text},
        "partialFingerprints": {FINGERPRINT: _fingerprint(record, finding, seen)},
        "properties": properties,
    }
    if isinstance(rid := record["requirement"], str) and rid in index:
        result["ruleIndex"] = index[rid]
    if status == "not-exercised":
        result |= {"kind": "open", "level": "none"}
    else:
        result |= {"kind": "fail", "level": _LEVEL.get(str(status), "error")}
    if status == "expected-failure":
        why = record.get("reason") or "listed in the baseline"
        result["suppressions"] = [{"kind": "external", "justification": why}]
    if record.get("tool"):
        properties["tool"] = record["tool"]
    if record.get("rerun"):
        properties["rerun"] = record["rerun"]
    where = place(record, finding, run_dir)
    if where is not None:
        location: JsonObject = {"uri": where.file}
        if where.inside:
            location["uriBaseId"] = "SRCROOT"
        physical: JsonObject = {"artifactLocation": location}
        if where.line:
            physical["region"] = {"startLine": int(where.line)}
        result["locations"] = [{"physicalLocation": physical}]
    else:
        logical: JsonObject = {"name": record["plugin"], "kind": "module"}
        result["locations"] = [{"logicalLocations": [logical]}]
    return result


def _fingerprint(record: JsonObject, finding: JsonObject, seen: Counter[str]) -> str:
    """Stable across runs: what the finding is about, not how its message reads; a second
    finding with the same identity in one run is told apart by its rank."""
    parts = [str(record["plugin"]), str(record["requirement"]), str(record.get("tool") or "")]
    parts += [str(finding.get("file") or ""), str(finding.get("pointer") or "")]
    key = "\0".join(parts)
    seen[key] += 1
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"{digest}:{seen[key]}"


def _documentation_url() -> str | None:
    """The kit's documentation, where its distribution names one (Project-URL)."""
    try:
        urls = metadata("ai-plugin-conformance").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = str(entry).partition(",")
        if label.strip().lower() == "documentation" and url.strip():
            return url.strip()
    return None
