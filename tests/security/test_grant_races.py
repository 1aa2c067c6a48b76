"""Granted files swapped for links while calls run (spec: host.md#fileref-grants), through the
real host and workers.

A swapper thread replaces the granted file (or writable folder) again and again, by atomic
rename, between the real thing and a symlink to something outside every allowed root, while
route-B calls go through the production tool callback to a real worker subprocess. No call may
read the outside file or write into the outside folder; calls that meet a link are refused.
The loops are bounded by a call count, and the swapper stops when the calls are done.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.host import Host
from reference_host.tools.callbacks import CallContext, plan_and_call
from tests.conftest import MakeHost
from tests.sample_plugins.excel_client import make_workbook
from tests.security.conftest import EXCEL, MARKDOWN, copy_sample

MD = "fan.summer.markdown"
XL = "fan.summer.excel"
READ_CALLS = 2000
WRITE_CALLS = 150


@dataclass
class Race:
    host: Host
    files: Path  # the only allowed root
    outside: Path  # a folder the host may not share

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool call through the production callback (route B fills file parameters)."""
        callback = self.host.registry.snapshot().get(tool)
        assert callback is not None, tool
        output: dict[str, Any] = (
            await plan_and_call(callback, arguments, CallContext("c1"))
        ).output
        return output


@pytest.fixture
async def race(tmp_path: Path, make_host: MakeHost) -> Race:
    files = tmp_path / "files"
    outside = tmp_path / "outside"
    files.mkdir()
    outside.mkdir()
    host = make_host(
        allowed_roots=(files,),
        approval=ApprovalPolicy(write=Decision.ALLOW, external=Decision.DENY),
    )
    await host.install(copy_sample(MARKDOWN, tmp_path))
    await host.install(copy_sample(EXCEL, tmp_path))
    return Race(host, files, outside)


class Swapper(threading.Thread):
    """Swaps target between its real form and a link, until stopped or max_swaps is reached.

    make_real(path) creates the real form at a scratch path; the link points at outside.
    Each swap is one atomic rename onto target. Every HOLD_EVERY-th real form stays for
    HOLD_SECONDS: at full speed on a loaded machine the real form can be gone again before
    any call gets through, and a test where every call met a link shows nothing.
    """

    HOLD_EVERY = 10
    HOLD_SECONDS = 0.02

    def __init__(
        self, target: Path, outside: Path, make_real: Callable[[Path], None], max_swaps: int
    ) -> None:
        super().__init__(daemon=True)
        self.target, self.outside, self.make_real = target, outside, make_real
        self.max_swaps = max_swaps
        self.swaps = 0
        self.stop = threading.Event()

    def run(self) -> None:
        scratch = self.target.with_name(f".{self.target.name}.swap")
        while not self.stop.is_set() and self.swaps < self.max_swaps:
            if self.swaps % 2 == 0:
                scratch.symlink_to(self.outside, target_is_directory=self.outside.is_dir())
            else:
                self.make_real(scratch)
            if self.outside.is_dir():
                # rename cannot put a folder over a link or a link over a folder
                os.rename(self.target, self.target.with_name(f".{self.target.name}.{self.swaps}"))
            os.replace(scratch, self.target)
            self.swaps += 1
            if self.swaps % (2 * self.HOLD_EVERY) == 0:  # the real form was just put back
                self.stop.wait(self.HOLD_SECONDS)

    def __enter__(self) -> Swapper:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.join(timeout=60)
        assert not self.is_alive(), "the swapper did not stop"


async def test_a_granted_file_swapped_for_a_link_never_leaks_the_outside_file(race: Race) -> None:
    doc = race.files / "doc.md"
    doc.write_text("# Public\n", "utf-8")
    secret = race.outside / "secret.md"
    secret.write_text("# TOP-SECRET\n", "utf-8")
    race.host.grants.attach("c1", MD, doc, "read")

    def real(path: Path) -> None:
        path.write_text("# Public\n", "utf-8")

    outputs = []
    with Swapper(doc, secret, real, max_swaps=10 * READ_CALLS) as swapper:
        for _ in range(READ_CALLS):
            outputs.append(await race.call("markdown_outline", {"filePath": "anything"}))
    escapes = [o for o in outputs if "TOP-SECRET" in json.dumps(o)]
    public = [o for o in outputs if o.get("headings") == [{"level": 1, "text": "Public"}]]
    print(f"\n{len(escapes)} of {len(outputs)} calls read the outside file; {len(public)} ok")
    assert swapper.swaps > 0 and public, "the race did not run"
    assert escapes == []


async def test_a_granted_folder_swapped_for_a_link_is_never_written_through(race: Race) -> None:
    workbook = make_workbook(
        race.files / "sales.xlsx", {"East": [("Region", "Sum"), ("East", 1)], "West": [("a",)]}
    )
    out = race.files / "out"
    out.mkdir()
    race.host.grants.attach("c1", XL, workbook, "read")
    analyzed = await race.call("excel_analyze", {"filePath": "x"})
    assert analyzed["success"], analyzed
    assert (await race.call("excel_configure", {"mode": "BY_SHEET"}))["success"]
    race.host.grants.attach("c1", XL, out, "read-write")

    outputs = []
    with Swapper(out, race.outside, lambda path: path.mkdir(), WRITE_CALLS * 10) as swapper:
        for index in range(WRITE_CALLS):
            arguments = {"outputDir": "x", "filePrefix": f"p{index}_"}
            outputs.append(await race.call("excel_execute", arguments))
    written = sorted(p.name for p in race.outside.iterdir())
    done = [o for o in outputs if o.get("success")]
    print(f"\n{len(written)} files written outside in {len(outputs)} calls; {len(done)} ok")
    assert swapper.swaps > 0 and done, "the race did not run"
    assert written == []
    assert any(race.files.rglob("p*_East.xlsx")), "no output reached the granted folder"


async def test_calls_run_while_nothing_is_swapped(race: Race) -> None:
    """The control: without a swapper every call works, so a refusal above is the race."""
    doc = race.files / "doc.md"
    doc.write_text("# Public\n", "utf-8")
    race.host.grants.attach("c1", MD, doc, "read")
    outputs = await asyncio.gather(
        *(race.call("markdown_outline", {"filePath": "x"}) for _ in range(20))
    )
    assert all(o.get("headings") == [{"level": 1, "text": "Public"}] for o in outputs), outputs
