"""The SDK's stdio transport with a bounded line reader.

The SDK's reader (`mcp.client.stdio.stdio_client`) joins each chunk of stdout to the text
left over and splits the whole again: a line without a newline grows without bound, and a
long line costs time quadratic in its length (a 50 MB answer was not read within 30 s, a
400 MB one held its 300 s call and the host's memory). This transport is the same but for
its reader, which looks for newlines in each new chunk only and refuses a line longer than
MAX_FRAME_BYTES (the 16 MiB of FengYu workers' frames): it hands the session a LineTooLong,
which stops the server (client.py) and fails its pending requests at once, and reads no
more of it.

Everything else is the SDK's: the process start, the writer and the shutdown sequence.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio
import anyio.lowlevel
from mcp.client import stdio as sdk
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage

from plugin_spec.framing import MAX_FRAME_BYTES


class LineTooLong(Exception):
    """A server's stdout line ran past MAX_FRAME_BYTES without a newline."""

    def __init__(self) -> None:
        super().__init__(f"a line longer than {MAX_FRAME_BYTES} bytes (the 16 MiB frame limit)")


@asynccontextmanager
async def stdio_client(
    server: StdioServerParameters, errlog: TextIO = sys.stderr
) -> AsyncGenerator[TransportStreams, None]:
    """`mcp.client.stdio.stdio_client`, reading stdout line by line within MAX_FRAME_BYTES."""
    command = await sdk._get_executable_command(server.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=sdk.get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        try:
            async with read_writer:
                try:
                    async for line in _lines(process.stdout):
                        message = (
                            sdk._parse_line(
                                line.decode(server.encoding, server.encoding_error_handler)
                            )
                            if line is not None
                            else LineTooLong()
                        )
                        try:
                            await read_writer.send(message)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                        if line is None:
                            return  # the framing is lost: the rest is drained unread
                finally:
                    await sdk._drain_stdout(process)
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError, UnicodeDecodeError):
            if not shutting_down:
                sdk.logger.exception("Reading from the MCP server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for session_message in write_reader:
                    text = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    data = (text + "\n").encode(server.encoding, server.encoding_error_handler)
                    await process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT) as flush_scope:
            await writer_done.wait()
        if flush_scope.cancelled_caught:
            await anyio.lowlevel.cancel_shielded_checkpoint()
        await sdk._stop_server_process(process)
        await sdk._aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def _lines(stdout: anyio.abc.ByteReceiveStream) -> AsyncGenerator[bytes | None, None]:
    """Each line of stdout without its newline (a last one without a newline is dropped, as
    the SDK drops it), and None once a line runs past MAX_FRAME_BYTES."""
    pending = bytearray()
    async for chunk in stdout:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            pending += chunk[start:end]
            start = end + 1
            if len(pending) > MAX_FRAME_BYTES:
                yield None
                return
            yield bytes(pending)
            pending.clear()
        pending += chunk[start:]
        if len(pending) > MAX_FRAME_BYTES:
            yield None
            return
