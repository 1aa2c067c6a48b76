"""The tutorials run in the test suite: their code blocks are examples (tests/docs)."""

try:
    from tests.docs.tutorial_blocks import TUTORIALS
except ModuleNotFoundError as missing:
    # The kit's plain install (no test extra) has no Sybil; `pytest --list-requirements` and
    # `pytest --conformance-explain ID` still work in the repository. The tests themselves
    # need the test extra, and tests/docs/test_tutorial_blocks.py fails loudly without it.
    if missing.name != "sybil":
        raise
else:
    pytest_collect_file = TUTORIALS.pytest()
