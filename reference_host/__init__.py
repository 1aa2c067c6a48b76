"""The reference host: aggregates plugin tools for an AI assistant the way the SPEC says."""
