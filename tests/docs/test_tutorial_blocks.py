"""The tutorial runner checks what the tutorials claim: a command that fails fails its block,
a `cd` carries over, files are written where the shell stands, unrun code is refused, and
output shown after a command is what the command printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from sybil.example import SybilFailure

from tests.docs.tutorial_blocks import TUTORIALS

PAGE = """\
# A page

```sh
mkdir -p work && cd work
```

```sh file=hello.sh
#!/bin/sh
echo hello
```

```sh
test "$(./hello.sh)" = hello && test "$(basename "$PWD")" = work
```

```sh exit=3
exit 3
```

```text output=no
shown only
```
"""


def examples(tmp_path: Path, text: str) -> list:
    page = tmp_path / "page.md"
    page.write_text(text)
    document = TUTORIALS.parse(page)
    return list(document.examples())


def run(tmp_path: Path, text: str) -> list:
    found = examples(tmp_path, text)
    namespace = found[0].namespace
    TUTORIALS.setup(namespace)
    try:
        for example in found:
            example.evaluate()
    finally:
        TUTORIALS.teardown(namespace)
    return found


def test_blocks_run_in_order_in_one_shell_state(tmp_path: Path) -> None:
    assert len(run(tmp_path, PAGE)) == 4  # the text block (output=no) is not an example


def test_a_failing_command_fails_its_block(tmp_path: Path) -> None:
    with pytest.raises(SybilFailure, match="exit status 1, expected 0"):
        run(tmp_path, "```sh\nfalse\n```\n")


def test_an_unexpected_success_fails_too(tmp_path: Path) -> None:
    with pytest.raises(SybilFailure, match="exit status 0, expected 2"):
        run(tmp_path, "```sh exit=2\ntrue\n```\n")


def test_code_that_is_neither_run_nor_written_fails(tmp_path: Path) -> None:
    with pytest.raises(SybilFailure, match="neither run nor written"):
        run(tmp_path, '```json\n{"a": 1}\n```\n')


SHOWN = """\
Run it:

```sh
printf 'collected 3 items\\n\\n' && printf '=== 3 passed in 0.%ss ===\\n' "$RANDOM"
echo "in $PWD" >&2
```

It prints:

```text
collected 3 items

=============================== 3 passed in ...s ===============================
in ...
```
"""


def test_shown_output_matches_what_the_command_printed(tmp_path: Path) -> None:
    """`...` stands for what varies (a time, a folder) and rule lines match at any width;
    stderr counts, as a terminal shows it."""
    assert len(run(tmp_path, SHOWN)) == 2


def test_shown_output_that_differs_fails_with_a_diff(tmp_path: Path) -> None:
    command, shown = SHOWN.split("```text")
    shown = shown.replace("collected 3", "collected 46").replace("3 passed", "41 passed")
    stale = f"{command}```text{shown}"
    with pytest.raises(SybilFailure) as failure:
        run(tmp_path, stale)
    message = str(failure.value)
    assert "the output shown differs from what the command printed" in message
    assert "- collected 46 items\n" in message and "+ collected 3 items\n" in message
    assert "- ===" in message and "41 passed" in message and "+ === 3 passed" in message


def test_an_ellipsis_line_stands_for_lines_left_out(tmp_path: Path) -> None:
    page = "```sh\nseq 1 5\n```\n\n```text\n1\n...\n4\n5\n```\n"
    assert len(run(tmp_path, page)) == 2
    with pytest.raises(SybilFailure, match=r"  1\n\+ 2\n\+ 3\n  4\n  5$"):
        run(tmp_path, page.replace("...\n", ""))


def test_text_marked_output_no_or_after_another_block_is_not_compared(tmp_path: Path) -> None:
    marked = "```sh\necho hi\n```\n\n```text output=no\nnot what it printed\n```\n"
    assert len(run(tmp_path, marked)) == 1
    after_file = "```sh\necho hi\n```\n\n```sh file=a.sh\necho\n```\n\n```text\nshown\n```\n"
    assert len(run(tmp_path, after_file)) == 2
