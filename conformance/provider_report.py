"""The tools x providers matrix of a report (spec: providers.md#verdicts), in Markdown.

Each cell is one tool's verdict for one provider; the lines under the table say what each
rewrite changes and why a tool or the whole request is refused, rule by rule.
"""

from __future__ import annotations

import json
import re
from typing import Any

from plugin_spec.providers.rules import all_providers

# Per tool and provider, the details list this many rejections and as many changes; the rest
# are counted (an anyOf of 800,000 untyped branches is 800,000 rejections per provider). The
# JSON report keeps them all.
SHOWN = 20
LONGEST = 200  # characters of a pointer or a found value shown; a longer one is cut in the middle
UNSAFE = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def _plain(value: Any) -> str:
    """A plugin's text (label, tool name, what a rule found) on one Markdown line: control
    characters written as JSON escapes, and | < > & unable to end a table cell, open HTML or
    close the details block."""
    text = _escaped(str(value))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|")


def _escaped(text: str) -> str:
    """text with each control or line-breaking character written as its JSON escape."""
    return UNSAFE.sub(lambda m: str(json.dumps(m.group()))[1:-1], text)


def _cut(text: str) -> str:
    if len(text) <= LONGEST:
        return text
    return f"{text[: LONGEST // 2]}...({len(text) - LONGEST} characters)...{text[-LONGEST // 2 :]}"


def _code(text: str) -> str:
    """text as a code span that no backtick in it can close, on one line."""
    text = _escaped(_cut(text))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(judged: dict[str, Any]) -> str:
    if judged["rejections"]:
        rules = ", ".join(dict.fromkeys(r["rule"] for r in judged["rejections"]))
        return f"rejected ({rules})"
    if judged["changes"]:
        count = len(judged["changes"])
        return f"rewritten ({count} change{'' if count == 1 else 's'})"
    return "accepted"


def rejected_tools(tools: dict[str, dict[str, Any]], provider_id: str) -> dict[str, list[str]]:
    """Each tool the provider rejects, with the rules it breaks: one of them in a request is
    enough for the provider to refuse the whole request."""
    return {
        tool: list(dict.fromkeys(r["rule"] for r in verdicts[provider_id]["rejections"]))
        for tool, verdicts in tools.items()
        if verdicts[provider_id]["rejections"]
    }


def _request_cell(providers: dict[str, Any], provider_id: str) -> str:
    """ "fits" only when the provider takes every tool of the request and its whole-request
    limits; otherwise the rules that keep it out."""
    rules = [r["rule"] for r in providers["request"][provider_id]]
    rules += [
        rule for found in rejected_tools(providers["tools"], provider_id).values() for rule in found
    ]
    return f"refused ({', '.join(dict.fromkeys(rules))})" if rules else "fits"


def _where(noted: dict[str, Any]) -> str:
    return f" at {_code(noted['pointer'])}" if noted["pointer"] else ""


def _listed(head: str, noted: list[dict[str, Any]], changes: bool) -> list[str]:
    """One line for each of the first SHOWN of a tool's rejections (or changes) for one
    provider, head naming the plugin, tool and provider; then a line that counts the rest."""
    lines = [
        f"{head}{n['rule']}: {_plain(_cut(n['found']))}{_where(n)}: {n['change']}"
        if changes
        else f"{head}refused by {n['rule']}: {_plain(_cut(n['found']))}{_where(n)}"
        for n in noted[:SHOWN]
    ]
    if len(noted) > SHOWN:
        what = "changes" if changes else "refusals"
        lines.append(f"{head}{len(noted) - SHOWN} more {what}, listed in the JSON report")
    return lines


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
        label = _plain(plugin["label"])
        for tool, verdicts in plugin["providers"]["tools"].items():
            cells = " | ".join(_cell(verdicts[p.id]) for p in providers)
            lines.append(f"| {label} | {_plain(tool)} | {cells} |")
        cells = " | ".join(_request_cell(plugin["providers"], p.id) for p in providers)
        lines.append(f"| {label} | *one request with the built-ins* | {cells} |")
    details: list[str] = []
    for plugin in judged:
        label = _plain(plugin["label"])
        for p in providers:
            head = f"- {label}, the whole request, {p.title}: refused"
            rejected = rejected_tools(plugin["providers"]["tools"], p.id)
            if rejected:
                named = ", ".join(f"{_code(t)} ({', '.join(r)})" for t, r in rejected.items())
                details.append(f"{head}, since {p.title} rejects a tool it carries: {named}")
            for noted in plugin["providers"]["request"][p.id]:
                details.append(f"{head} by {noted['rule']}: {_plain(_cut(noted['found']))}")
        for tool, verdicts in plugin["providers"]["tools"].items():
            for p in providers:
                head = f"- {label} {_plain(tool)}, {p.title}: "
                details += _listed(head, verdicts[p.id]["rejections"], changes=False)
                details += _listed(head, verdicts[p.id]["changes"], changes=True)
    if details:
        lines += ["", "<details><summary>What each provider changes or refuses</summary>", ""]
        lines += [*details, "", "</details>"]
    return lines


def refused(plugins: list[dict[str, Any]]) -> list[str]:
    """One line per plugin and provider that refuses its request, naming each rejected tool
    with its rules and each whole-request rule broken; none when every provider takes all."""
    lines = []
    for plugin in plugins:
        matrix = plugin.get("providers", {})
        if not matrix.get("tools"):
            continue
        for p in all_providers():
            reasons = [
                f"tool {tool!r} ({', '.join(rules)})"
                for tool, rules in rejected_tools(matrix["tools"], p.id).items()
            ]
            reasons += [f"the whole request ({r['rule']})" for r in matrix["request"][p.id]]
            if reasons:
                lines.append(f"{plugin['label']}: {p.title} rejects {'; '.join(reasons)}")
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
