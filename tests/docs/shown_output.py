"""Output shown in a tutorial against what its command printed, line by line.

The convention (tests/docs/tutorial_blocks.py says which blocks it applies to):

- each shown line matches one printed line; trailing spaces and trailing blank lines do not
  count;
- a line that is just `...` matches any number of printed lines, none included: for output
  the tutorial leaves out;
- `...` inside a line matches any text within that line: for what varies from run to run
  (durations, temporary paths, seeds);
- a run of three or more `=`, `-` or `_` matches a run of any length of the same character:
  pytest pads its rule lines around a text (such as a duration) whose width varies.

A mismatch is reported as a diff: `-` lines are shown but not printed, `+` lines printed but
not shown, and the lines an ellipsis stood for are folded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

ELLIPSIS = "..."
RULE = re.compile(r"([=_-])\1{2,}")
CONTEXT = 3  # matching lines kept around a difference


@dataclass(frozen=True)
class Step:
    """One line of the alignment: kind " " (matched), "-", "+" or "~" (under an ellipsis)."""

    kind: str
    text: str


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


@cache
def _pattern(shown: str) -> re.Pattern[str]:
    """The regular expression of one shown line: `...` and rule runs as above."""
    return re.compile(".*".join(_literal(part) for part in shown.split(ELLIPSIS)))


def _literal(text: str) -> str:
    pieces = RULE.split(text)  # text, rule character, text, ...: the rule runs' characters
    return "".join(
        re.escape(piece) + "+" if k % 2 else re.escape(piece) for k, piece in enumerate(pieces)
    )


def _matches(shown: str, printed: str) -> bool:
    return _pattern(shown).fullmatch(printed) is not None


def align(shown: str, printed: str) -> list[Step]:
    """The alignment of shown lines with printed ones that leaves the fewest shown lines
    unmatched (`-`), then the fewest printed lines unshown (`+`): so a changed line shows
    as a `-` and `+` pair rather than vanish under an ellipsis."""
    want, got = _lines(shown), _lines(printed)
    n, m = len(want), len(got)
    minus, plus = m + 1, 1  # a `-` outweighs any number of `+`
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for j in range(m + 1):
        cost[n][j] = (m - j) * plus
    for i in range(n - 1, -1, -1):
        cost[i][m] = cost[i + 1][m] + (0 if want[i] == ELLIPSIS else minus)
        for j in range(m - 1, -1, -1):
            if want[i] == ELLIPSIS:
                cost[i][j] = min(cost[i + 1][j], cost[i][j + 1])
            elif _matches(want[i], got[j]):
                cost[i][j] = cost[i + 1][j + 1]
            else:
                cost[i][j] = min(minus + cost[i + 1][j], plus + cost[i][j + 1])
    return _walk(want, got, cost, minus)


def _walk(want: list[str], got: list[str], cost: list[list[int]], minus: int) -> list[Step]:
    steps: list[Step] = []
    i = j = 0
    while i < len(want) or j < len(got):
        here = cost[i][j]
        if i < len(want) and want[i] == ELLIPSIS:
            if j < len(got) and cost[i][j + 1] == here:
                steps.append(Step("~", got[j]))
                j += 1
            else:
                i += 1
        elif i < len(want) and j < len(got) and _matches(want[i], got[j]):
            steps.append(Step(" ", got[j]))
            i, j = i + 1, j + 1
        elif i < len(want) and cost[i + 1][j] + minus == here:
            steps.append(Step("-", want[i]))
            i += 1
        else:
            steps.append(Step("+", got[j]))
            j += 1
    return steps


def difference(shown: str, printed: str, where: str = "the tutorial") -> str | None:
    """None when the shown output matches the printed one, else a readable diff."""
    steps = align(shown, printed)
    if all(step.kind in " ~" for step in steps):
        return None
    return "\n".join([f"--- shown in {where}", "+++ printed by the command", *_render(steps)])


def _render(steps: list[Step]) -> list[str]:
    changed = [k for k, step in enumerate(steps) if step.kind in "-+"]
    out: list[str] = []
    k = 0
    while k < len(steps):
        step = steps[k]
        if step.kind == "~":
            end = k
            while end < len(steps) and steps[end].kind == "~":
                end += 1
            out.append(f"  {ELLIPSIS} ({end - k} line{'s' if end - k != 1 else ''})")
            k = end
            continue
        near = any(abs(k - c) <= CONTEXT for c in changed)
        if step.kind != " " or near:
            out.append(f"{step.kind} {step.text}".rstrip())
        elif not out or out[-1] != "  [...]":
            out.append("  [...]")
        k += 1
    return out
