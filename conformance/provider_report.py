"""The tools x providers matrix of a report (spec: providers.md#verdicts), in Markdown.

Each cell is one tool's verdict for one provider; the lines under the table say what each
rewrite changes and why a tool or the whole request is refused, rule by rule.
"""

from __future__ import annotations

from typing import Any

from plugin_spec.providers.rules import all_providers


def _cell(judged: dict[str, Any]) -> str:
    if judged["rejections"]:
        rules = ", ".join(dict.fromkeys(r["rule"] for r in judged["rejections"]))
        return f"rejected ({rules})"
    if judged["changes"]:
        count = len(judged["changes"])
        return f"rewritten ({count} change{'' if count == 1 else 's'})"
    return "accepted"


def _request_cell(refusals: list[dict[str, Any]]) -> str:
    if refusals:
        return f"refused ({', '.join(dict.fromkeys(r['rule'] for r in refusals))})"
    return "fits"


def _where(noted: dict[str, Any]) -> str:
    return f" at `{noted['pointer']}`" if noted["pointer"] else ""


def provider_matrix_markdown(plugins: list[dict[str, Any]], heading: str = "##") -> list[str]:
    """The matrix of every plugin that loaded, with its details; nothing when none did."""
    providers = all_providers()
    judged = [p for p in plugins if p.get("providers", {}).get("tools")]
    if not judged:
        return []
    lines = [
        "",
        f"{heading} Will the providers take these tools?",
        "",
        "Modes: " + "; ".join(f"{p.title}: {p.mode}" for p in providers) + ".",
        "",
        "| plugin | tool | " + " | ".join(p.title for p in providers) + " |",
        "|---|---|" + "---|" * len(providers),
    ]
    for plugin in judged:
        for tool, verdicts in plugin["providers"]["tools"].items():
            cells = " | ".join(_cell(verdicts[p.id]) for p in providers)
            lines.append(f"| {plugin['label']} | {tool} | {cells} |")
        request = plugin["providers"]["request"]
        cells = " | ".join(_request_cell(request[p.id]) for p in providers)
        lines.append(f"| {plugin['label']} | *one request with the built-ins* | {cells} |")
    details: list[str] = []
    for plugin in judged:
        for p in providers:
            for noted in plugin["providers"]["request"][p.id]:
                details.append(
                    f"- {plugin['label']}, the whole request, {p.title}: refused by "
                    f"{noted['rule']}: {noted['found']}"
                )
        for tool, verdicts in plugin["providers"]["tools"].items():
            for p in providers:
                for noted in verdicts[p.id]["rejections"]:
                    details.append(
                        f"- {plugin['label']} {tool}, {p.title}: refused by {noted['rule']}: "
                        f"{noted['found']}{_where(noted)}"
                    )
                for noted in verdicts[p.id]["changes"]:
                    details.append(
                        f"- {plugin['label']} {tool}, {p.title}: {noted['rule']}: "
                        f"{noted['found']}{_where(noted)}: {noted['change']}"
                    )
    if details:
        lines += ["", "<details><summary>What each provider changes or refuses</summary>", ""]
        lines += [*details, "", "</details>"]
    return lines


RULES_BEGIN = "<!-- provider rules: generated from plugin_spec/providers/*.toml -->"
RULES_END = "<!-- end of provider rules -->"


def rule_tables() -> list[str]:
    """Every provider's rules as a table, for docs/spec/providers.md (a test keeps the page in
    step with the data files)."""
    lines = [RULES_BEGIN]
    for provider in all_providers():
        lines += [
            "",
            f"### {provider.title} rules",
            "",
            f"Judged as: {provider.mode}.",
            "",
            "| rule | outcome | what it says | source | read |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| `{r.id}` | {r.outcome.value} | {r.text} | [{r.source.title}]({r.source.url}) "
            f"| {r.read} |"
            for r in provider.rules
        ]
    return [*lines, "", RULES_END]


def rules_for(provider_id: str) -> list[str]:
    """One provider's rules as plain lines, for `plugin-conformance explain`."""
    provider = next(p for p in all_providers() if p.id == provider_id)
    return [
        f"{r.id} ({r.outcome.value}): {r.text} [{r.source.url}, read {r.read}]"
        for r in provider.rules
    ]
