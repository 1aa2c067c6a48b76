"""The tutorials run in the test suite: their code blocks are examples (tests/docs)."""

from tests.docs.tutorial_blocks import TUTORIALS

pytest_collect_file = TUTORIALS.pytest()
