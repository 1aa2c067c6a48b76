"""The plugin routes:

GET    /api/plugins                          the installed plugins, with supportsAi, then the
                                             mounted MCP servers (profile "mcp", era)
POST   /api/plugins            {"path"}      install or upgrade (201 new, 200 upgrade)
POST   /api/plugins/{id}/enable
POST   /api/plugins/{id}/disable
DELETE /api/plugins/{id}                     204
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from pydantic import Field

from reference_host.host import Host
from reference_host.http.answers import ListedPlugin, PluginAnswer
from reference_host.http.bodies import PATH_LIMIT, StrictBody
from reference_host.http.deps import HostDep
from reference_host.http.error_answers import ApiError
from reference_host.http.openapi import CONFLICT, NOT_FOUND
from reference_host.plugins.lifecycle import PluginError
from reference_host.support.quoting import quoted

router = APIRouter()


class InstallBody(StrictBody):
    path: str = Field(min_length=1, max_length=PATH_LIMIT)
    downgrade: bool = False  # an older version may replace the installed one


@router.get("/api/plugins", response_model=list[ListedPlugin], response_model_exclude_none=True)
async def list_plugins(host: HostDep) -> list[dict[str, Any]]:
    mounted = host.mcp.listing() if host.mcp is not None else []
    return [*(info.to_json() for info in host.plugins.list()), *mounted]


@router.post(
    "/api/plugins",
    response_model=PluginAnswer,
    responses={
        201: {"description": "installed (200: upgraded)", "model": PluginAnswer},
        404: NOT_FOUND,
        409: CONFLICT,
    },
)
async def install_plugin(body: InstallBody, host: HostDep) -> JSONResponse:
    before = {info.id for info in host.plugins.list()}
    try:
        info = await host.install(body.path, body.downgrade)
    except PluginError as exc:
        raise ApiError(_install_status(exc), exc.message, exc.problems) from None
    return JSONResponse(info.to_json(), status_code=200 if info.id in before else 201)


@router.post(
    "/api/plugins/{plugin_id}/enable",
    response_model=PluginAnswer,
    responses={404: NOT_FOUND, 409: CONFLICT},
)
async def enable_plugin(plugin_id: str, host: HostDep) -> dict[str, Any]:
    require_plugin(host, plugin_id)
    try:
        info = await host.enable(plugin_id)
    except PluginError as exc:
        raise ApiError(_install_status(exc), exc.message, exc.problems) from None
    return info.to_json()


@router.post(
    "/api/plugins/{plugin_id}/disable", response_model=PluginAnswer, responses={404: NOT_FOUND}
)
async def disable_plugin(plugin_id: str, host: HostDep) -> dict[str, Any]:
    require_plugin(host, plugin_id)
    return (await host.disable(plugin_id)).to_json()


@router.delete("/api/plugins/{plugin_id}", status_code=204, responses={404: NOT_FOUND})
async def uninstall_plugin(plugin_id: str, host: HostDep) -> Response:
    require_plugin(host, plugin_id)
    await host.uninstall(plugin_id)
    return Response(status_code=204)


def require_plugin(host: Host, plugin_id: str) -> None:
    """404 (as an ApiError) unless plugin_id is installed."""
    try:
        host.plugins.get(plugin_id)
    except PluginError:
        raise ApiError(404, f"no plugin {quoted(plugin_id)} is installed") from None


def _install_status(exc: PluginError) -> int:
    """409 when the plugin clashes with what is installed, 404 when there is no such
    plugin, else 400 (the plugin itself is wrong)."""
    return {"conflict": 409, "not_found": 404}.get(exc.kind, 400)
