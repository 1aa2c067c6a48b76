"""ERP namespace bypasses (spec: erp.md#the-namespace-rule), statically and at dispatch over
real HTTP.

Statically: each handler path that tries to leave /api/v1/plugins/** or /api/v1/entities/**
must be reported by the kit as ERP-TOOL-005 and refused by the host at install.

At dispatch: path parameters carrying separators, dots, encodings, query and fragment marks,
CR/LF or NUL must stay inside their one segment (or be refused), never reach another route.
The ERP is a Starlette app on uvicorn at 127.0.0.1 with an admin area outside the namespace;
a second instance sits behind servlet-style path mapping (what a Java ERP routes on).

Decision on Unicode lookalikes (fullwidth dots U+FF0E, ONE/TWO DOT LEADER U+2024/U+2025,
SMALL FULL STOP U+FE52, FULLWIDTH SOLIDUS U+FF0F): they are not dot-segments for RFC 3986,
WHATWG URL parsing, Starlette or Tomcat; but NFKC folds them into '.', '..' and '/', which
"best-fit" character conversions and Unicode-normalising proxies do, and no real endpoint is
named with them. So the kit reports them as ERP-TOOL-005 and the host refuses them at install
and again before dispatch, like servlet `..;` segments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.install_validation import kit_validator
from conformance.kit import KitRun, Status, Verdict
from conformance.options import KitOptions
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.erp.actors import ActorDirectory
from reference_host.host import Host
from reference_host.plugins.lifecycle import PluginError
from tests.conftest import MakeHost
from tests.security.conftest import (
    SEC_PLUGIN,
    Recorder,
    erp_tool,
    results,
    run_chat,
    the_failure,
    turn,
    write_erp_plugin,
)

ITEMS = f"/api/v1/plugins/{SEC_PLUGIN}/items"
ROOT = {"root": {"tenants": ["acme"], "permissions": ["SEC_READ", "SEC_ADMIN"]}}


def judge_manifest_suite(root: Path) -> dict[str, Verdict]:
    run = KitRun.load(KitOptions(plugin_dirs=(str(root),)), base=root)
    try:
        (plugin,) = run.plugins
        return {
            target.requirement.id: run.judge(target)
            for target in run.targets(plugin)
            if target.requirement.suite == "manifest"
        }
    finally:
        run.close()


def plugin_with_path(tmp_path: Path, path: str, **options: Any) -> Path:
    return write_erp_plugin(
        tmp_path / "plugin", erp_tool(f"{SEC_PLUGIN}.item.get", path, **options)
    )


def erp_host(make_host: MakeHost, base_url: str, *, validate: bool = True) -> Host:
    """A host from the make_host fixture on base_url as its ERP, whose actor is ROOT."""
    host = make_host(
        erp_base_url=base_url,
        approval=ApprovalPolicy(write=Decision.ALLOW, external=Decision.ALLOW),
        validator=kit_validator if validate else None,
    )
    host.actors = ActorDirectory.of(ROOT)
    return host


@pytest.fixture
def host(backend_url: str, make_host: MakeHost) -> Host:
    return erp_host(make_host, backend_url)


async def call_tool(host: Host, name: str, arguments: dict[str, Any]) -> list:
    return await run_chat(host, turn(name, arguments), tenant="acme", actor="root")


# --------------------------------------------------------------------------- static

BYPASSES = {
    "plain-dotdot": "/api/v1/plugins/sec-plugin/../../admin",
    "dot": "/api/v1/plugins/./../admin",
    "encoded-dotdot": "/api/v1/plugins/sec-plugin/%2e%2e/%2e%2e/admin",
    "encoded-upper": "/api/v1/plugins/sec-plugin/%2E%2E/%2E%2E/admin",
    "mixed-case-%2E": "/api/v1/plugins/sec-plugin/%2E%2e/%2e%2E/admin",
    "half-encoded": "/api/v1/plugins/sec-plugin/.%2e/%2E./admin",
    "double-encoded": "/api/v1/plugins/sec-plugin/%252e%252e/%252E%252E/admin",
    "double-encoded-mixed": "/api/v1/plugins/sec-plugin/%252E%2e/..%252e/admin",
    "encoded-slash": "/api/v1/plugins/sec-plugin%2f..%2f..%2fadmin",
    "double-encoded-slash": "/api/v1/plugins/sec-plugin%252f..%252f..%252fadmin",
    "doubled-slash": "/api/v1/plugins//admin",
    "doubled-slash-start": "//api/v1/plugins/sec-plugin/items",
    "trailing-doubled-slash": "/api/v1/plugins/sec-plugin//",
    "backslash": "/api/v1/plugins/sec-plugin\\..\\..\\admin",
    "backslash-start": "/\\evil.example/api/v1/plugins/x",
    "encoded-backslash": "/api/v1/plugins/sec-plugin%5c..%5c..%5cadmin",
    "double-encoded-backslash": "/api/v1/plugins/sec-plugin%255c..%255cadmin",
    "absolute-url": "http://evil.example/api/v1/plugins/sec-plugin/items",
    "absolute-url-loopback": "http://127.0.0.1:9/api/v1/plugins/sec-plugin/items",
    "scheme-relative //host": "//evil.example/api/v1/plugins/sec-plugin/items",
    "userinfo //host": "//api@evil.example/api/v1/plugins/x",
    "no-leading-slash": "api/v1/plugins/sec-plugin/items",
    "query": "/api/v1/plugins/sec-plugin/items?next=/api/v1/admin",
    "query-with-dotdot": "/api/v1/plugins/sec-plugin?/../../admin",
    "fragment": "/api/v1/plugins/sec-plugin/items#/../../../admin",
    "outside": "/api/v1/admin/users",
    "prefix-only": "/api/v1/plugins/",
    "prefix-lookalike": "/api/v1/pluginsadmin/x",
    "upper-case-prefix": "/API/V1/PLUGINS/sec-plugin/items",
    "entities-escape": "/api/v1/entities/%2e%2e/admin",
}

LOOKALIKES = {
    "fullwidth-dots": "/api/v1/plugins/\uff0e\uff0e/\uff0e\uff0e/admin",
    "fullwidth-dots-encoded": "/api/v1/plugins/%EF%BC%8E%EF%BC%8E/%EF%BC%8E%EF%BC%8E/admin",
    "two-dot-leader": "/api/v1/plugins/\u2025/\u2025/admin",
    "one-dot-leaders": "/api/v1/plugins/\u2024\u2024/\u2024\u2024/admin",
    "small-full-stops": "/api/v1/plugins/\ufe52\ufe52/\ufe52\ufe52/admin",
    "fullwidth-solidus": "/api/v1/plugins/x\uff0f..\uff0f..\uff0fadmin",
}

SERVLET_PARAMETERS = {
    "dotdot-semicolon": "/api/v1/plugins/..;/admin",
    "dotdot-semicolon-twice": "/api/v1/plugins/sec-plugin/..;/..;/admin",
    "dotdot-semicolon-param": "/api/v1/plugins/sec-plugin/..;x=1/..;y=2/admin",
    "encoded-dotdot-semicolon": "/api/v1/plugins/sec-plugin/%2e%2e;/%2e%2e;/admin",
    "dot-semicolon": "/api/v1/plugins/.;/..;/admin",
}


def assert_reported(root: Path, path: str) -> None:
    verdict = judge_manifest_suite(root)["ERP-TOOL-005"]
    assert verdict.status is Status.FAILED, (path, verdict)
    for finding in verdict.findings:
        assert finding.requirement == "ERP-TOOL-005"
        assert finding.file == f"metadata/tool/{SEC_PLUGIN}.item.get.json"
        assert finding.pointer == "/handlerConfig/path"
        assert repr(path) in finding.message


@pytest.mark.parametrize("path", BYPASSES.values(), ids=BYPASSES.keys())
async def test_bypass_is_reported_by_the_kit_and_refused_at_install(
    tmp_path: Path, host: Host, path: str
) -> None:
    root = plugin_with_path(tmp_path, path)
    assert_reported(root, path)
    with pytest.raises(PluginError) as refused:
        await host.install(root)
    assert any(p.startswith("ERP-TOOL-005 ") for p in refused.value.problems)
    assert host.plugins.list() == [] and host.store.tool_codes() == {}


def test_the_plain_paths_are_accepted(tmp_path: Path) -> None:
    """The control: the same plugin with a plain in-namespace path passes ERP-TOOL-005."""
    for i, path in enumerate((ITEMS, "/api/v1/entities/employee", f"{ITEMS}/{{id}}")):
        params = ("id",) if "{id}" in path else ()
        root = write_erp_plugin(
            tmp_path / str(i), erp_tool(f"{SEC_PLUGIN}.item.get", path, path_params=params)
        )
        assert judge_manifest_suite(root)["ERP-TOOL-005"].status is Status.PASSED


@pytest.mark.parametrize("path", LOOKALIKES.values(), ids=LOOKALIKES.keys())
def test_unicode_lookalikes_are_reported(tmp_path: Path, path: str) -> None:
    assert_reported(plugin_with_path(tmp_path, path), path)


@pytest.mark.parametrize("path", SERVLET_PARAMETERS.values(), ids=SERVLET_PARAMETERS.keys())
def test_servlet_path_parameters_are_reported(tmp_path: Path, path: str) -> None:
    assert_reported(plugin_with_path(tmp_path, path), path)


# --------------------------------------------------------------------------- dispatch

VALUES = [
    "/",
    "a/b",
    "../../../admin",
    "..",
    ".",
    "...",
    "%2e%2e",
    "%2E%2E%2F%2E%2E%2Fadmin",
    "%252e%252e%252fadmin",
    "..%2f..%2fadmin",
    "..\\..\\admin",
    "..;",
    "..;/admin",
    "\uff0e\uff0e",
    "?x=1",
    "?/../../admin",
    "#",
    "#/../../admin",
    "a\r\nX-Tenant-Id: evil",
    "a\r\n\r\nGET /api/v1/admin HTTP/1.1",
    "a\nb",
    "a\x00b",
    "%00",
    "%0d%0aX: y",
    "//evil.example",
    "http://evil.example/",
    "@evil.example",
    " ",
    "~admin",
    "{id}",
]


@pytest.mark.parametrize("value", VALUES)
async def test_a_path_parameter_stays_in_its_segment(
    tmp_path: Path, host: Host, hits: Recorder, value: str
) -> None:
    await host.install(plugin_with_path(tmp_path, f"{ITEMS}/{{id}}", path_params=("id",)))
    events = await call_tool(host, "sec-plugin_item_get", {"id": value})
    assert "admin" not in hits.routes()
    (output,) = results(events)
    if output.get("success") is False and not hits.hits:
        return  # refused before anything went out
    (hit,) = hits.hits
    raw = hit["rawPath"].split("/")
    assert raw[:-1] == ["", "api", "v1", "plugins", SEC_PLUGIN, "items"], hit["rawPath"]
    assert hit["tenant"] == "acme" and hit["actor"] == "root"
    assert hit["route"] == "item" and hit["params"] == {"id": value}, hit


async def test_an_encoded_slash_never_reaches_a_sibling_route(
    tmp_path: Path, host: Host, hits: Recorder
) -> None:
    await host.install(plugin_with_path(tmp_path, f"{ITEMS}/{{id}}", path_params=("id",)))
    await call_tool(host, "sec-plugin_item_get", {"id": "1/secret"})
    assert "sibling" not in hits.routes()


@pytest.mark.parametrize(
    "value",
    ["x&admin=1", "x#frag", "x\r\nX-Evil: 1", "a=b;c", "../../admin", "x\x00y", "%26admin%3D1"],
)
async def test_a_query_value_stays_one_value(
    tmp_path: Path, host: Host, hits: Recorder, value: str
) -> None:
    await host.install(
        write_erp_plugin(
            tmp_path / "plugin",
            erp_tool(f"{SEC_PLUGIN}.item.find", ITEMS, query_params=("q",)),
        )
    )
    events = await call_tool(host, "sec-plugin_item_find", {"q": value, "admin": "1"})
    (output,) = results(events)
    assert output["route"] == "items"
    (hit,) = hits.hits
    assert hit["route"] == "items" and hit["query"] == [("q", value)], hit
    assert [h for h in hit["headers"] if h[0].lower() == "x-evil"] == []


RECHECKED = {
    name: path
    for name, path in (BYPASSES | LOOKALIKES | SERVLET_PARAMETERS).items()
    if path.startswith("/")
}


@pytest.mark.parametrize("path", RECHECKED.values(), ids=RECHECKED.keys())
async def test_dispatch_rechecks_the_namespace_even_without_install_validation(
    tmp_path: Path, backend_url: str, hits: Recorder, path: str, make_host: MakeHost
) -> None:
    """A host installing without the kit (or a tampered store) still never calls out of
    the namespace: the rule is checked again before every dispatch."""
    host = erp_host(make_host, backend_url, validate=False)
    try:
        tool = erp_tool(f"{SEC_PLUGIN}.item.get", path)
        tool["handlerConfig"]["path"] = path
        await host.install(write_erp_plugin(tmp_path / "plugin", tool))
        error = the_failure(await call_tool(host, "sec-plugin_item_get", {}))
        assert error.startswith(f"{SEC_PLUGIN}.item.get: handler path ")
    finally:
        await host.close()
    assert hits.hits == []


# --------------------------------------------------------------------------- servlet ERPs


@pytest.fixture
def servlet_host(servlet_url: str, make_host: MakeHost) -> Host:
    return erp_host(make_host, servlet_url)


@pytest.mark.parametrize("value", ["a/b", "../../../admin", "..%2f..%2fadmin", "%2e%2e", "..;"])
async def test_servlet_erp_keeps_values_in_their_segment(
    tmp_path: Path, servlet_host: Host, hits: Recorder, value: str
) -> None:
    await servlet_host.install(plugin_with_path(tmp_path, f"{ITEMS}/{{id}}", path_params=("id",)))
    await call_tool(servlet_host, "sec-plugin_item_get", {"id": value})
    assert "admin" not in hits.routes()


async def test_semicolon_dotdot_template_never_reaches_admin_on_a_servlet_erp(
    tmp_path: Path, servlet_url: str, hits: Recorder, make_host: MakeHost
) -> None:
    """Installed without validation, '/..;/' is still refused before it is sent."""
    host = erp_host(make_host, servlet_url, validate=False)
    try:
        await host.install(plugin_with_path(tmp_path, SERVLET_PARAMETERS["dotdot-semicolon"]))
        error = the_failure(await call_tool(host, "sec-plugin_item_get", {}))
    finally:
        await host.close()
    assert error.startswith(f"{SEC_PLUGIN}.item.get: handler path ")
    assert "admin" not in hits.routes()


async def test_dot_values_never_leave_the_namespace_on_a_servlet_erp(
    tmp_path: Path, servlet_host: Host, hits: Recorder
) -> None:
    """A generic Entity Engine tool: /api/v1/entities/{entity}/{id}."""
    tool = erp_tool(
        f"{SEC_PLUGIN}.entity.get", "/api/v1/entities/{entity}/{id}", path_params=("entity", "id")
    )
    await servlet_host.install(write_erp_plugin(tmp_path / "plugin", tool))
    await call_tool(servlet_host, "sec-plugin_entity_get", {"entity": "..", "id": "admin"})
    assert "admin" not in hits.routes()


def test_tool_file_round_trip(tmp_path: Path) -> None:
    """The generated tool files are what the kit reads (guards the helpers above)."""
    root = plugin_with_path(tmp_path, ITEMS)
    data = json.loads((root / "metadata/tool/sec-plugin.item.get.json").read_text())
    assert data["handlerConfig"]["path"] == ITEMS
    assert {
        rid for rid, v in judge_manifest_suite(root).items() if v.status is Status.FAILED
    } == set()
