"""The dev console: `GET /` and its two assets, a page that drives the host through the same
HTTP API as every other client (install, grants, chat with its tool events and approvals).

Why plain files served from the package: it must work offline with nothing to build, so it
is one HTML page, one script and one style sheet, read from this folder (package data in the
wheel). The page shows text from plugins and models, which are not trusted, so it is served
with a Content-Security-Policy that allows only its own script and style (no inline code,
no other origin); its script writes all such text with textContent. The routes are left out
of the OpenAPI document: they are not part of the API.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter
from starlette.responses import Response

from reference_host.http.error_answers import ApiError
from reference_host.support.quoting import quoted

router = APIRouter(include_in_schema=False)

PAGE = "index.html"
ASSET_PREFIX = "/console/"
# File name -> media type; nothing else in the folder is served.
ASSETS = {"console.js": "text/javascript", "console.css": "text/css"}
# Paths a browser loads before the page can send the token (reference_host.http.access).
PUBLIC_PATHS = frozenset({"/", *(ASSET_PREFIX + name for name in ASSETS)})
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _read(name: str) -> bytes:
    return files(__name__).joinpath(name).read_bytes()


@router.get("/")
async def page() -> Response:
    return Response(_read(PAGE), media_type="text/html; charset=utf-8", headers=HEADERS)


@router.get(ASSET_PREFIX + "{name}")
async def asset(name: str) -> Response:
    media_type = ASSETS.get(name)
    if media_type is None:
        raise ApiError(404, f"no console file {quoted(name)}")
    return Response(_read(name), media_type=f"{media_type}; charset=utf-8", headers=HEADERS)
