"""`python -m reference_host serve`: what it refuses at start and what it says once it listens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from reference_host.__main__ import main
from tests.conftest import REPO
from tests.reference_host.served_cli import STARTED, api_headers


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda root: None, "does not exist"),
        (lambda root: root.write_text("x"), "is not a folder"),
    ],
)
def test_an_unusable_allow_root_stops_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make, says: str
) -> None:
    root = tmp_path / "Documents"
    make(root)
    data = tmp_path / "data"
    argv = ["serve", "--data-dir", str(data), "--allow-root", str(tmp_path), str(root)]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"error: --allow-root {root} {says}\n"
    assert not data.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_allow_root_stops_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "locked"
    root.mkdir(mode=0)
    try:
        assert main(["serve", "--data-dir", str(tmp_path / "d"), "--allow-root", str(root)]) == 2
    finally:
        root.chmod(0o700)
    assert capsys.readouterr().err == f"error: --allow-root {root} cannot be read by this user\n"


def test_the_start_line_names_the_address_the_data_folder_and_the_roots(tmp_path: Path) -> None:
    data, root = tmp_path / "data", tmp_path / "files"
    root.mkdir()
    command = [sys.executable, "-m", "reference_host", "serve", "--port", "0"]
    command += ["--data-dir", str(data), "--allow-root", str(root), "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # the server prints it once it listens
        found = STARTED.match(line)
        assert found, line
        assert f"data folder {data} (created); database {data / 'host.sqlite3'}; " in line
        assert f"allowed roots: {root}; approval ask; model scripted" in line
        url = found.group(1)
        assert httpx.get(url + "api/plugins", headers=api_headers(data), timeout=10).json() == []
        assert httpx.get(url, timeout=10).headers["content-type"].startswith("text/html")
    finally:
        server.terminate()
        server.wait(timeout=30)
