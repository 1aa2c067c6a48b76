"""Security suite: FileRefs, ERP namespace and tenants, fuzzed manifests and HTTP API."""
