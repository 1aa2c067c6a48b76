"""The link checker the docs tests rely on finds what is broken."""

from __future__ import annotations

from pathlib import Path

from tests.docs.markdown_links import anchors, broken, links, slug


def test_slugs_follow_github() -> None:
    assert slug("Tool names") == "tool-names"
    assert slug("FY-MAN-006") == "fy-man-006"
    assert slug("What `effect` means, and why!") == "what-effect-means-and-why"
    assert slug("Using the kit in a plugin's CI") == "using-the-kit-in-a-plugins-ci"
    assert slug("`--previous-manifest PATH|git:REF`") == "--previous-manifest-pathgitref"
    assert (
        slug("`--plugin-base-url URL`, `--erp-tenant`, `--erp-actor`")
        == "--plugin-base-url-url---erp-tenant---erp-actor"
    )
    assert slug("snake_case stays") == "snake_case-stays"


def test_a_missing_file_a_missing_anchor_and_a_code_block_are_told_apart(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## Part one\n\n## Part one\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[a](other.md#part-one-1) [b](other.md#nope) [c](gone.md) [d](#page)"
        " [e](https://example.org/x) ![g](gone.png)\n\n```md\n[f](not-a-link.md)\n"
        "# not a heading\n```\n"
    )
    assert anchors(tmp_path / "other.md") == {"other", "part-one", "part-one-1"}
    assert anchors(page) == {"page"}
    assert sorted(links(page)) == sorted(
        [
            "other.md#part-one-1",
            "other.md#nope",
            "gone.md",
            "#page",
            "https://example.org/x",
            "gone.png",
        ]
    )
    problems = [p for target in links(page) if (p := broken(page, target))]
    assert len(problems) == 3
    assert any("gone.png: no file" in p for p in problems)
    assert any("other.md#nope: no heading with anchor #nope" in p for p in problems)
    assert any("gone.md: no file" in p for p in problems)
