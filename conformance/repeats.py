"""Repeated blocks of a worker's stderr, shown once with a count.

A handler that raises on every input of a property search prints one traceback per call, so
the stderr a finding quotes was the same traceback over and over, and its last lines were
often a traceback cut in two. Shown once, with how many times it came in a row, the lines
say what happened and leave room for what came before.
"""

from __future__ import annotations

LONGEST_BLOCK = 60  # lines: longer repeats are rare and would make the search slow


def collapsed(lines: list[str]) -> list[str]:
    """lines with each run of a block repeated back to back kept once, followed by a line
    saying how many times it came; the block whose repeats cover the most lines wins."""
    shown: list[str] = []
    start = 0
    while start < len(lines):
        size, count = 1, 1
        for width in range(1, min(LONGEST_BLOCK, (len(lines) - start) // 2) + 1):
            block = lines[start : start + width]
            times = 1
            while lines[start + times * width : start + (times + 1) * width] == block:
                times += 1
            if times > 1 and times * width > count * size:
                size, count = width, times
        shown += lines[start : start + size]
        if count > 1:
            what = "line above" if size == 1 else f"{size} lines above"
            shown.append(f"[the {what} came {count} times in a row]")
        start += size * count
    return shown
