"""`-n N` groups a kit run's items by the state they share (conformance/xdist_scopes.py):
one scope per plugin and suite, one per tool, taken first, and a tool's effect items kept
for the worker that made its calls; the scopes whose items end the tool worker go last."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from conformance.xdist_scopes import KitScheduling, scope_rank
from tests.conftest import REPO

SAMPLE = REPO / "sample_plugins" / "fan.summer.markdown"
RAN = re.compile(r"^\[(gw\d+)\].* (PASSED|FAILED|SKIPPED|XFAIL) (\S+::.+)$", re.MULTILINE)


def test_scopes_are_plugin_and_suite_and_each_tool_is_a_scope(
    pytester: pytest.Pytester,
) -> None:
    scheduling = KitScheduling(pytester.parseconfig("--tx", "2*popen"))
    scope = scheduling._split_scope

    assert (
        scope("conformance.a.b.manifest::FY-MAN-001 manifest loads") == "conformance.a.b.manifest"
    )
    assert scope("conformance.a.b.worker::FY-WRK-007 stdout discipline") == "conformance.a.b.worker"
    tools = [f"conformance.a.b.tools::FY-TOOL-001 valid inputs answered[t{i}]" for i in range(3)]
    assert [scope(nodeid) for nodeid in [*tools, tools[0]]] == [
        "conformance.a.b.tools#0",
        "conformance.a.b.tools#1",
        "conformance.a.b.tools#2",
        "conformance.a.b.tools#0",
    ]
    assert scope("conformance.a.b.tools::FY-EFF-001 read tools change no file[t1]") == (
        "conformance.a.b.tools#1!effects"
    )


def test_tools_go_first_and_the_scopes_that_end_the_tool_worker_last() -> None:
    """FY-WRK-007/021 (worker suite) and FY-EFF-004 (tools suite, no tool) end the
    process's tool worker after its linger: after the static and host scopes it has passed."""
    scopes = [
        "conformance.a.b.worker",
        "conformance.a.b.tools",
        "conformance.a.b.manifest",
        "conformance.a.b.host",
        "conformance.a.b.tools#1",
        "conformance.a.b.tools#0",
    ]
    assert sorted(scopes, key=scope_rank) == [
        "conformance.a.b.tools#1",
        "conformance.a.b.tools#0",
        "conformance.a.b.manifest",
        "conformance.a.b.host",
        "conformance.a.b.worker",
        "conformance.a.b.tools",
    ]


@pytest.mark.long
@pytest.mark.parametrize("selection", [("-m", "tools"), ("-k", "FY-EFF")])
def test_each_tools_items_run_in_one_worker_with_the_serial_verdicts(
    pytester: pytest.Pytester, selection: tuple[str, str]
) -> None:
    """Also when only effect items are selected: their groups ran nowhere, and any worker
    takes them."""
    common = ("--plugin-dir", str(SAMPLE), *selection, "-p", "no:cacheprovider")
    serial = pytester.runpytest(*common, "-v")
    parallel = pytester.runpytest(*common, "-n", "2", "-v")

    workers: dict[str, set[str]] = defaultdict(set)
    outcomes = {}
    for worker, outcome, nodeid in RAN.findall(parallel.stdout.str()):
        workers[nodeid.rpartition("[")[2]].add(worker)
        outcomes[nodeid] = outcome
    assert workers and all(len(ran_in) == 1 for ran_in in workers.values()), dict(workers)
    counted = ("passed", "failed", "skipped", "xfailed")
    assert {k: v for k, v in parallel.parseoutcomes().items() if k in counted} == {
        k: v for k, v in serial.parseoutcomes().items() if k in counted
    }
