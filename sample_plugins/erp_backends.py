"""The three sample ERP plugins' backends in one app, as one ERP serves them.

hello-plugin, hcm-employee and hcm-ai-intelligence each keep their endpoints in
`<plugin>/backend/app.py` under their own `/api/v1/plugins/<plugin>/` prefix. A real ERP serves
all plugins in one URL space (that is what makes hcm-ai-intelligence's cross-plugin
`employee.search` tool work), so `create_app()` puts all three in one Starlette app, with
hcm-ai-intelligence reading and changing hcm-employee's records.

Run it:

    python sample_plugins/erp_backends.py --port 8801
    curl localhost:8801/api/v1/plugins/hello-plugin/greeting -H "X-Tenant-Id: acme"

In tests:

    with serve_backends() as base_url:   # uvicorn on 127.0.0.1:<free port>, stopped after
        ...
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from reference_host.support.loopback import serve_on_loopback

HERE = Path(__file__).resolve().parent
PLUGINS = ("hello-plugin", "hcm-employee", "hcm-ai-intelligence")
LOOPBACK = "127.0.0.1"
ExceptionHandler = Callable[[Request, Exception], Awaitable[Response]]
_loaded: dict[str, ModuleType] = {}
_loading = threading.Lock()


def plugin_root(plugin: str) -> Path:
    if plugin not in PLUGINS:
        raise ValueError(f"not a sample ERP plugin: {plugin!r}")
    return HERE / plugin


@contextlib.contextmanager
def _shared_modules() -> Iterator[None]:
    """This folder on `sys.path`, where the backends find `erp_errors` (run as a script it
    is there already, as `sys.path[0]`)."""
    if str(HERE) in sys.path:
        yield
        return
    sys.path.insert(0, str(HERE))
    try:
        yield
    finally:
        sys.path.remove(str(HERE))


def load_backend(plugin: str) -> ModuleType:
    """`<plugin>/backend/app.py` as a module (plugin folders are not Python packages)."""
    with _loading:
        if plugin not in _loaded:
            path = plugin_root(plugin) / "backend" / "app.py"
            name = "erp_sample_backend_" + plugin.replace("-", "_")
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None, path
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                with _shared_modules():
                    spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
            _loaded[plugin] = module
        return _loaded[plugin]


def _http_error_handler() -> ExceptionHandler:
    """`erp_errors.http_error`, the one the backends import, loaded as they load it."""
    with _loading, _shared_modules():
        return importlib.import_module("erp_errors").http_error


def tool_files(plugin: str | None = None) -> list[Path]:
    """The `metadata/tool/*.json` files of one sample plugin, or of all three."""
    plugins = PLUGINS if plugin is None else (plugin,)
    return [
        path
        for name in plugins
        for path in sorted((plugin_root(name) / "metadata" / "tool").glob("*.json"))
    ]


def load_tool(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


async def _server_error(request: Request, exc: Exception) -> Response:
    return JSONResponse({"status": 500, "error": "internal error"}, status_code=500)


def create_app() -> Starlette:
    """All three backends in one app, over one fresh seeded employee directory."""
    hello = load_backend("hello-plugin")
    employee = load_backend("hcm-employee")
    intelligence = load_backend("hcm-ai-intelligence")
    directory = employee.EmployeeDirectory()
    app = Starlette(
        routes=[*hello.routes(), *employee.routes(directory), *intelligence.routes(directory)],
        exception_handlers={HTTPException: _http_error_handler(), Exception: _server_error},
    )
    # Starlette would answer `/x/` with a bodyless 307; every answer here is JSON
    # (spec: erp.md#what-the-endpoint-must-answer).
    app.router.redirect_slashes = False
    return app


def serve_backends(
    app: Starlette | None = None, *, port: int = 0, start_timeout: float = 10.0
) -> contextlib.AbstractContextManager[str]:
    """Serve `app` (a fresh `create_app()` by default) with uvicorn on 127.0.0.1 in a
    background thread; yields the base URL and stops the server on exit."""
    return serve_on_loopback(
        app if app is not None else create_app(),
        port=port,
        name="ERP sample backends",
        start_timeout=start_timeout,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=LOOPBACK, help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8801, help="port (default 8801)")
    options = parser.parse_args(argv)
    uvicorn.run(create_app(), host=options.host, port=options.port, log_level="info")


if __name__ == "__main__":
    main()
