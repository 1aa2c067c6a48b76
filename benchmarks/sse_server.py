"""The SSE benchmark's server as its own process: `python -m benchmarks.sse_server DATA CALLS`.

It serves reference_host.http.app on 127.0.0.1:<free port>, prints `PORT <n>` on stdout once it
accepts connections, and shuts down when its stdin closes (the parent closing the pipe, or
dying), so it can never outlive the benchmark.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import uvicorn

from benchmarks.sse import model, new_host
from reference_host.http.app import create_app


async def serve(data: Path, calls: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    host = new_host(data)
    try:
        app = create_app(host, lambda: model(calls))
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2
        )
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.01)
        if serving.done():
            await serving
            return
        print(f"PORT {sock.getsockname()[1]}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.buffer.read)  # returns at EOF
        server.should_exit = True
        await serving
    finally:
        await host.close()
        sock.close()


def main() -> None:
    asyncio.run(serve(Path(sys.argv[1]), int(sys.argv[2])))


if __name__ == "__main__":
    main()
