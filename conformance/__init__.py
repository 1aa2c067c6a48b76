"""A pytest conformance kit for plugins that expose operations to an AI assistant as tools.

PYTEST_DONT_REWRITE: the kit reports through findings, not assert statements.
"""

__version__ = "0.1.0"
