"""The file an MCP server's stderr goes to, which the host quotes the end of in its errors.

It lies beside the server's data folder, never in it: the sandbox can write the data folder,
and a server that turned a `stderr.log` there into a link had the host (outside the sandbox,
root maybe) append its stderr to the link's target at the next start, and quote that file's
end in the error results that reach the model. Beside it is the host's `mcp-data` folder,
hidden in the sandbox. The file is still opened without following a link (O_NOFOLLOW), read
only when it is a regular file, and only its last TAIL_BYTES: a server may write gigabytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: a FIFO put in its place must not make the host wait for a writer
READ = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
TAIL_BYTES = 64 * 1024


def log_path(data_dir: Path) -> Path:
    """The log of the server whose data folder is data_dir: a dotted sibling (a server's
    data folder name never starts with a dot, launch.server_data)."""
    return data_dir.parent / f".{data_dir.name}.stderr.log"


def open_log(path: Path) -> BinaryIO:
    """The log, opened for appending (made if missing); a link there raises OSError (ELOOP)."""
    return os.fdopen(os.open(path, APPEND, 0o600), "ab")


def tail(path: Path, count: int) -> list[str]:
    """The last count non-blank lines of the log; none when it is missing, a link or not a
    regular file."""
    try:
        fd = os.open(path, READ)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as file:
        size = os.fstat(fd)
        if not stat.S_ISREG(size.st_mode):
            return []
        start = max(size.st_size - TAIL_BYTES, 0)
        file.seek(start)
        data = file.read(TAIL_BYTES)
    lines = data.decode("utf-8", "replace").splitlines()
    if start and lines:
        lines = lines[1:]  # the first line was cut
    return [line for line in lines if line.strip()][-count:]
