"""The tools x providers matrix of a report (spec: providers.md#verdicts), in Markdown.

Each cell is one tool's verdict for one provider; the lines under the table say what each
rewrite changes and why a tool or the whole request is refused, rule by rule.
"""

from __future__ import annotations

import json
import re

from plugin_spec.json_types import JsonObject, JsonValue, as_object, objects_in
from plugin_spec.providers.rules import all_providers

# Per tool and provider, the details list this many rejections and as many changes; the rest
# are counted (an anyOf of 800,000 untyped branches is 800,000 rejections per provider). The
# JSON report keeps them all.
SHOWN = 20
LONGEST = 200  # characters of a pointer or a found value shown; a longer one is cut in the middle
UNSAFE = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def _plain(value: object) -> str:
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


def _cell(judged: JsonObject) -> str:
    if rejections := objects_in(judged["rejections"]):
        rules = ", ".join(dict.fromkeys(str(r["rule"]) for r in rejections))
        return f"rejected ({rules})"
    if changes := objects_in(judged["changes"]):
        count = len(changes)
        return f"rewritten ({count} change{'' if count == 1 else 's'})"
    return "accepted"


def rejected_tools(tools: JsonObject, provider_id: str) -> dict[str, list[str]]:
    """Each tool the provider rejects, with the rules it breaks: one of them in a request is
    enough for the provider to refuse the whole request."""
    return {
        tool: list(dict.fromkeys(str(r["rule"]) for r in rejections))
        for tool, verdicts in tools.items()
        if (rejections := _noted(verdicts, provider_id, "rejections"))
    }


def _noted(verdicts: JsonValue, provider_id: str, key: str) -> list[JsonObject]:
    """A tool's rejections or changes (key) for one provider, from its verdicts by provider."""
    return objects_in(as_object(as_object(verdicts)[provider_id])[key])


def _request_cell(providers: JsonObject, provider_id: str) -> str:
    """ "fits" only when the provider takes every tool of the request and its whole-request
    limits; otherwise the rules that keep it out."""
    rules = [str(r["rule"]) for r in objects_in(as_object(providers["request"])[provider_id])]
    rules += [
        rule
        for found in rejected_tools(as_object(providers["tools"]), provider_id).values()
        for rule in found
    ]
    return f"refused ({', '.join(dict.fromkeys(rules))})" if rules else "fits"


def _where(noted: JsonObject) -> str:
    return f" at {_code(str(noted['pointer']))}" if noted["pointer"] else ""


def _listed(head: str, noted: list[JsonObject], changes: bool) -> list[str]:
    """One line for each of the first SHOWN of a tool's rejections (or changes) for one
    provider, head naming the plugin, tool and provider; then a line that counts the rest."""
    lines = [
        f"{head}{n['rule']}: {_plain(_cut(str(n['found'])))}{_where(n)}: {n['change']}"
        if changes
        else f"{head}refused by {n['rule']}: {_plain(_cut(str(n['found'])))}{_where(n)}"
        for n in noted[:SHOWN]
    ]
    if len(noted) > SHOWN:
        what = "changes" if changes else "refusals"
        lines.append(f"{head}{len(noted) - SHOWN} more {what}, listed in the JSON report")
    return lines


def provider_matrix_markdown(plugins: list[JsonObject], heading: str = "##") -> list[str]:
    """The matrix of every plugin that loaded, with its details; nothing when none did."""
    providers = all_providers()
    judged = [p for p in plugins if _matrix(p).get("tools")]
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
        for tool, verdicts in as_object(_matrix(plugin)["tools"]).items():
            cells = " | ".join(_cell(as_object(as_object(verdicts)[p.id])) for p in providers)
            lines.append(f"| {label} | {_plain(tool)} | {cells} |")
        cells = " | ".join(_request_cell(_matrix(plugin), p.id) for p in providers)
        lines.append(f"| {label} | *one request with the built-ins* | {cells} |")
    details: list[str] = []
    for plugin in judged:
        label = _plain(plugin["label"])
        matrix = _matrix(plugin)
        tools = as_object(matrix["tools"])
        for p in providers:
            head = f"- {label}, the whole request, {p.title}: refused"
            rejected = rejected_tools(tools, p.id)
            if rejected:
                named = ", ".join(f"{_code(t)} ({', '.join(r)})" for t, r in rejected.items())
                details.append(f"{head}, since {p.title} rejects a tool it carries: {named}")
            for noted in objects_in(as_object(matrix["request"])[p.id]):
                details.append(f"{head} by {noted['rule']}: {_plain(_cut(str(noted['found'])))}")
        for tool, verdicts in tools.items():
            for p in providers:
                head = f"- {label} {_plain(tool)}, {p.title}: "
                details += _listed(head, _noted(verdicts, p.id, "rejections"), changes=False)
                details += _listed(head, _noted(verdicts, p.id, "changes"), changes=True)
    if details:
        lines += ["", "<details><summary>What each provider changes or refuses</summary>", ""]
        lines += [*details, "", "</details>"]
    return lines


def _matrix(plugin: JsonObject) -> JsonObject:
    """A plugin summary's provider matrix (provider_view.provider_matrix); none: empty."""
    return as_object(plugin.get("providers"))


def refused(plugins: list[JsonObject]) -> list[str]:
    """One line per plugin and provider that refuses its request, naming each rejected tool
    with its rules and each whole-request rule broken; none when every provider takes all."""
    lines = []
    for plugin in plugins:
        matrix = _matrix(plugin)
        if not matrix.get("tools"):
            continue
        for p in all_providers():
            reasons = [
                f"tool {tool!r} ({', '.join(rules)})"
                for tool, rules in rejected_tools(as_object(matrix["tools"]), p.id).items()
            ]
            requests = objects_in(as_object(matrix["request"])[p.id])
            reasons += [f"the whole request ({r['rule']})" for r in requests]
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
