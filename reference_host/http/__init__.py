"""The host's HTTP API (SPEC F7-F11): create_app in reference_host.http.app assembles it."""
