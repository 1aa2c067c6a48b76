"""The catalog as the specification's reference page, docs/spec/requirements.md: generated,
so the page and what the kit enforces cannot drift apart (a test fails when it is stale)."""

from __future__ import annotations

from conformance.catalog import load_catalog

PAGE = "requirements.md"  # in docs/spec


def _fence(body: str) -> list[str]:
    language = "json" if body.lstrip().startswith(("{", "[", '"')) else "text"
    return [f"```{language}", body, "```"]


def reference_page() -> str:
    """Every requirement under a heading of its id (so its anchor is the id, lowercased)."""
    lines = [
        "# Requirement reference",
        "",
        "Every requirement the kit checks, in the catalog's order. This page is generated from",
        "`conformance/requirements.toml` by `plugin-conformance reference`; a test fails when it",
        "is stale. Each entry links to the section of the specification that explains the rule.",
        "`plugin-conformance explain ID` prints the same entry in a terminal.",
        "",
    ]
    for r in load_catalog().values():
        lines += [
            f"## {r.id}",
            "",
            f"**{r.title}** ({r.level.value}, {r.suites}; {', '.join(r.profiles)}"
            + (f"; MCP {', '.join(r.revisions)}" if r.revisions else "")
            + ")",
            "",
            r.text,
            "",
        ]
        if r.reason:
            lines += [f"Why: {r.reason}", ""]
        if r.fails:
            lines += [f"Fails {r.id}:", "", *_fence(r.fails), ""]
        if r.passes:
            lines += ["Passes:", "", *_fence(r.passes), ""]
        lines += [f"Fix: {r.hint}", "", f"Explained in [{r.source}]({r.source}).", ""]
    return "\n".join(lines)
