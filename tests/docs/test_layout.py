"""The layout in docs/guide/development.md names only files and folders that exist, so moving a
module without the page fails here rather than misleading a reader."""

from __future__ import annotations

import re

from tests.conftest import REPO

PAGE = REPO / "docs" / "guide" / "development.md"
NAME_COLUMN = 24  # the descriptions start here; a line with names there holds only names


def named_paths() -> list[str]:
    """Every file or folder the layout block names, as a path from the repository root: a name
    indented by two spaces lies in the folder named above it without indent, by four spaces in
    the one named above it with two."""
    section = PAGE.read_text(encoding="utf-8").split("\n## Layout\n", 1)[1]
    block = re.findall(r"^```\n(.*?)\n```$", section, re.M | re.S)[0]
    parents: dict[int, str] = {}
    found = []
    for line in block.splitlines():
        if not line[:NAME_COLUMN].strip():
            continue  # a description carried over
        indent = len(line) - len(line.lstrip())
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        for name in filter(None, (n.strip() for n in names.split(","))):
            if name == "...":
                continue
            path = parents.get(indent - 2, "") + name
            found.append(path)
            if name.endswith("/"):
                parents[indent] = path
    return found


def test_the_layout_names_what_exists() -> None:
    paths = named_paths()
    assert len(paths) > 40, paths
    missing = [p for p in paths if not any(REPO.glob(p.rstrip("/")))]
    assert missing == [], f"named in {PAGE.name}'s layout, not in the repository"
