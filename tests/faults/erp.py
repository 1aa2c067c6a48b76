"""An ERP plugin written to a folder, and a host whose actor may use its tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reference_host.erp.actors import Actor, ActorDirectory
from reference_host.host import Host
from reference_host.plugins.lifecycle import Validator
from tests.conftest import MakeHost

APP = "faults-app"
PERMISSION = "FAULTS_DEMO"
PREFIX = f"/api/v1/plugins/{APP}"
ALICE = Actor("alice", frozenset({"acme"}), frozenset({PERMISSION}))


def tool_file(code: str, path: str) -> dict[str, Any]:
    """A LOW-risk GET tool whose `mode` input goes into the query string."""
    return {
        "toolCode": code,
        "name": f"Fault probe {code}",
        "description": f"The {code} probe of the fault suite.",
        "inputSchema": {
            "type": "object",
            "properties": {"mode": {"type": "string", "description": "How to answer."}},
        },
        "handlerType": "REST",
        "handlerConfig": {"path": path, "method": "GET", "queryParams": ["mode"]},
        "requiredPermission": PERMISSION,
        "applicationCode": APP,
        "riskLevel": "LOW",
        "strictPermissionCheck": False,
    }


def write_erp_plugin(folder: Path, tools: dict[str, str]) -> Path:
    """An ERP plugin folder (metadata/tool/<code>.json) with one tool per toolCode -> path."""
    tool_dir = folder / "metadata" / "tool"
    tool_dir.mkdir(parents=True)
    for code, path in tools.items():
        (tool_dir / f"{code}.json").write_text(json.dumps(tool_file(code, path), indent=2))
    return folder


def erp_host(
    make_host: MakeHost, base_url: str, validator: Validator | None = None, **options: Any
) -> Host:
    """A host from the make_host fixture, on base_url as its ERP, whose actor is ALICE."""
    host = make_host(erp_base_url=base_url, validator=validator, **options)
    host.actors = ActorDirectory(actors={ALICE.name: ALICE})
    return host
