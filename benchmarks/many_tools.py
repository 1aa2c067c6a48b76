"""A FengYu plugin with any number of tools, generated into a folder for the kit to check.

Every tool calls its own method and takes one string, and its worker (FengYu's python runtime,
`backend/worker.py` on the project's SDK, params validated against the manifest) answers each
call at once, so a kit
run on it passes and its time is the kit's own cost per tool. The manifest is written compact:
at 10,000 tools it must stay under the 4 MiB the kit reads. Nothing generated is committed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WORKER = """\
import json
from pathlib import Path

from fengyu_worker import Worker

MANIFEST = Path(__file__).resolve().parents[1] / "manifest.json"
worker = Worker.from_manifest(__file__)


def answer(params, ctx):
    return {"success": True, "summary": f"{ctx.method} done"}


for name in json.loads(MANIFEST.read_text(encoding="utf-8"))["rpc"]["methods"]:
    worker.method(name)(answer)

raise SystemExit(worker.run())
"""


def manifest(tools: int) -> dict[str, Any]:
    """A schemaVersion 2 manifest with `tools` aiTools, one method each."""
    methods = {
        f"m{n}": {
            "description": f"Method {n}.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
            "outputSchema": {
                "type": "object",
                "properties": {"success": {"type": "boolean"}, "summary": {"type": "string"}},
                "required": ["success", "summary"],
            },
        }
        for n in range(tools)
    }
    return {
        "schemaVersion": 2,
        "id": f"bench.tools{tools}",
        "name": f"{tools} tools",
        "description": f"A generated plugin with {tools} tools.",
        "version": "1.0.0",
        "author": "ai-plugin-conformance benchmarks",
        "icon": "puzzle-outline",
        "category": "other",
        "ui": {"entry": "ui/index.html"},
        "backend": {"runtime": "python", "protocolVersion": 4},
        "rpc": {"methods": methods},
        "aiTools": [
            {
                "name": f"bench_tool_{n}",
                "description": f"Tool {n}.",
                "method": f"m{n}",
                "effect": "read",
            }
            for n in range(tools)
        ],
    }


def write_plugin(folder: Path, tools: int) -> Path:
    """The plugin written to folder/tools<N>; returns its root."""
    root = folder / f"tools{tools}"
    (root / "backend").mkdir(parents=True, exist_ok=True)
    (root / "ui").mkdir(exist_ok=True)
    (root / "ui" / "index.html").write_text("<!doctype html><title>bench</title>\n")
    (root / "manifest.json").write_text(
        json.dumps(manifest(tools), separators=(",", ":")), encoding="utf-8"
    )
    (root / "backend" / "worker.py").write_text(WORKER, encoding="utf-8")
    return root
