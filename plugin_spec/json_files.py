"""Reading the JSON files a plugin supplies: bounded, with errors that name the file.

A plugin folder is untrusted input, so reading is bounded: only regular files are opened (a
FIFO would block the open, a device such as /dev/zero never ends) and at most MAX_FILE_BYTES
are read. The host and the kit both read plugin files through `read_bounded`.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from plugin_spec.json_types import JsonObject

MAX_FILE_BYTES = 4 * 1024 * 1024
# Opening must not wait for a FIFO writer, should the path be swapped after the stat.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class JsonFileError(Exception):
    """A file that cannot be used; the message names it and says why."""


def read_bounded(path: Path, display: str) -> bytes:
    """The bytes of path, when it is a regular file of at most MAX_FILE_BYTES.

    The type is checked before opening and again on the open descriptor, and the read stops
    one byte past the cap, since st_size can understate (procfs) or the file can grow.
    """
    too_big = f"{display} is larger than {MAX_FILE_BYTES // 2**20} MiB, the most that is read"
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise JsonFileError(f"{display} is not a regular file")
        with open(os.open(path, OPEN_FLAGS), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise JsonFileError(f"{display} is not a regular file")
            if info.st_size > MAX_FILE_BYTES:
                raise JsonFileError(too_big)
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise JsonFileError(f"{display} not found") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise JsonFileError(
            f"{display} cannot be read: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    if len(raw) > MAX_FILE_BYTES:
        raise JsonFileError(too_big)
    return raw


def read_json_object(path: Path) -> JsonObject:
    """A file holding one JSON object (UTF-8, a BOM allowed, as the kit reads it)."""
    raw = read_bounded(path, str(path))
    try:
        value = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise JsonFileError(f"{path}: {exc}") from None
    if not isinstance(value, dict):
        raise JsonFileError(f"{path}: expected a JSON object")
    return value
