"""The ERP namespace rule (spec: erp.md#the-namespace-rule), decided on the normalised path.

A tool's handler path is accepted only as a plain absolute path whose segments, once
percent-decoded (twice, to catch double encoding) and NFKC-folded (fullwidth dots and
solidus, dot leaders), hide no separator and are neither '.' nor '..', also before a ';'
(servlet containers drop `;params` and then resolve `..;` as `..`), and which lies under
/api/v1/plugins/ or /api/v1/entities/. The host applies it
at install and again before every dispatch; the kit reports it as ERP-TOOL-005.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote

ALLOWED_PREFIXES = ("/api/v1/plugins/", "/api/v1/entities/")


def namespace_problem(path: str) -> str | None:
    """Why path breaks the namespace rule, or None when it is fine."""
    if "\\" in path:
        return "contains a backslash"
    if "://" in path or path.startswith("//"):
        return "is an absolute URL, not a path"
    if not path.startswith("/"):
        return "does not start with /"
    if "?" in path or "#" in path:
        return "carries a query or fragment; use queryParams"
    segments = path.split("/")[1:]
    if "" in segments[:-1]:
        return "contains an empty segment (//)"
    decoded = [unicodedata.normalize("NFKC", unquote(unquote(s))) for s in segments]
    if any("/" in d or "\\" in d for d in decoded):
        return "encodes a path separator in a segment"
    if any(d.split(";", 1)[0] in (".", "..") for d in decoded):
        return "contains '.' or '..' (also percent-encoded, lookalike or with ;params)"
    normal = "/" + "/".join(decoded)
    if not any(normal.startswith(p) and len(normal) > len(p) for p in ALLOWED_PREFIXES):
        return f"is not under {' or '.join(ALLOWED_PREFIXES)}"
    return None
