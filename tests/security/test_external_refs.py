"""A plugin schema's $ref never makes the kit or the host open a file or call a URL (spec:
fengyu-manifest.md#references-stay-inside-the-schema).

The refs name traps (ref_traps.py): a file whose opens this process records and a loopback
server that counts its requests. Both hold {"type": "integer"}, so a checker that read one
would also judge the string arguments below otherwise. Every test ends with both untouched.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from conformance.checks.erp_tools import _unsendable_values
from conformance.checks.fengyu_providers import _admits_null
from conformance.checks.fengyu_sensitive import canary_targets
from conformance.strategies import GeneratorGap, InputSpace, defaulted_properties
from reference_host.plugins.input_contract import InputContract
from sample_plugins.erp_backends import serve_backends
from tests.conftest import FIXTURE_PLUGINS, MakeHost
from tests.faults.support import call_tool
from tests.security.ref_traps import FileTrap, UrlTrap, file_trap, url_trap

FENGYU_FIXTURE = FIXTURE_PLUGINS / "FY-MAN-011-external-ref"
ERP_FIXTURE = FIXTURE_PLUGINS / "ERP-TOOL-012-external-ref"
INPUT_AT = "/rpc/methods/greet/inputSchema"
OUTPUT_AT = "/rpc/methods/greet/outputSchema"

Traps = tuple[FileTrap, UrlTrap]
# A ref to a trap: (keywords for the schema's root, the property schema holding the ref).
Shape = Callable[[FileTrap, UrlTrap], tuple[dict[str, Any], dict[str, Any]]]
SHAPES: dict[str, Shape] = {
    "file-url": lambda file, url: ({}, {"$ref": file.uri}),
    "absolute-path-under-a-file-id": lambda file, url: (
        {"$id": "file:///"},
        {"$ref": str(file.path)},
    ),
    "loopback-url": lambda file, url: ({}, {"$ref": url.url("x.json")}),
    "relative-to-a-loopback-id": lambda file, url: (
        {"$id": url.url("root.json")},
        {"$ref": "x.json"},
    ),
}


@pytest.fixture
def traps(tmp_path: Path) -> Iterator[Traps]:
    folder = tmp_path / "traps"
    folder.mkdir()
    with file_trap(folder) as file, url_trap() as url:
        yield file, url
        assert file.opened == [], f"the trap file was opened: {file.opened}"
        assert url.hits == [], f"the trap URL was fetched: {url.hits}"


def schema_with(shape: Shape, traps: Traps, **extra: Any) -> dict[str, Any]:
    """An object schema whose property n is the shape's ref (with extra keywords beside it)."""
    root, ref = shape(*traps)
    return {**root, "type": "object", "properties": {"n": {**ref, **extra}}}


def trapped_fengyu_plugin(folder: Path, traps: Traps, *, input_ref: bool = True) -> Path:
    """The FY-MAN-011-external-ref fixture, its refs aimed at the traps: the input's title at
    the file, the output's summary and a sensitive input at the URL. Without input_ref the
    title is a plain string and only the output has a ref."""
    file, url = traps
    root = folder / FENGYU_FIXTURE.name
    shutil.copytree(FENGYU_FIXTURE, root)
    manifest = json.loads((root / "manifest.json").read_text("utf-8"))
    method = manifest["rpc"]["methods"]["greet"]
    properties = method["inputSchema"]["properties"]
    if input_ref:
        properties["title"]["$ref"] = file.uri
        properties["key"] = {
            "type": "string",
            "x-fengyu-sensitive": True,
            "allOf": [{"$ref": url.url("key.json")}],
        }
    else:
        properties["title"] = {"type": "string", "default": "Dr"}
    method["outputSchema"]["properties"]["summary"]["$ref"] = url.url("summary.json")
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2), "utf-8")
    return root


# --- the host --------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_the_hosts_argument_check_refuses_a_ref_unopened(shape: Shape, traps: Traps) -> None:
    problem = InputContract("greet", schema_with(shape, traps)).problem({"n": "text"})
    assert problem is not None
    assert problem.startswith("the inputSchema of greet cannot be evaluated: /properties/n/$ref")
    assert "FY-MAN-011" in problem


def test_the_hosts_argument_check_resolves_a_subschema_named_by_id(traps: Traps) -> None:
    """A URI that a subschema of the document names with $id is inside it: resolved, and the
    server at that URI is not asked."""
    named = traps[1].url("x.json")
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": named}},
        "$defs": {"s": {"$id": named, "type": "string"}},
    }
    contract = InputContract("greet", schema)
    assert contract.problem({"n": "text"}) is None
    assert contract.problem({"n": 5}) == (
        'the arguments do not match the inputSchema of greet at /n: the value breaks type "string"'
    )


