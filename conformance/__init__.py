"""A pytest conformance kit for plugins that expose operations to an AI assistant as tools."""

__version__ = "0.1.0"
