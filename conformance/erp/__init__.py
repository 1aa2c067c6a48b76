"""The ERP profile: metadata/tool/*.json, one REST-backed tool per file (spec: erp.md)."""
