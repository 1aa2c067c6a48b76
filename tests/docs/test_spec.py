"""The specification under docs/ stays the one a user can read: every requirement's source
resolves to a section that names it, the reference page is the catalog's, and no relative
link in the docs or the README is broken."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.catalog import SPEC_DIR, load_catalog
from conformance.provider_report import RULES_BEGIN, RULES_END, rule_tables
from conformance.reference_page import PAGE, reference_page
from tests.conftest import REPO
from tests.docs.markdown_links import anchors, broken, links

SPEC = REPO / SPEC_DIR
REQUIREMENTS = list(load_catalog().values())
DOCS = [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md"]


@pytest.mark.parametrize("r", REQUIREMENTS, ids=lambda r: r.id)
def test_the_source_is_a_section_of_the_spec_that_names_the_requirement(r) -> None:
    file, _, anchor = r.source.partition("#")
    assert file.endswith(".md") and anchor, f"{r.id}: source {r.source!r} is not FILE.md#anchor"
    path = SPEC / file
    assert path.is_file(), f"{r.id}: {SPEC_DIR}/{file} does not exist"
    assert anchor in anchors(path), f"{r.id}: no heading with anchor #{anchor} in {file}"
    assert f"**{r.id}**" in path.read_text(encoding="utf-8"), f"{r.id} is not named in {file}"


@pytest.mark.parametrize("r", REQUIREMENTS, ids=lambda r: r.id)
def test_every_requirement_says_why_and_shows_a_failing_and_a_passing_example(r) -> None:
    assert r.reason and r.fails and r.passes, r.id
    assert r.fails != r.passes, r.id


def test_the_reference_page_is_generated_from_the_catalog() -> None:
    page = SPEC / PAGE
    assert page.read_text(encoding="utf-8") == reference_page(), (
        f"{SPEC_DIR}/{PAGE} is stale: run `plugin-conformance reference > {SPEC_DIR}/{PAGE}`"
    )


def test_the_provider_rules_on_the_page_are_the_data_files() -> None:
    """providers.md shows each rule as its TOML file states it, source and date included."""
    text = (SPEC / "providers.md").read_text(encoding="utf-8")
    start, end = text.index(RULES_BEGIN), text.index(RULES_END) + len(RULES_END)
    assert text[start:end] == "\n".join(rule_tables()), (
        "docs/spec/providers.md is stale: paste conformance.provider_report.rule_tables() "
        "between its markers"
    )


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path: Path) -> None:
    problems = [problem for target in links(path) if (problem := broken(path, target))]
    assert problems == []
