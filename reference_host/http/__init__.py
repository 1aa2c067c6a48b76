"""The host's HTTP API (spec: host.md): create_app in reference_host.http.app assembles it."""
