"""The worker's run loop: read requests on stdin, dispatch, answer on stdout
(spec: fengyu-worker.md#framing-on-stdin-and-stdout).

One request at a time, in order, like FengYu's own SDK. stdout carries protocol frames only:
while the loop runs, sys.stdout is pointed at stderr, so a stray print() cannot corrupt the
stream. Notifications are never answered, not even with an error.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from jsonschema import Draft202012Validator

from plugin_spec.framing import read_frames
from plugin_spec.schema_subset import to_json_schema
from reference_host.worker.errors import (
    HANDLER_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
)

SET_LEVEL = "$/fengyu/logging/setLevel"
LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "WARN": 30, "WARNING": 30, "ERROR": 40, "OFF": 100}
_MISSING = object()

Handler = Callable[[dict[str, Any], "Context"], Any]


@dataclass(frozen=True)
class Context:
    """What a handler may want besides its params."""

    request_id: Any
    method: str
    plugin_id: str
    plugin_root: Path
    log: logging.Logger


@dataclass(frozen=True)
class Method:
    handler: Handler
    validator: Draft202012Validator | None
    nulls: Nulls | None = None


@dataclass(frozen=True)
class Nulls:
    """Where in a method's params a null stands for an omitted property (spec:
    providers.md#what-providers-send, FY-PROV-004).

    OpenAI's strict mode makes every property required and lets the model send null for one it
    would leave out, so a worker that validated such a null against `{"type": "string"}` would
    refuse every call that leaves an optional parameter unset. The decision: null stands for
    omitted whenever the property is optional and its own schema does not admit null. Such
    nulls are dropped before the params are validated, and the handler never sees them.
    """

    dropped: frozenset[str]  # optional properties of this object whose schema refuses null
    properties: dict[str, Nulls]  # properties whose values hold such places further down
    items: Nulls | None  # array items that hold them

    @classmethod
    def of(cls, schema: Any, validator: Draft202012Validator) -> Nulls | None:
        """The places of schema (its objects' properties and arrays' items); None if none."""
        if not isinstance(schema, dict):
            return None
        declared = schema.get("properties")
        properties = declared if isinstance(declared, dict) else {}
        listed = schema.get("required")
        # Only names count: a required that holds anything else is the validator's to refuse.
        required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
        dropped = frozenset(
            name
            for name, sub in properties.items()
            if name not in required and not _admits_null(validator, sub)
        )
        inner = {
            name: nulls
            for name, sub in properties.items()
            if (nulls := cls.of(sub, validator)) is not None
        }
        items = cls.of(schema.get("items"), validator)
        return cls(dropped, inner, items) if dropped or inner or items else None

    def drop(self, value: Any) -> Any:
        """value without the nulls that stand for omitted properties (a new value: the
        request's own objects are left as they are)."""
        if isinstance(value, dict):
            return {
                key: self.properties[key].drop(item) if key in self.properties else item
                for key, item in value.items()
                if not (item is None and key in self.dropped)
            }
        if isinstance(value, list) and self.items is not None:
            return [self.items.drop(item) for item in value]
        return value


def _admits_null(validator: Draft202012Validator, schema: Any) -> bool:
    """Whether null is valid against one subschema ($refs resolve against the whole schema);
    a subschema that cannot be evaluated keeps its nulls, to be judged by the validator."""
    try:
        return bool(validator.evolve(schema=schema).is_valid(None))
    except Exception:
        return True


class Worker:
    """A registry of methods and the loop that serves them over stdio."""

    def __init__(self, schemas: dict[str, dict[str, Any]] | None = None) -> None:
        self._schemas = schemas or {}
        self._methods: dict[str, Method] = {}
        self.log = logging.getLogger("worker")

    @classmethod
    def from_manifest(cls, anchor: str | Path) -> Worker:
        """A worker whose methods validate params against the manifest's rpc.methods schemas.

        anchor is any path inside the plugin (usually __file__); the nearest manifest.json
        above it is used, so schemas are declared once, in the manifest.
        """
        for folder in Path(anchor).resolve().parents:
            manifest = folder / "manifest.json"
            if manifest.is_file():
                data = json.loads(manifest.read_text(encoding="utf-8"))
                methods = (data.get("rpc") or {}).get("methods") or {}
                return cls({name: m.get("inputSchema") for name, m in methods.items()})
        raise FileNotFoundError(f"no manifest.json above {anchor}")

    def method(
        self, name: str, input_schema: dict[str, Any] | None = None
    ) -> Callable[[Handler], Handler]:
        """Register a handler; params are validated against input_schema (or the manifest's)."""
        if name == SET_LEVEL or name.startswith("rpc."):
            raise ValueError(f"{name} is reserved")
        schema = to_json_schema(
            input_schema if input_schema is not None else self._schemas.get(name)
        )
        validator = Draft202012Validator(schema) if schema else None
        nulls = Nulls.of(schema, validator) if validator is not None else None

        def register(handler: Handler) -> Handler:
            self._methods[name] = Method(handler, validator, nulls)
            return handler

        return register

    def run(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
        """Serve until stdin reaches EOF; returns the process exit code (0)."""
        stdin = stdin or sys.stdin.buffer
        out = stdout or sys.stdout.buffer
        _configure_logging(sys.stderr)
        saved, sys.stdout = sys.stdout, sys.stderr
        try:
            for frame in read_frames(stdin):
                if frame.oversize:
                    oversize = RpcError(INVALID_REQUEST, "frame exceeds 16 MiB")
                    _write(out, _encode(_error(None, oversize)))
                elif frame.data and not frame.data.isspace():
                    reply = self.respond(frame.data)
                    if reply is not None:
                        _write(out, reply)
        finally:
            sys.stdout = saved
        return 0

    def handle(self, frame: bytes) -> dict[str, Any] | None:
        """The response to one frame as an object, or None for a notification."""
        reply = self.respond(frame)
        return None if reply is None else json.loads(reply)

    def respond(self, frame: bytes) -> bytes | None:
        """The response to one frame as the bytes to send, or None for a notification.

        The result is serialised once, straight into the frame: a big result is neither
        encoded twice nor copied into a reply object first.
        """
        try:
            request = json.loads(frame)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _encode(_error(None, RpcError(PARSE_ERROR, f"Parse error: {exc}")))
        except RecursionError:
            return _encode(_error(None, RpcError(PARSE_ERROR, "Parse error: nested too deeply")))
        if not isinstance(request, dict):
            return _encode(
                _error(None, RpcError(INVALID_REQUEST, "Invalid Request: expected an object"))
            )
        request_id = request.get("id", _MISSING)
        id_ok = request_id is _MISSING or _valid_id(request_id)
        problem = _request_problem(request) if id_ok else "id must be a string, number or null"
        if problem:
            reply_id = request_id if id_ok and request_id is not _MISSING else None
            invalid = RpcError(INVALID_REQUEST, f"Invalid Request: {problem}")
            return _encode(_error(reply_id, invalid))
        try:
            result = self._dispatch(request, None if request_id is _MISSING else request_id)
            encoded = _encode(result)
        except RpcError as exc:
            return None if request_id is _MISSING else _encode(_error(request_id, exc))
        except (TypeError, ValueError, RecursionError) as exc:
            self.log.error(
                "method %s returned a result that is not JSON: %s", request["method"], exc
            )
            if request_id is _MISSING:
                return None
            unusable = RpcError(HANDLER_ERROR, f"the result is not JSON: {exc}")
            return _encode(_error(request_id, unusable))
        if request_id is _MISSING:
            return None
        return b'{"jsonrpc":"2.0","id":' + _encode(request_id) + b',"result":' + encoded + b"}"

    def _dispatch(self, request: dict[str, Any], request_id: Any) -> Any:
        name = request["method"]
        params = request.get("params", {})
        if name == SET_LEVEL:
            _set_level(params)
            return None
        method = self._methods.get(name)
        if method is None:
            raise RpcError(METHOD_NOT_FOUND, f"Unknown method: {name}")
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: expected an object of named params")
        if method.nulls is not None:
            params = method.nulls.drop(params)
        if method.validator is not None:
            try:
                errors = sorted(method.validator.iter_errors(params), key=lambda e: list(e.path))
            except Exception as exc:  # the schema itself is broken (properties a list, ...)
                self.log.error("the inputSchema of %s cannot be evaluated: %r", name, exc)
                raise RpcError(
                    HANDLER_ERROR,
                    f"the inputSchema of {name} cannot be evaluated: {type(exc).__name__}",
                ) from None
            if errors:
                raise RpcError(
                    INVALID_PARAMS,
                    f"Invalid params: {errors[0].message}",
                    [
                        {"pointer": "".join(f"/{p}" for p in e.absolute_path), "message": e.message}
                        for e in errors
                    ],
                )
        context = Context(
            request_id,
            name,
            os.environ.get("FENGYU_PLUGIN_ID", ""),
            Path(os.environ.get("FENGYU_PLUGIN_ROOT", ".")),
            self.log,
        )
        try:
            return method.handler(params, context)
        except RpcError:
            raise
        except Exception as exc:
            self.log.exception("handler %s failed", name)
            raise RpcError(HANDLER_ERROR, f"{type(exc).__name__}: {exc}") from None


def _request_problem(request: dict[str, Any]) -> str | None:
    if request.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(request.get("method"), str):
        return "method must be a string"
    if "params" in request and not isinstance(request["params"], dict | list):
        return "params must be an object or an array"
    return None


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def _error(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


def _encode(value: Any) -> bytes:
    """Compact UTF-8 JSON; text that UTF-8 cannot carry (a lone surrogate) is \\u-escaped,
    and NaN or infinities (not JSON) raise ValueError."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")


def _write(stream: BinaryIO, frame: bytes) -> None:
    """One frame and its newline (two writes: a big frame is not copied to append it)."""
    stream.write(frame)
    stream.write(b"\n")
    stream.flush()


def _configure_logging(stream: TextIO) -> None:
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(LEVELS.get(os.environ.get("FENGYU_LOG_LEVEL", "INFO").upper(), 20))


def _set_level(params: Any) -> None:
    level = params.get("level") if isinstance(params, dict) else None
    if isinstance(level, str) and level.upper() in LEVELS:
        logging.getLogger().setLevel(LEVELS[level.upper()])
