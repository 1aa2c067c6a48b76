"""The ERP profile: metadata/tool/*.json, one REST-backed tool per file (SPEC E1-E5)."""
