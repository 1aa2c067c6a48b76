"""One requirement explained for a terminal (`plugin-conformance explain ID`,
`pytest --conformance-explain ID`), from the catalog, as the reference page is."""

from __future__ import annotations

import difflib
import textwrap

from conformance.catalog import Level, Requirement, load_catalog
from conformance.provider_report import rules_for

WIDTH = 92


class UnknownRequirement(LookupError):
    """The id is not in the catalog; the message suggests the nearest ids."""


def find(rid: str) -> Requirement:
    catalog = load_catalog()
    wanted = rid.strip().upper()
    if wanted in catalog:
        return catalog[wanted]
    near = difflib.get_close_matches(wanted, catalog, n=3, cutoff=0.6)
    suggestion = f"; did you mean {', '.join(near)}?" if near else ""
    raise UnknownRequirement(
        f"{rid!r} is not a requirement id{suggestion} (`plugin-conformance requirements` "
        "lists them all)"
    )


def _strength(level: Level) -> str:
    if level is Level.MUST:
        return "MUST: a finding fails the run"
    return "SHOULD: a finding warns, and fails the run under --conformance-strict"


def _block(title: str, body: str) -> list[str]:
    return [f"{title}:", *(f"    {line}" for line in body.splitlines()), ""]


def _wrapped(title: str, body: str) -> list[str]:
    return [
        f"{title}:",
        *textwrap.wrap(body, WIDTH - 4, initial_indent="    ", subsequent_indent="    "),
        "",
    ]


def explain(rid: str) -> str:
    """The level, the rule, why it exists, a failing and a passing example, and the fix."""
    r = find(rid)
    lines = [f"{r.id}  {r.title}", f"{_strength(r.level)}", ""]
    lines += _wrapped("Rule", r.text)
    if r.reason:
        lines += _wrapped("Why", r.reason)
    if r.fails:
        lines += _block(f"Fails {r.id}", r.fails)
    if r.passes:
        lines += _block("Passes", r.passes)
    lines += _wrapped("Fix", r.hint)
    if r.provider and r.suite != "tools":
        lines += _block(
            f"{r.provider} rules (each with its source and the day it was read)",
            "\n".join(rules_for(r.provider)),
        )
        lines.append(f"--conformance-provider {r.provider} makes {r.id} MUST.")
    elif r.provider:
        lines.append(f"--conformance-provider {r.provider} makes {r.id} MUST.")
    lines.append(f"Applies to: {', '.join(r.profiles)} ({r.suites})")
    if r.revisions:
        lines.append(f"MCP revisions: {', '.join(r.revisions)}")
    lines.append(f"Read more: {r.doc}")
    return "\n".join(lines)
