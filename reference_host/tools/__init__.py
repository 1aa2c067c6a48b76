"""Tools as the agent sees them: definitions and the callbacks that run them (callbacks), one
immutable snapshot of every offered tool per run (snapshot), and the workflow catalog's
entries taken from a snapshot (catalog_entries)."""
