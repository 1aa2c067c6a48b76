"""An ERP tool's `handlerConfig` (spec: erp.md#path-and-query-parameters): where a call goes,
and how arguments fill it in.

Placeholders, path segments and query values are decided here, without any HTTP client, so
the kit reports the same rules (ERP-TOOL-006) that the host applies before it sends.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from plugin_spec.json_types import JsonMapping

METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
# RFC 9110 section 9.2.2: repeating these has the effect of sending them once.
PLACEHOLDER = re.compile(r"\{([^{}/]*)\}")


class DispatchError(Exception):
    """A reason the call cannot be made or did not succeed; becomes the failure envelope."""


@dataclass(frozen=True)
class RestHandler:
    """Where a tool call goes: an ERP tool file's `handlerConfig`."""

    path: str
    method: str
    path_params: tuple[str, ...] = ()
    query_params: tuple[str, ...] = ()
    body_from_input: bool = False

    @classmethod
    def from_config(cls, handler_config: object) -> RestHandler:
        """Read a `handlerConfig` object; a ValueError says what is wrong with it."""
        if not isinstance(handler_config, Mapping):
            raise ValueError("handlerConfig must be an object")
        path = handler_config.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError("handlerConfig.path must be a string starting with '/'")
        method = handler_config.get("method")
        if not isinstance(method, str) or method.upper() not in METHODS:
            raise ValueError(f"handlerConfig.method must be one of {', '.join(sorted(METHODS))}")
        body = handler_config.get("bodyFromInput", False)
        if body is None:
            body = False
        if not isinstance(body, bool):
            raise ValueError("handlerConfig.bodyFromInput must be a boolean")
        handler = cls(
            path=path,
            method=method.upper(),
            path_params=_names(handler_config, "pathParams"),
            query_params=_names(handler_config, "queryParams"),
            body_from_input=body,
        )
        problem = handler.problem()
        if problem:
            raise ValueError(problem)
        return handler

    def problem(self) -> str | None:
        """What makes this handler unusable (None when it is fine)."""
        if self.method not in METHODS:
            return f"method {self.method!r} is not one of {', '.join(sorted(METHODS))}"
        if not self.path.startswith("/"):
            return f"path {self.path!r} does not start with '/'"
        if problem := placeholder_problem(self.path):
            return f"path {self.path!r} {problem}"
        placeholders = PLACEHOLDER.findall(self.path)
        unlisted = [name for name in placeholders if name not in self.path_params]
        if unlisted:
            return f"path placeholder {{{unlisted[0]}}} is not listed in pathParams"
        unused = [name for name in self.path_params if name not in placeholders]
        if unused:
            return f"pathParams entry {unused[0]!r} has no {{{unused[0]}}} placeholder in the path"
        return None


def placeholder_problem(path: str) -> str | None:
    """What keeps path from splitting into text and `{name}` placeholders (None when it
    splits); the kit reports the same as ERP-TOOL-006."""
    names = PLACEHOLDER.findall(path)
    if "" in names:
        return "has an empty {} placeholder"
    if len(set(names)) != len(names):
        return "repeats a placeholder"
    leftover = PLACEHOLDER.sub("", path)
    if "{" in leftover or "}" in leftover:
        return "has an unbalanced brace (a stray or doubled one, or one around a '/')"
    return None


def _names(config: JsonMapping, key: str) -> tuple[str, ...]:
    value = config.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"handlerConfig.{key} must be a list of non-empty strings")
    if len(set(value)) != len(value):
        raise ValueError(f"handlerConfig.{key} lists a name twice")
    return tuple(value)


def _scalar_text(value: object, what: str) -> str:
    """A JSON scalar as URL text: booleans as true/false, numbers and strings as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise DispatchError(f"{what} must be a string, number or boolean, not {type(value).__name__}")


def encode_segment(value: object, name: str = "value") -> str:
    """One path segment holding `value`: nothing in it can add a segment or end the path.

    Percent-encoding alone is not enough: many servers (uvicorn, servlet containers) decode
    `%2F` before routing, and a servlet ERP resolves a decoded `..` (or `..;x`). So a value that
    holds a separator or is a dot segment, also after NFKC folding of lookalikes such as
    fullwidth dots and slashes, is refused rather than sent.
    """
    if value is None:
        raise DispatchError(f"missing path parameter {name!r}")
    text = _scalar_text(value, f"path parameter {name!r}")
    if text == "":
        raise DispatchError(f"path parameter {name!r} must not be empty")
    folded = unicodedata.normalize("NFKC", text)
    if "/" in folded or "\\" in folded:
        raise DispatchError(f"path parameter {name!r} must not contain '/' or '\\'")
    if folded.split(";", 1)[0] in (".", ".."):
        raise DispatchError(f"path parameter {name!r} must not be a dot segment ('.' or '..')")
    return quote(text, safe="")


def substitute_path(handler: RestHandler, arguments: JsonMapping) -> str:
    """The handler's path with each `{name}` replaced by its encoded argument."""
    problem = handler.problem()
    if problem:
        raise DispatchError(f"unusable handlerConfig: {problem}")
    missing = [name for name in handler.path_params if name not in arguments]
    if missing:
        raise DispatchError(f"missing path parameter {missing[0]!r}")
    return PLACEHOLDER.sub(
        lambda match: encode_segment(arguments[match.group(1)], match.group(1)), handler.path
    )


def query_items(handler: RestHandler, arguments: JsonMapping) -> list[tuple[str, str]]:
    """The query string as (key, value) pairs, in the handler's order: lists repeat the key,
    booleans are true/false, absent keys and None values are left out."""
    items: list[tuple[str, str]] = []
    for name in handler.query_params:
        value = arguments.get(name)
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            if item is None:
                continue
            if isinstance(item, list | dict):
                raise DispatchError(f"query parameter {name!r} must hold scalars or a list of them")
            items.append((name, _scalar_text(item, f"query parameter {name!r}")))
    return items
