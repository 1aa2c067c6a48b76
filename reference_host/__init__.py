"""The reference host: aggregates plugin tools for an AI assistant the way the spec
(docs/spec) says.

PYTEST_DONT_REWRITE: the host is application code, imported by the kit's pytest plugin.
"""
