"""FengYu's file marker in the host (spec: host.md#route-b-injection): a parameter marked
`format: fengyu-file` / `fengyu-directory` is filled from a grant by its marker, whatever its
description says, and takes only granted FileRefs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reference_host.host import Host
from tests.conftest import MakeHost, python_plugin, v2_manifest
from tests.security.conftest import Dispatched, results, run_chat, turn, watched_host

PLUGIN = "fixture.marked-files"


def marked_plugin(folder: Path, parameter: dict[str, Any], effect: str = "read") -> Path:
    """A python-runtime plugin whose one tool takes `target`, schema as given."""
    manifest = v2_manifest(
        PLUGIN,
        "Marked files",
        "Reads one granted file.",
        {
            "inspect": {
                "description": "Inspect the target.",
                "inputSchema": {"type": "object", "properties": {"target": parameter}},
            }
        },
        [
            {
                "name": "marked_inspect",
                "description": "Inspect the target.",
                "method": "inspect",
                "effect": effect,
            }
        ],
    )
    return python_plugin(
        folder,
        manifest,
        "import sys\nsys.dont_write_bytecode = True\nfrom misbehaving_worker import run\n\nrun()\n",
        ["files.read", "files.write"],
    )


async def host_with(
    tmp_path: Path, make_host: MakeHost, parameter: dict[str, Any], effect: str = "read"
) -> tuple[Host, Path, Dispatched]:
    files = tmp_path / "files"
    files.mkdir()
    host, sent = watched_host(make_host, files)
    await host.install(marked_plugin(tmp_path / "plugin", parameter, effect))
    return host, files, sent


async def test_a_marked_file_is_injected_though_its_words_say_output_folder(
    tmp_path: Path, make_host: MakeHost
) -> None:
    marked = {"type": "string", "format": "fengyu-file", "description": "Output folder."}
    host, files, sent = await host_with(tmp_path, make_host, marked)
    source = files / "in.txt"
    source.write_text("hello\n")
    ref = host.grants.attach("c1", PLUGIN, source, "read")

    events = await run_chat(host, turn("marked_inspect", {}))

    assert results(events)[0]["success"] is True, results(events)
    copy = host.grants.copy_path(PLUGIN, ref)
    assert sent.calls[-1] == (PLUGIN, "inspect", {"target": copy})
    assert Path(copy).read_text() == "hello\n"


async def test_a_marked_read_write_folder_takes_a_writable_grant_only(
    tmp_path: Path, make_host: MakeHost
) -> None:
    marked = {
        "type": "string",
        "format": "fengyu-directory",
        "x-fengyu-file-access": "read-write",
        "description": "A FileRef.",  # words that would class it a read file, unmarked
    }
    host, files, sent = await host_with(tmp_path, make_host, marked, effect="write")
    folder = files / "out"
    folder.mkdir()
    read_only = host.grants.attach("c1", PLUGIN, folder, "read")

    refused = await run_chat(host, turn("marked_inspect", {"target": read_only}))
    assert "is read-only; this parameter writes" in results(refused)[0]["error"]
    assert sent.calls == []

    writable = host.grants.attach("c2", PLUGIN, folder, "read-write")
    events = await run_chat(host, turn("marked_inspect", {}), conversation="c2")
    assert results(events)[0]["success"] is True, results(events)
    staging = host.grants.copy_path(PLUGIN, writable, write=True)
    assert sent.calls == [(PLUGIN, "inspect", {"target": staging})]


async def test_a_marked_parameter_refuses_a_path_the_model_wrote(
    tmp_path: Path, make_host: MakeHost
) -> None:
    marked = {"type": "string", "format": "fengyu-file"}
    host, files, sent = await host_with(tmp_path, make_host, marked)
    (files / "secret.txt").write_text("no\n")

    events = await run_chat(host, turn("marked_inspect", {"target": str(files / "secret.txt")}))

    assert "takes a FileRef granted in this conversation" in results(events)[0]["error"]
    assert sent.calls == []
