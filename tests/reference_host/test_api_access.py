"""Issue 35 items 2 and 7: the host's own API against programs on the same machine.

Item 2, before: `python -m reference_host serve` answered any local client without a token,
so a plugin's worker with the network, or an MCP server, could disable another plugin,
grant itself a folder or approve a write. Now the host makes a fresh token at each start,
prints it once in the console's URL, keeps it in DATA_DIR/api-token (0600, never through a
link) and in no environment; `--no-token` is an explicit, warned choice.

Item 7, before: a page on another loopback port disabled a plugin through a browser, since
the Origin check compared the host name only. Now the Origin must be the host's own: scheme,
name and port.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import reference_host.__main__ as cli
from reference_host.__main__ import main
from reference_host.agent.models import ModelTurn, ScriptedModel
from reference_host.http.access import TOKEN_ENV
from reference_host.http.app import create_app
from reference_host.http.token_file import TOKEN_FILE, read_token
from reference_host.process.environment import NEVER_PASSED
from tests.conftest import REPO, MakeHost
from tests.reference_host.served_cli import STARTED, api_headers

# An ERP plugin: no worker to start, so the test is about the request alone.
EMPLOYEE = REPO / "sample_plugins" / "hcm-employee"
CONSOLE = re.compile(r"dev console: (http://127\.0\.0\.1:\d+/)#token=([A-Za-z0-9_-]{43}) ")


# -- item 2: a token by default ------------------------------------------------------------


def test_the_served_host_needs_the_token_it_made_and_printed_once(tmp_path: Path) -> None:
    """The real command: no token, no API (the console's files still load); the token of the
    console line is the file's, which only the user can read and which goes with the host."""
    data = tmp_path / "data"
    command = [sys.executable, "-m", "reference_host", "serve", "--port", "0"]
    command += ["--data-dir", str(data), "--log-level", "warning"]
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        started = STARTED.match(server.stdout.readline())
        assert started
        url = started.group(1)
        without = httpx.get(url + "api/plugins", timeout=10)
        assert without.status_code == 401 and without.headers["www-authenticate"] == "Bearer"
        assert httpx.post(url + "api/chat", json={"message": "hi"}, timeout=10).status_code == 401
        assert httpx.post(url + "api/plugins/x/disable", timeout=10).status_code == 401
        console = CONSOLE.match(server.stdout.readline())  # printed with the start line
        assert console and console.group(1) == url
        token = console.group(2)
        assert read_token(data) == token
        assert stat.S_IMODE((data / TOKEN_FILE).stat().st_mode) == 0o600
        headers = api_headers(data)
        assert httpx.get(url + "api/plugins", headers=headers, timeout=10).json() == []
        chat = httpx.post(url + "api/chat", json={"message": "hi"}, headers=headers, timeout=10)
        assert chat.status_code == 200 and chat.text.startswith(": connected")
        for path in ("", "console/console.js"):
            assert httpx.get(url + path, timeout=10).status_code == 200, path
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert not (data / TOKEN_FILE).exists()  # worth nothing now: gone with the host


@dataclass
class Start:
    """What one in-process start of `serve` had when it would have listened."""

    token: str | None
    environ: dict[str, str]
    file: str | None
    err: str


def start(monkeypatch: pytest.MonkeyPatch, capsys: Any, data: Path, *argv: str) -> Start:
    """`main(["serve", ...])` up to the point it would listen, then stopped."""
    seen: list[Start] = []

    async def instead_of_listening(server: Any, sockets: Any = None) -> None:
        file = data / TOKEN_FILE
        seen.append(
            Start(
                server.config.app.state.host.config.token,
                dict(os.environ),
                file.read_text() if file.exists() else None,
                "",
            )
        )

    monkeypatch.setattr(cli.AnnouncingServer, "serve", instead_of_listening)
    assert main(["serve", "--data-dir", str(data), *argv]) == 0
    (made,) = seen
    made.err = capsys.readouterr().err
    return made


def test_each_start_makes_a_new_token_that_no_environment_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    data = tmp_path / "data"
    first, second = (start(monkeypatch, capsys, data) for _ in range(2))
    assert first.token and second.token and first.token != second.token
    for made in (first, second):
        assert made.file == f"{made.token}\n"
        assert made.token not in "\n".join(f"{k}={v}" for k, v in made.environ.items())
        assert TOKEN_ENV not in made.environ
    assert TOKEN_ENV in NEVER_PASSED  # and a worker would not get it if it were there


def test_the_token_file_is_written_without_following_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    data, outside = tmp_path / "data", tmp_path / "outside"
    outside.write_text("the user's file\n")
    data.mkdir()
    (data / TOKEN_FILE).symlink_to(outside)
    made = start(monkeypatch, capsys, data)
    assert outside.read_text() == "the user's file\n"
    assert made.file == f"{made.token}\n"
    assert not (data / TOKEN_FILE).exists()  # removed when the host stopped
    assert not [p.name for p in data.iterdir() if TOKEN_FILE in p.name]  # no temporary left


def test_a_given_token_is_used_and_no_file_is_left_with_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / TOKEN_FILE).write_text("a-stale-token-of-an-earlier-start\n")
    given = "given-token-0123456789abcdef"
    monkeypatch.setenv(TOKEN_ENV, given)
    made = start(monkeypatch, capsys, data)
    assert made.token == given and made.file is None


def test_no_token_is_an_explicit_choice_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "given-token-0123456789abcdef")
    made = start(monkeypatch, capsys, tmp_path / "data", "--no-token")
    assert made.token is None and made.file is None
    assert made.err.startswith("warning: --no-token: the API answers without a token")


def test_no_token_beyond_loopback_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--no-token", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "d")]
    assert main(argv) == 2
    assert "is not a loopback address: set a token" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["serve", "--no-token", "--token", "given-token-0123456789abcdef"])


# -- item 7: the Origin is the host's own, port included -----------------------------------


async def test_a_page_on_another_loopback_port_cannot_disable_a_plugin(
    make_host: MakeHost,
) -> None:
    host = make_host()
    await host.install(EMPLOYEE)
    app = create_app(host, lambda: ScriptedModel([ModelTurn(text="hi")]))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as api:
        disable = "/api/plugins/hcm-employee/disable"
        for origin in (
            "http://127.0.0.1:8766",
            "http://127.0.0.1",
            "https://127.0.0.1:8765",
            "http://localhost:8765",
        ):
            refused = await api.post(disable, headers={"Origin": origin})
            assert refused.status_code == 403, origin
            assert refused.json()["error"] == (
                "cross-site request refused: the Origin is not the host's own"
            )
        assert [p["enabled"] for p in (await api.get("/api/plugins")).json()] == [True]
        own = await api.post(disable, headers={"Origin": "http://127.0.0.1:8765"})
        assert own.status_code == 200 and own.json()["enabled"] is False
    async with httpx.AsyncClient(transport=transport, base_url="http://[::1]") as api:
        enable = "/api/plugins/hcm-employee/enable"
        assert (await api.post(enable, headers={"Origin": "http://[::1]:80"})).status_code == 200
