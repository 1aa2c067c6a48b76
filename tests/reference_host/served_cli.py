"""What a test needs to talk to `python -m reference_host serve` run as a process: the start
line it waits for, and the token to send.

The host makes a fresh token at each start and keeps it in DATA_DIR/api-token
(reference_host.http.token_file), written before it listens; a test reads it there, as curl
and the user's scripts do, instead of serving with --no-token.
"""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Iterator
from pathlib import Path

from reference_host.http.token_file import read_token

STARTED = re.compile(r"reference host listening on (http://127\.0\.0\.1:\d+/) ")


def api_headers(data_dir: Path) -> dict[str, str]:
    """The Authorization header of the host serving from data_dir."""
    return {"Authorization": f"Bearer {read_token(data_dir)}"}


@contextlib.contextmanager
def terminal_sigint() -> Iterator[None]:
    """Processes started inside get SIGINT as a terminal gives it (Ctrl-C ends them), even
    where these tests run with it ignored: a shell starts a background job so (`pytest &`,
    `nohup`), and a child inherits an ignored signal, so a served host would shut down on
    SIGINT and exit 0 instead of Ctrl-C's 130. A handler of Python's own is not inherited:
    a child started under it gets the default. Main thread only, as signal.signal is."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
