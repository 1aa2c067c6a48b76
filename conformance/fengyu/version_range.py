"""FengYu's engines.fengyu range grammar (spec: fengyu-manifest.md#engines).

A range is one or more comparator sets joined by `||`; a set is SemVer versions separated by
spaces, each with an optional comparator `>=`, `<=`, `>`, `<` or `=`. npm's shorthands (`^`,
`~`, `x`, `*`, partial versions) are not part of it: FengYu's store validator refuses them.
"""

from __future__ import annotations

import re

SEMVER = re.compile(
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?",
    re.ASCII,
)
COMPARATOR = re.compile(r"(>=|<=|>|<|=)?(.*)", re.DOTALL)
SHORTHANDS = ("^", "~", "*")


def range_problem(text: str) -> str | None:
    """What makes text no FengYu range (None when it is one): the first bad part, named."""
    for alternative in text.split("||"):
        parts = alternative.split(" ")
        words = [p for p in parts if p]
        if not words:
            return "an empty alternative (nothing between two ||, or at an end)"
        for word in words:
            match = COMPARATOR.fullmatch(word)
            version = match.group(2) if match else word
            if word.startswith(SHORTHANDS):
                return f"{word!r} uses the npm shorthand {word[0]!r}, which FengYu does not read"
            if not SEMVER.fullmatch(version):
                if any(x in version.split(".") for x in ("x", "X", "*")):
                    return f"{word!r} is a wildcard version; write the bounds with >= and <"
                return (
                    f"{word!r} is not a comparator (>=, <=, >, < or =) followed by a full "
                    "SemVer version such as 4.0.0 or 4.0.0-beta.4"
                )
    return None
