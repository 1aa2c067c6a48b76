"""The token the host makes at each start (reference_host.http.access), and the file that holds
it for the user's own clients (curl, scripts).

Why a fresh token by default: without one, any program on the machine can drive the API on
loopback: a sandboxed worker with the network, an MCP server, a page on another port. Made
at each start, it is worth nothing once the host stops. It lives in the host's memory and in
`DATA_DIR/api-token`, mode 0600: the data folder is hidden from every worker and MCP server
(reference_host.process.sandbox), and the host never puts it in an environment, so no child
inherits it. The file is written to a fresh temporary name (O_EXCL, O_NOFOLLOW: never through
a link planted there) and renamed over the old one, so a reader sees the old token or the new
one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

TOKEN_FILE = "api-token"
TOKEN_BYTES = 32  # 43 URL-safe characters
FILE_MODE = 0o600


def new_token() -> str:
    """A random token, URL-safe (it travels in a URL fragment and a header)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_path(data_dir: Path) -> Path:
    return data_dir / TOKEN_FILE


def write_token(data_dir: Path, token: str) -> Path:
    """Write token to data_dir's token file (only the user may read it); its path."""
    target = token_path(data_dir)
    temporary = data_dir / f".{TOKEN_FILE}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temporary, flags, FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as file:
            file.write(token + "\n")
        os.replace(temporary, target)  # replaces a link at target, never follows it
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    return target


def read_token(data_dir: Path) -> str:
    """The token in data_dir's token file (for the user's clients and the tests)."""
    return token_path(data_dir).read_text(encoding="ascii").strip()


def remove_token(data_dir: Path, token: str | None = None) -> None:
    """Remove data_dir's token file: a stale one at start, the host's own when it stops (only
    when it still holds token: another host on the folder may have written its own since)."""
    path = token_path(data_dir)
    with contextlib.suppress(OSError):
        if token is None or read_token(data_dir) == token:
            path.unlink()
