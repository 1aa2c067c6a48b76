"""The tutorial runner checks what the tutorials claim: a command that fails fails its block,
a `cd` carries over, files are written where the shell stands, unrun code is refused."""

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

```text
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
    assert len(run(tmp_path, PAGE)) == 4  # the text block is not an example


def test_a_failing_command_fails_its_block(tmp_path: Path) -> None:
    with pytest.raises(SybilFailure, match="exit status 1, expected 0"):
        run(tmp_path, "```sh\nfalse\n```\n")


def test_an_unexpected_success_fails_too(tmp_path: Path) -> None:
    with pytest.raises(SybilFailure, match="exit status 0, expected 2"):
        run(tmp_path, "```sh exit=2\ntrue\n```\n")


def test_code_that_is_neither_run_nor_written_fails(tmp_path: Path) -> None:
    with pytest.raises(SybilFailure, match="neither run nor written"):
        run(tmp_path, '```json\n{"a": 1}\n```\n')
