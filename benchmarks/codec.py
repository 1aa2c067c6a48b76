"""Section 12: does a faster JSON codec earn its place on the worker path?

The 1 MiB round trip of section 1 costs about 10 ms where the pipe alone takes a fraction
of a millisecond, which looked like JSON. Here three bare clients as in section 1's floor
talk to the same echo loop: one with the stdlib's json on both sides, one with orjson on
both sides, one with orjson on the host's side only, taking turns within each repetition.
The rule set beforehand: orjson becomes an optional extra of the host and the SDK if it
halves the 1 MiB figure. Skipped, with a note, where orjson is not installed
(`pip install orjson`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import WORKERS, Row, Settings, median
from benchmarks.rpc import MIB, payload
from plugin_spec.framing import MAX_FRAME_BYTES

SECTION = "12 JSON codec"
TARGET = 0.5  # orjson / stdlib at 1 MiB, at most, to be adopted


class CodecClient:
    """A floor client (one process, one request at a time) with a chosen codec."""

    def __init__(self, codec: str, worker_codec: str) -> None:
        self.codec, self.worker_codec = codec, worker_codec
        self.name = codec if codec == worker_codec else f"{codec} host, {worker_codec} worker"
        if codec == "orjson":
            import orjson

            self._dumps: Callable[[Any], bytes] = orjson.dumps
            self._loads: Callable[[bytes], Any] = orjson.loads
        else:
            encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
            self._dumps, self._loads = (lambda value: encode(value).encode()), json.loads
        self._next = 0
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(WORKERS / "echo_codec.py"),
            self.worker_codec,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=MAX_FRAME_BYTES + 1,
        )

    async def call(self, params: dict[str, str]) -> Any:
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        self._next += 1
        frame = {"jsonrpc": "2.0", "id": self._next, "method": "echo", "params": params}
        process.stdin.write(self._dumps(frame) + b"\n")
        await process.stdin.drain()
        return self._loads(await process.stdout.readline())["result"]

    async def close(self) -> None:
        if self._process is not None and self._process.stdin is not None:
            self._process.stdin.close()
            await self._process.wait()


async def _measure(settings: Settings) -> list[Row]:
    clients = [
        CodecClient("stdlib", "stdlib"),
        CodecClient("orjson", "orjson"),
        CodecClient("orjson", "stdlib"),
    ]
    rows = []
    try:
        for client in clients:
            await client.start()
            assert await client.call(payload(MIB)) == payload(MIB), client.name
        for size, n in ((100, 100 if settings.quick else 300), (MIB, 4 if settings.quick else 12)):
            params = payload(size)
            samples: dict[str, list[float]] = {c.name: [] for c in clients}
            for rep in range(settings.warmup + settings.reps):
                turn = rep % len(clients)
                for client in clients[turn:] + clients[:turn]:
                    start = time.perf_counter()
                    for _ in range(n):
                        await client.call(params)
                    if rep >= settings.warmup:
                        samples[client.name].append((time.perf_counter() - start) / n)
            stdlib = median(samples["stdlib"])
            big = size >= MIB
            for name, sides in (("orjson", "both sides"), (clients[2].name, "host side only")):
                fast = median(samples[name])
                # The adoption rule reads the both-sides row; the host-side-only row shows what
                # a host with the extra gains from a worker without it (no target of its own).
                judged = big and sides == "both sides"
                rows.append(
                    Row(
                        SECTION,
                        f"{'1 MiB' if big else '100 B'} sequential N={n}: orjson / stdlib json, "
                        + sides,
                        fast,
                        "stdlib json",
                        stdlib,
                        target=f"<= {TARGET}x to adopt" if judged else "",
                        met=fast / stdlib <= TARGET if judged else None,
                        note=f"saves {(stdlib - fast) * 1e6:+.0f} µs per call",
                    )
                )
    finally:
        for client in clients:
            await client.close()
    return rows


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    try:
        import orjson  # noqa: F401
    except ImportError:
        return [], ["section 12 skipped: orjson is not installed (pip install orjson)"]
    return asyncio.run(_measure(settings)), [
        "section 12: the same echo loop with the stdlib's json or orjson on both sides"
    ]
