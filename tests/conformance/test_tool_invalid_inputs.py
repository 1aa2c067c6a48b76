"""FY-TOOL-002 sends only inputs that are broken as the worker gets them (spec:
fengyu-worker.md#tool-properties): a wrong type given to an optional file-class parameter
that the valid input left out was replaced by a granted path, so a worker that validates
its params accepted a valid call and was warned for it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import FIXTURE_PLUGINS, tools_manifest

WORKER = '''#!/usr/bin/env python3
"""A conforming worker: params are validated against the inputSchema (-32602)."""

import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from misbehaving_worker import run

run()
'''
SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "A title for the summary."},
        "attachment": {
            "type": "string",
            "format": "fengyu-file",
            "x-fengyu-file-access": "read",
            "description": "An optional file to summarise.",
        },
    },
    "required": ["title"],
    "additionalProperties": False,
}


def test_a_validating_worker_passes_with_an_optional_file_parameter(
    run_kit, tmp_path: Path
) -> None:
    """The wrong type for the absent optional `attachment` stays in the call (-32602 from
    the worker), instead of turning into a granted path the worker rightly accepts."""
    plugins = tmp_path / "plugins"
    plugin = plugins / "summary"
    (plugin / "backend").mkdir(parents=True)
    manifest = tools_manifest("fixture.optional-file", {"summarise": SCHEMA})
    manifest["backend"] = {"runtime": "python", "protocolVersion": 4}
    (plugin / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    (plugin / "backend" / "worker.py").write_text(WORKER, "utf-8")
    shutil.copy2(FIXTURE_PLUGINS / "misbehaving_worker.py", plugins)
    result = run_kit([plugin], "-m", "tools", "-k", "FY-TOOL-002", "--conformance-examples", "60")
    assert result.statuses()["FY-TOOL-002"] == "passed", result.findings("FY-TOOL-002")
