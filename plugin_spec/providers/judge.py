"""Each tool judged per provider: accepted as is, accepted after the provider's rewrite (with
every change listed), or rejected (with the rule); and a whole tool set judged against the
provider's per-request limits (spec: providers.md#verdicts).

Rewrites run first, in the rule file's order, on a copy of the schema, as the provider's SDK
rewrites before the request is sent; the rules that reject then judge what would be sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypedDict

from plugin_spec.json_types import JsonObject, ReadOnlyJson, object_copy
from plugin_spec.providers.checks import SET_CHECKS, TOOL_CHECKS, Hit, Subject
from plugin_spec.providers.rules import Outcome, Provider, Rule, all_providers


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    REWRITTEN = "accepted after rewrite"
    REJECTED = "rejected"


@dataclass(frozen=True)
class Noted:
    """One place a rule applies: a rejection, or one change of the rewrite."""

    rule: Rule
    hit: Hit

    def line(self) -> str:
        where = f" at {self.hit.pointer}" if self.hit.pointer else ""
        did = f": {self.hit.change}" if self.rule.outcome is Outcome.REWRITES else ""
        return f"{self.rule.id}: {self.hit.found}{where}{did}"

    def to_json(self) -> JsonObject:
        return {
            "rule": self.rule.id,
            "pointer": self.hit.pointer,
            "found": self.hit.found,
            **({"change": self.hit.change} if self.rule.outcome is Outcome.REWRITES else {}),
        }


@dataclass(frozen=True)
class Judgement:
    provider: str
    tool: str
    rejections: tuple[Noted, ...]
    changes: tuple[Noted, ...]
    sent: JsonObject = field(compare=False)  # the schema as the provider gets it

    @property
    def verdict(self) -> Verdict:
        if self.rejections:
            return Verdict.REJECTED
        return Verdict.REWRITTEN if self.changes else Verdict.ACCEPTED

    def to_json(self) -> JsonObject:
        return {
            "verdict": self.verdict.value,
            "rejections": [n.to_json() for n in self.rejections],
            "changes": [n.to_json() for n in self.changes],
        }


def judge_tool(provider: Provider, name: str, schema: ReadOnlyJson) -> Judgement:
    """How the provider takes one tool: its model-facing name and its input schema."""
    subject = Subject.of(name, object_copy(schema) if isinstance(schema, dict) else {})
    changes: list[Noted] = []
    rules = provider.tool_rules()
    for rule in (r for r in rules if r.outcome is Outcome.REWRITES):
        hits = TOOL_CHECKS[rule.check](rule, subject)
        for hit in hits:
            if hit.apply is not None:
                hit.apply()
        if hits:
            subject.rewalk()
        changes += [Noted(rule, hit) for hit in hits]
    rejections = [
        Noted(rule, hit)
        for rule in rules
        if rule.outcome is Outcome.REJECTS
        for hit in TOOL_CHECKS[rule.check](rule, subject)
    ]
    return Judgement(provider.id, name, tuple(rejections), tuple(changes), subject.schema)


def judge_set(provider: Provider, tools: Sequence[tuple[str, ReadOnlyJson]]) -> list[Noted]:
    """What keeps one request carrying all these tools (model-facing name, input schema) from
    the provider: too many tools, parameters or unions, or names it cannot tell apart. Limits
    on what schemas hold are counted on what the provider gets, after its rewrite."""
    return request_refusals(
        provider, [judge_tool(provider, name, schema) for name, schema in tools]
    )


def request_refusals(provider: Provider, judged: Sequence[Judgement]) -> list[Noted]:
    """judge_set for tools already judged one by one: the whole-request rules count on what
    each judgement would send."""
    sent = [(j.tool, j.sent) for j in judged]
    return [
        Noted(rule, hit)
        for rule in provider.set_rules()
        for hit in SET_CHECKS[rule.check](rule, sent)
    ]


def _capped(lines: list[str], limit: int) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"... and {len(lines) - limit} more"]


class Fit(TypedDict):
    """Whether one provider takes a tool set in one request, and what stands in the way."""

    fits: bool
    mode: str
    set: list[str]
    rejected: dict[str, list[str]]


def fits(tools: Sequence[tuple[str, ReadOnlyJson]], limit: int = 20) -> dict[str, Fit]:
    """Per provider: whether a snapshot of tools (name, input schema) can go in one request,
    and what stands in the way (at most `limit` lines per tool: a hostile schema can break a
    rule a million times)."""
    report: dict[str, Fit] = {}
    for provider in all_providers():
        judged = [judge_tool(provider, name, schema) for name, schema in tools]
        problems = _capped([n.line() for n in request_refusals(provider, judged)], limit)
        rejected = {
            j.tool: _capped([n.line() for n in j.rejections], limit) for j in judged if j.rejections
        }
        report[provider.id] = {
            "fits": not problems and not rejected,
            "mode": provider.mode,
            "set": problems,
            "rejected": rejected,
        }
    return report
