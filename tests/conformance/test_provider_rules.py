"""Every provider rule is reported by the kit: a FengYu v2 plugin built from the rule's own
`fails` example (plugin_spec/providers/*.toml) gets the provider's FY-PROV requirement, and
its findings name exactly that rule among the provider's rules; a rewrite is no finding, but
the report's provider matrix lists the change under the rule's id.

Only the static suite runs (`-m manifest`): the plugins have no worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plugin_spec.providers.rules import Outcome, Rule, all_providers
from tests.conftest import KitResult, plugin_with_manifest, tools_manifest

REQUIREMENT = {"openai": "FY-PROV-001", "anthropic": "FY-PROV-002", "gemini": "FY-PROV-003"}
RULES = [rule for provider in all_providers() for rule in provider.rules]
STATIC = ("-m", "manifest", "-n", "0")

# What else a rule's example cannot help breaking, because FengYu v2 forbids it as well:
# FY-MAN-006 takes only names of ^[a-zA-Z0-9_-]{1,64}$ (the example's name is the rule's
# problem), FY-MAN-010 only an object at a method schema's root, and FY-MAN-011 only the
# subset of type/title/description/properties/items/required/enum/nullable/minimum/maximum and
# a boolean additionalProperties, so a JSON Schema keyword the provider refuses or rewrites is
# outside it too. Any other requirement reported beside FY-PROV is a finding of this test.
SUBSET = {"FY-MAN-011"}
ALLOWED_EXTRAS: dict[str, set[str]] = {
    "OPENAI-OPEN": SUBSET,  # additionalProperties as a schema
    "OPENAI-KEYWORDS": SUBSET,  # not, const
    "OPENAI-FORMATS": SUBSET,  # format
    "ANTHROPIC-ONEOF": SUBSET,  # oneOf
    "ANTHROPIC-REF-SIBLINGS": SUBSET,  # $ref, $defs, default
    "ANTHROPIC-UNIONS": SUBSET,  # a type list
    "GEMINI-KEYWORDS": SUBSET,  # const
    "GEMINI-TYPE-ARRAYS": SUBSET,  # a type list
}

# Rules the profile enforces itself, so that a tool breaking them is the profile's finding and
# no provider judges it (spec: providers.md#the-whole-request): the provider's requirement is
# skipped, naming the profile's requirements it waits on.
PROFILE_FIRST: dict[str, set[str]] = {
    "OPENAI-NAME": {"FY-MAN-006"},  # excel.analyze
    "ANTHROPIC-NAME": {"FY-MAN-006"},  # item:get
    "OPENAI-ROOT": {"FY-MAN-010", *SUBSET},  # anyOf at the root, no type
    "ANTHROPIC-ROOT": {"FY-MAN-010"},  # type array at the root
}


def example_plugin(tmp_path: Path, rule: Rule) -> Path:
    """A FengYu v2 plugin whose tools are the rule's example: each named tool has its own
    method, whose inputSchema is the example's."""
    schema = rule.fails.input_schema
    manifest = tools_manifest(
        f"fixture.{rule.id.lower()}",
        {name: schema for name in rule.fails.tool_names()},
        rule.id,
        f"Breaks {rule.id}.",
    )
    return plugin_with_manifest(tmp_path, manifest, rule.id.lower())


def rules_named(result: KitResult, requirement: str, provider: str) -> set[str]:
    """The provider's rules that the requirement's findings name (each fix starts with one)."""
    ids = {r.id for r in RULES if r.provider == provider}
    return {f["fix"].split(":")[0] for f in result.findings(requirement)} & ids


def changes(result: KitResult, tool: str, provider: str) -> list[dict[str, Any]]:
    return result.report["plugins"][0]["providers"]["tools"][tool][provider]["changes"]


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_the_kit_reports_the_rule(run_kit, tmp_path: Path, rule: Rule) -> None:
    requirement = REQUIREMENT[rule.provider]
    result = run_kit([example_plugin(tmp_path, rule)], *STATIC)

    reported = result.reported()
    extras = reported - {"FY-PROV-001", "FY-PROV-002", "FY-PROV-003"}
    if rule.id in PROFILE_FIRST:
        assert extras == PROFILE_FIRST[rule.id]
        (record,) = [r for r in result.report["results"] if r["requirement"] == requirement]
        assert record["status"] == "skipped"
        assert set(record["blocked_by"]) == {"FY-MAN-006", "FY-MAN-010"}
        return
    assert extras == ALLOWED_EXTRAS.get(rule.id, set())
    if rule.outcome is Outcome.REJECTS:
        assert result.statuses()[requirement] == "warned"
        assert rules_named(result, requirement, rule.provider) == {rule.id}
    else:
        assert result.statuses()[requirement] == "passed", result.findings(requirement)
        tool = rule.fails.tool_names()[0]
        assert rule.id in {c["rule"] for c in changes(result, tool, rule.provider)}


def plain_rejection(provider: str) -> Rule:
    """The provider's first rejecting rule whose example breaks nothing else."""
    return next(
        r
        for r in RULES
        if r.provider == provider
        and r.outcome is Outcome.REJECTS
        and r.id not in ALLOWED_EXTRAS
        and r.id not in PROFILE_FIRST
    )


@pytest.mark.parametrize("provider", list(REQUIREMENT))
def test_a_chosen_provider_makes_its_rejections_fail(
    run_kit, tmp_path: Path, provider: str
) -> None:
    rule = plain_rejection(provider)
    requirement = REQUIREMENT[provider]
    plugin = example_plugin(tmp_path, rule)

    warned = run_kit([plugin], *STATIC)
    assert warned.statuses()[requirement] == "warned"
    assert warned.result.ret == 0
    failed = run_kit([plugin], *STATIC, "--conformance-provider", provider)
    assert failed.statuses()[requirement] == "failed"
    assert failed.result.ret == 1
    assert rules_named(failed, requirement, provider) == {rule.id}
    others = set(REQUIREMENT.values()) - {requirement}
    assert not {rid for rid in others if failed.statuses()[rid] == "failed"}