async def test_a_plugin_installed_without_the_kit_has_its_calls_refused_unopened(
    make_host: MakeHost, tmp_path: Path, traps: Traps
) -> None:
    host = make_host()  # no validator: nothing checked the manifest before the install
    dispatched: list[str] = []
    host.manager.observers.append(lambda plugin, method, params: dispatched.append(method))
    await host.install(trapped_fengyu_plugin(tmp_path / "plugins", traps))
    answer = await call_tool(host, "fixture_greet", {"name": "Ada", "title": "Dr"})
    assert answer["success"] is False
    assert f"/properties/title/$ref: $ref {traps[0].uri!r}" in answer["error"]
    assert "FY-MAN-011" in answer["error"]
    assert dispatched == []


# --- the kit's generator and validators ------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_no_input_is_generated_from_a_schema_with_an_external_ref(
    shape: Shape, traps: Traps
) -> None:
    with pytest.raises(GeneratorGap, match=r"/properties/n/\$ref: \$ref"):
        InputSpace.of(schema_with(shape, traps, default="text"))


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_the_kits_validators_open_no_ref(shape: Shape, traps: Traps) -> None:
    """Each judges what it can without the ref's target: a default is not trusted, a canary
    has nowhere to go, null is not taken as admitted, no path value is found unsendable."""
    schema = schema_with(shape, traps, default="text")
    assert defaulted_properties(schema) == []
    sensitive = schema_with(shape, traps, **{"x-fengyu-sensitive": True})
    targets, unfit = canary_targets(sensitive, INPUT_AT)
    assert targets == [] and "cannot be evaluated" in unfit[0]
    assert not _admits_null(schema["properties"]["n"], schema)
    assert _unsendable_values(schema["properties"]["n"]) == []


def test_no_suite_of_the_kit_opens_an_input_ref(
    run_kit: Callable[..., Any], tmp_path: Path, traps: Traps
) -> None:
    """Every suite runs on the worker's plugin; each tool check says why it has no verdict."""
    result = run_kit([trapped_fengyu_plugin(tmp_path / "plugins", traps)])
    assert result.statuses()["FY-MAN-011"] == "failed"
    reasons = {r["requirement"]: r["reason"] for r in result.report["results"] if r["tool"]}
    for requirement in ("FY-TOOL-001", "FY-TOOL-002", "FY-TOOL-004", "FY-PROV-004"):
        assert reasons[requirement].startswith(
            f"{INPUT_AT}/properties/title/$ref: $ref {traps[0].uri!r} names something outside"
        ), requirement
        assert reasons[requirement].endswith("(FY-MAN-011)")


def test_the_kit_checks_no_result_against_an_output_ref(
    run_kit: Callable[..., Any], tmp_path: Path, traps: Traps
) -> None:
    plugin = trapped_fengyu_plugin(tmp_path / "plugins", traps, input_ref=False)
    result = run_kit([plugin], "-k", "FY-TOOL-001")
    [record] = [r for r in result.report["results"] if r["requirement"] == "FY-TOOL-001"]
    assert record["reason"].startswith(
        f"results cannot be checked: {OUTPUT_AT}/properties/summary/$ref: $ref "
        f"{traps[1].url('summary.json')!r} names something outside the schema"
    )


def test_the_erp_tool_check_names_an_external_ref_unopened(
    run_kit: Callable[..., Any], tmp_path: Path, traps: Traps
) -> None:
    root = tmp_path / "plugins" / ERP_FIXTURE.name
    shutil.copytree(ERP_FIXTURE, root)
    [tool_file] = (root / "metadata" / "tool").iterdir()
    tool = json.loads(tool_file.read_text("utf-8"))
    tool["inputSchema"]["properties"]["employeeId"]["$ref"] = traps[0].uri
    tool["inputSchema"]["properties"]["note"] = {"$ref": traps[1].url("note.json")}
    tool_file.write_text(json.dumps(tool, indent=2), "utf-8")
    with serve_backends(Starlette(routes=[Route("/{path:path}", answer_anything)])) as base:
        result = run_kit([root], "--plugin-base-url", base)
    assert result.statuses()["ERP-TOOL-012"] == "failed"
    found = {(f["pointer"], f["message"].split(";")[0]) for f in result.findings("ERP-TOOL-012")}
    assert found == {
        ("/inputSchema/properties/employeeId/$ref", f'found $ref "{traps[0].uri}"'),
        ("/inputSchema/properties/note/$ref", f'found $ref "{traps[1].url("note.json")}"'),
    }
    # The endpoint checks generate no input from the schema, and say why.
    reasons = {r["requirement"]: r["reason"] for r in result.report["results"] if r["tool"]}
    for requirement in ("ERP-DYN-001", "ERP-DYN-003"):
        assert reasons[requirement].startswith(
            f"/inputSchema/properties/employeeId/$ref: $ref {traps[0].uri!r} names something"
        ), requirement
        assert reasons[requirement].endswith("(ERP-TOOL-012)"), requirement


async def answer_anything(request: Request) -> JSONResponse:
    return JSONResponse({})
