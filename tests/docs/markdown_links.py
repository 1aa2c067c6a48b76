"""Anchors and relative links of the project's markdown files, read with markdown-it-py so
that a `#` inside a code block is not taken for a heading."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors GitHub gives the headings of a file (a repeated heading gets -1, -2...)."""
    tokens = _PARSER.parse(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for opening, inline in itertools.pairwise(tokens):
        if opening.type == "heading_open":
            base = slug(inline.content)
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(path: Path) -> Iterator[str]:
    """Every link and image target in a file, code blocks excluded."""
    stack = list(_PARSER.parse(path.read_text(encoding="utf-8")))
    while stack:
        token = stack.pop()
        stack.extend(token.children or ())
        target = {"link_open": "href", "image": "src"}.get(token.type)
        href = token.attrGet(target) if target else None
        if isinstance(href, str):
            yield href


def broken(path: Path, target: str) -> str | None:
    """Why a relative link from path does not resolve, or None when it does (web links are
    not followed: tests stay on loopback)."""
    if re.match(r"[a-z]+:", target):
        return None
    file_part, _, anchor = target.partition("#")
    destination = (path.parent / file_part).resolve() if file_part else path
    if not destination.exists():
        return f"{path.name}: {target}: no file {destination}"
    if anchor and destination.suffix == ".md" and anchor not in anchors(destination):
        return f"{path.name}: {target}: no heading with anchor #{anchor} in {destination.name}"
    return None
