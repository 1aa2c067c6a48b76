"""The protocol probe matches answers by id, not by order, as FengYu does: JSON-RPC lets a
worker answer requests in any order, and FengYu's Go SDK answers each from a goroutine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.fengyu.probe import Exchange, Step, owner, script
from conformance.fengyu.raw_worker import Line
from tests.conftest import DEADLINES, FIXTURE_PLUGINS, copy_plugin

VALID_PLUGIN = FIXTURE_PLUGINS / "FY-WRK-023-ids-as-doubles"  # its manifest is valid
WORKER = """\
import sys
from misbehaving_worker import run

sys.dont_write_bytecode = True
print('@fengyu-log:{{"level": "INFO", "message": "ready"}}', file=sys.stderr, flush=True)
run({faults})
"""


def out_of_order_plugin(tmp_path: Path, faults: str) -> Path:
    """A valid plugin whose worker runs misbehaving_worker with the given run() arguments;
    it writes one structured log line, so that FY-WRK-016 has something to pass on."""
    plugins = tmp_path / "plugins"
    folder = copy_plugin(VALID_PLUGIN, plugins)
    shutil.copy2(FIXTURE_PLUGINS / "misbehaving_worker.py", plugins)
    (folder / "expect.toml").unlink()
    (folder / "backend" / "worker.py").write_text(WORKER.format(faults=faults), encoding="utf-8")
    return folder


def worker_statuses(result: Any) -> dict[str, str]:
    return {rid: s for rid, s in result.statuses().items() if rid.startswith("FY-WRK-")}


@pytest.mark.parametrize("order", ["reverse", "threads"])
def test_a_worker_answering_out_of_order_passes_every_worker_item(
    run_kit, tmp_path: Path, order: str
) -> None:
    """reverse: lines that arrive together are answered last first, so the sentinel's answer
    comes before the step's own; threads: a thread per request with a random 0-50 ms delay."""
    folder = out_of_order_plugin(tmp_path, f"answer_order={order!r}")

    result = run_kit([folder], "-m", "worker")

    statuses = worker_statuses(result)
    failed = {rid: s for rid, s in statuses.items() if s != "passed"}
    details = {rid: [f["message"] for f in result.findings(rid)] for rid in failed}
    # FY-WRK-020 judges declared resources, which this plugin has none of.
    assert set(failed) <= {"FY-WRK-020"}, details
    assert {f"FY-WRK-{n:03d}" for n in range(1, 17)} <= set(statuses)


def test_a_late_reply_to_a_notification_is_still_its_defect(run_kit, tmp_path: Path) -> None:
    """A worker answering in reverse writes its replies to notifications after the
    sentinel's answer: they are FY-WRK-005's (`$/cancelRequest`) and FY-WRK-024's (the
    notifications FengYu never sends) findings, not the next step's."""
    folder = out_of_order_plugin(tmp_path, "answer_order='reverse', reply_to_notifications=True")

    result = run_kit([folder], "-m", "worker")

    assert result.reported() == {"FY-WRK-005", "FY-WRK-024"}
    assert "$/cancelRequest" in result.findings("FY-WRK-005")[0]["message"]
    assert "conformance_no_such_method" in result.findings("FY-WRK-024")[0]["message"]


def reply(rid: Any, **member: Any) -> Line:
    message = {"jsonrpc": "2.0", "id": rid, **(member or {"result": None})}
    return Line(json.dumps(message), message)


def steps(*names: str) -> list[Exchange]:
    planned = {step.name: step for step in script({"greet": 5.0}, DEADLINES.reply)}
    return [
        Exchange(name, [], expects=planned[name].expects, notifies=planned[name].notifies)
        for name in names
    ]


def test_a_reply_with_an_earlier_steps_id_goes_back_to_it() -> None:
    unknown, ids, current = steps(Step.UNKNOWN_METHOD, Step.IDS, Step.CRLF)
    assert owner(reply(4242), current, [unknown, ids]) is ids
    assert owner(reply("unk-1"), current, [unknown, ids]) is unknown
    assert owner(reply("crlf-1"), current, [unknown, ids]) is current
    # 4242.0 and "4242" are not the id 4242: they are the current step's to judge
    assert owner(reply(4242.0), current, [unknown, ids]) is current
    assert owner(reply("4242"), current, [unknown, ids]) is current
    assert owner(Line("log line", None), current, [unknown, ids]) is current


def test_a_null_id_goes_to_the_step_that_can_have_caused_it() -> None:
    parse, notifications, ids, crlf = steps(
        Step.PARSE_ERROR, Step.NOTIFICATIONS, Step.IDS, Step.CRLF
    )
    late_reply = reply(None)
    parse_error = reply(None, error={"code": -32700, "message": "Parse error"})
    # right after the notifications: a late reply to one of them
    assert owner(late_reply, ids, [parse, notifications]) is notifications
    # a parse error is never a reply to a notification: the parse-error step still missing
    # its answer gets it, else the step under way (a frame read in pieces)
    assert owner(parse_error, ids, [parse, notifications]) is parse
    parse.replies.append(parse_error)
    assert owner(parse_error, ids, [parse, notifications]) is ids
    assert owner(late_reply, crlf, [parse, notifications, ids]) is crlf
    assert owner(late_reply, notifications, [parse]) is notifications
