"""The JSON error answers every sample ERP backend gives (every answer is JSON;
spec: erp.md#what-the-endpoint-must-answer).

Each `<plugin>/backend/app.py` imports this module as `erp_errors`, from the `sample_plugins/`
folder that serves them: `erp_backends.load_backend` puts that folder on `sys.path` while it
loads a backend, and running `python sample_plugins/erp_backends.py` has it there already. To
serve one backend on its own, put the folder on the path too, e.g.

    PYTHONPATH=sample_plugins uvicorn --app-dir sample_plugins/hello-plugin/backend \
        app:create_app --factory
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


async def http_error(request: Request, exc: Exception) -> Response:
    """An `HTTPException` as `{"status", "error"}` JSON, with its status and headers."""
    assert isinstance(exc, HTTPException)
    return JSONResponse(
        {"status": exc.status_code, "error": exc.detail},
        status_code=exc.status_code,
        headers=exc.headers,
    )
