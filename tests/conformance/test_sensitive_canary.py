"""Where FY-TOOL-004 puts its canary (spec: fengyu-worker.md#sensitive-inputs), and why not."""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.checks.fengyu_sensitive import CANARY_PREFIX, Target, canary_targets
from tests.conftest import FIXTURE_PLUGINS, copy_plugin

SECRET = {"type": "string", "x-fengyu-sensitive": True}
AT = "/rpc/methods/m/inputSchema"


def test_every_string_secret_gets_its_own_canary_nested_ones_too() -> None:
    schema = {
        "type": "object",
        "properties": {
            "password": SECRET,
            "auth": {"type": "object", "properties": {"to/ken": SECRET}},
        },
    }
    targets, unfit = canary_targets(schema, AT)
    assert unfit == []
    assert [(t.path, t.schema_pointer) for t in targets] == [
        (("password",), f"{AT}/properties/password"),
        (("auth", "to/ken"), f"{AT}/properties/auth/properties/to~1ken"),
    ]
    assert len({t.canary for t in targets}) == 2
    assert all(t.canary.startswith(CANARY_PREFIX) for t in targets)


def test_a_secret_no_canary_string_fits_is_named_with_the_reason() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pin": {"type": "integer", "x-fengyu-sensitive": True},
            "mode": {"type": "string", "enum": ["a", "b"], "x-fengyu-sensitive": True},
            "keys": {"type": "array", "items": SECRET},
        },
    }
    targets, unfit = canary_targets(schema, AT)
    assert targets == []
    assert unfit[0].startswith(f"{AT}/properties/pin admits no string like")
    assert unfit[1].startswith(f"{AT}/properties/mode admits no string like")
    assert unfit[2] == f"{AT}/properties/keys/items sits inside an array"


def test_the_canary_is_placed_making_the_objects_on_its_way() -> None:
    target = Target(("auth", "token"), "/x", "fycanary-1")
    params = {"user": "ann", "auth": {"kind": "basic"}}
    assert target.place(params) == {"user": "ann", "auth": {"kind": "basic", "token": "fycanary-1"}}
    assert params == {"user": "ann", "auth": {"kind": "basic"}}
    assert target.place({}) == {"auth": {"token": "fycanary-1"}}


KEEPS_IT = """import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from misbehaving_worker import run


def connect(params):
    print(f"connecting to {params['server']} with the configured key", file=sys.stderr)
    return {"success": True, "summary": f"connected to {params['server']}"}


run({"connect": connect})
"""


def test_a_worker_that_keeps_the_secret_passes(run_kit, tmp_path: Path) -> None:
    """The stderr fixture's plugin with a worker that uses the key and never shows it."""
    plugins = tmp_path / "plugins"
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-TOOL-004-logs-the-api-key", plugins)
    shutil.copy2(FIXTURE_PLUGINS / "misbehaving_worker.py", plugins)
    (plugin / "backend" / "worker.py").write_text(KEEPS_IT)

    result = run_kit([plugin], "-m", "tools", "-k", "kept")  # FY-TOOL-004 alone

    assert result.statuses()["FY-TOOL-004"] == "passed"


CRASHES = KEEPS_IT.replace(
    "print(f\"connecting to {params['server']} with the configured key\", file=sys.stderr)",
    'raise RuntimeError("no route to the mail server")',
).replace('run({"connect": connect})', 'run({"connect": connect}, catch_handler_errors=False)')


def test_a_worker_that_crashes_is_left_to_fy_tool_001(run_kit, tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugin = copy_plugin(FIXTURE_PLUGINS / "FY-TOOL-004-logs-the-api-key", plugins)
    shutil.copy2(FIXTURE_PLUGINS / "misbehaving_worker.py", plugins)
    (plugin / "backend" / "worker.py").write_text(CRASHES)
    assert "catch_handler_errors=False" in CRASHES and "raise RuntimeError" in CRASHES

    result = run_kit([plugin], "-m", "tools", "-k", "kept")  # FY-TOOL-004 alone

    (record,) = [r for r in result.report["results"] if r["requirement"] == "FY-TOOL-004"]
    assert record["status"] == "not-applicable"
    assert "FY-TOOL-001 reports it" in str(record)
