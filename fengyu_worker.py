"""fengyu_worker: a FengYu plugin worker in Python, as a few decorated functions.

One file, standard library only (Python 3.11+), so a plugin copies it into `backend/` and runs
in FengYu (`python3 -u backend/worker.py`) with nothing else installed
(spec: fengyu-worker.md#the-python-worker-sdk).

    import sys
    from pathlib import Path

    sys.dont_write_bytecode = True  # FengYu checks the package digest at every start
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fengyu_worker import Context, Worker

    worker = Worker.from_manifest(__file__)

    @worker.method("render")
    def render(params, ctx):
        return {"success": True, "summary": "rendered", "html": to_html(params["markdown"])}

    if __name__ == "__main__":
        raise SystemExit(worker.run())

What it does for the plugin: answers the `$/fengyu/initialize` handshake (protocol 1 or 4,
echoing the one asked for), validates params against the method's inputSchema before the
handler runs (the manifest's schema subset, `nullable` included; a null standing for an
omitted optional property is dropped), runs handlers off the reading thread so
`$/cancelRequest` is answered at once, hands each handler its locale (`_fengyu.locale`), writes
logging records as `@fengyu-log:` lines on stderr, keeps stdout for protocol frames, never
answers a notification, and returns when stdin reaches its end. `Jobs` runs work that outlives
a call's timeout in the background.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import queue
import secrets
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

try:  # optional: a faster JSON codec, used only where it reads and writes as json does
    import orjson as _orjson
except ImportError:  # the standard library alone is the usual case
    _orjson = None  # type: ignore[assignment]

__version__ = "0.1.0"
__all__ = [
    "MAX_FRAME_BYTES",
    "PROTOCOL_VERSIONS",
    "Context",
    "Frame",
    "JobCancelled",
    "JobHandle",
    "Jobs",
    "RpcError",
    "Schema",
    "SchemaError",
    "Worker",
    "decode_json",
    "encode_json",
    "read_frames",
    "to_json_schema",
]

RUNTIME = "python"
PROTOCOL_VERSIONS = (1, 4)  # handshake 1 (FengYu 4.0) is wire-identical to 4
CAPABILITIES = ("cancellation", "locale", "structuredLogs")
DEFAULT_LOCALE = "en"
MAX_FRAME_BYTES = 16 * 1024 * 1024
EOF_GRACE_SECONDS = 3.0  # calls still running at EOF may finish and answer within this

INITIALIZE = "$/fengyu/initialize"
SET_LEVEL = "$/fengyu/logging/setLevel"
CANCEL = "$/cancelRequest"
LOG_PREFIX = "@fengyu-log:"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HANDLER_ERROR = -32000

LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "WARN": 30, "WARNING": 30, "ERROR": 40, "OFF": 100}
_MISSING: Any = object()
_INFINITY = float("inf")
_BIG = float(2**63)

Handler = Callable[[dict[str, Any], "Context"], Any]


# --- frames ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One line without its terminator; `oversize` frames were discarded unread."""

    data: bytes
    oversize: bool = False


def read_frames(stream: BinaryIO, limit: int = MAX_FRAME_BYTES) -> Iterator[Frame]:
    """Yield each line of stream until EOF; a trailing \\r is tolerated.

    A line longer than limit is not held in memory: it is skipped up to its newline and
    reported as an oversize frame, so one bad frame cannot take the process down.
    """
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(limit + 1)
            yield Frame(b"", oversize=True)
            continue
        yield Frame(line.rstrip(b"\n").removesuffix(b"\r"))


# --- errors ---------------------------------------------------------------------------------


class RpcError(Exception):
    """Raise from a handler to answer with this JSON-RPC error; the worker stays up.

    code is the JSON-RPC code, or a string such as "NOT_FOUND": FengYu's hosts map an
    error by its `data.code`, so a string code answers -32000 with that `data.code`.
    """

    def __init__(self, code: int | str, message: str, data: Any = None) -> None:
        super().__init__(message)
        if isinstance(code, str):
            extra = data if isinstance(data, dict) else {}
            code, data = HANDLER_ERROR, {**extra, "code": code}
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def _coded(code: int, data_code: str, message: str) -> RpcError:
    return RpcError(code, message, {"code": data_code})


def internal_error(message: str) -> RpcError:
    """The answer to a call the worker failed to serve (an uncaught exception): -32603 with
    `data.code` INTERNAL_ERROR, as FengYu's Python SDK answers, which hosts and the kit tell
    apart from a business error."""
    return _coded(INTERNAL_ERROR, "INTERNAL_ERROR", message)


def cancelled_error() -> RpcError:
    """The answer to a cancelled call, which FengYu's host maps to a cancellation."""
    return _coded(HANDLER_ERROR, "CANCELLED", "call cancelled")


# --- schemas --------------------------------------------------------------------------------


def to_json_schema(schema: Any) -> Any:
    """The manifest subset's schema as standard JSON Schema: `nullable: true` admits null.

    The one reading of `nullable` (spec: fengyu-manifest.md#method-schemas): the subset says
    it OpenAPI style, JSON Schema with a type list or a null enum value. Only the places the
    subset nests schemas are walked (properties, items), so enum values or property names
    that happen to be called "nullable" are left alone.
    """
    if not isinstance(schema, dict):
        return schema
    result = {key: value for key, value in schema.items() if key != "nullable"}
    if isinstance(schema.get("properties"), dict):
        result["properties"] = {
            name: to_json_schema(sub) for name, sub in schema["properties"].items()
        }
    if "items" in schema:
        result["items"] = to_json_schema(schema["items"])
    if schema.get("nullable") is True:
        if isinstance(result.get("type"), str):
            result["type"] = [result["type"], "null"]
        if isinstance(result.get("enum"), list) and None not in result["enum"]:
            result["enum"] = [*result["enum"], None]
    return result


class SchemaError(Exception):
    """The schema itself cannot be evaluated: a keyword holding the wrong kind of value, or
    one beyond the manifest subset."""


# What JSON Schema 2020-12 asserts beyond the manifest subset (FY-MAN-011 refuses all of it):
# a schema using one is refused rather than half checked, and its method's calls fail.
_BEYOND_SUBSET = frozenset(
    {"$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if", "then"}
    | {"else", "const", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength"}
    | {"maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "contains", "minContains"}
    | {"maxContains", "prefixItems", "minProperties", "maxProperties", "propertyNames"}
    | {"patternProperties", "dependentRequired", "dependentSchemas", "dependencies"}
    | {"unevaluatedProperties", "unevaluatedItems"}
)
_TYPES: dict[str, Callable[[Any], bool]] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
}


@dataclass(frozen=True)
class Invalid:
    """One way an instance fails its schema: where (JSON pointer parts) and why."""

    path: tuple[str | int, ...]
    message: str

    @property
    def pointer(self) -> str:
        return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in self.path)


class Schema:
    """A validator of the manifest subset as standard JSON Schema (run to_json_schema first):
    type (a list too: nullable becomes one), enum, properties, required, items, minimum,
    maximum and a boolean additionalProperties; annotations such as description, default,
    format and the x-fengyu- hints are not assertions and pass. That is all a manifest may
    say, so it is all the worker checks. Messages read like python-jsonschema's."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def errors(self, instance: Any, schema: Any = _MISSING) -> list[Invalid]:
        """Every failure, in document order; raises SchemaError if it cannot tell."""
        found: list[Invalid] = []
        try:
            self._walk(self.root if schema is _MISSING else schema, instance, (), found)
        except RecursionError:
            raise SchemaError("the schema nests too deeply to evaluate") from None
        return found

    def is_valid(self, instance: Any, schema: Any = _MISSING) -> bool:
        return not self.errors(instance, schema)

    def _walk(
        self, schema: Any, value: Any, path: tuple[str | int, ...], out: list[Invalid]
    ) -> None:
        if schema is True:
            return
        if schema is False:
            out.append(Invalid(path, f"False schema does not allow {value!r}"))
            return
        if not isinstance(schema, dict):
            raise SchemaError(f"a schema must be an object or a boolean, not {schema!r:.60}")
        beyond = _BEYOND_SUBSET.intersection(schema)
        if beyond:
            raise SchemaError(f"{sorted(beyond)[0]} is beyond the manifest subset")
        for keyword, rule in _RULES.items():
            if keyword in schema:
                rule(self, schema, schema[keyword], value, path, out)


Rule = Callable[[Schema, dict[str, Any], Any, Any, tuple[str | int, ...], list[Invalid]], None]


def _need(ok: bool, keyword: str, given: Any) -> None:
    if not ok:
        raise SchemaError(f"{keyword} cannot be {given!r:.60}")


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0, objects and arrays compare by content."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if _number(a) and _number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _type(s: Schema, schema: dict[str, Any], given: Any, value: Any, path: Any, out: Any) -> None:
    names = [given] if isinstance(given, str) else given
    _need(
        isinstance(names, list) and all(isinstance(n, str) and n in _TYPES for n in names),
        "type",
        given,
    )
    if not any(_TYPES[n](value) for n in names):
        out.append(Invalid(path, f"{value!r} is not of type {', '.join(map(repr, names))}"))


def _enum(s: Schema, schema: dict[str, Any], given: Any, value: Any, path: Any, out: Any) -> None:
    _need(isinstance(given, list), "enum", given)
    if not any(_same(value, choice) for choice in given):
        out.append(Invalid(path, f"{value!r} is not one of {given!r}"))


def _properties(
    s: Schema, schema: dict[str, Any], given: Any, value: Any, path: Any, out: Any
) -> None:
    _need(isinstance(given, dict), "properties", given)
    if isinstance(value, dict):
        for name, sub in given.items():
            if name in value:
                s._walk(sub, value[name], (*path, name), out)


def _required(
    s: Schema, schema: dict[str, Any], given: Any, value: Any, path: Any, out: Any
) -> None:
    _need(isinstance(given, list) and all(isinstance(n, str) for n in given), "required", given)
    if isinstance(value, dict):
        out.extend(Invalid(path, f"{n!r} is a required property") for n in given if n not in value)


def _additional(
    s: Schema, schema: dict[str, Any], given: Any, value: Any, path: Any, out: Any
) -> None:
    if isinstance(given, dict):
        raise SchemaError("additionalProperties as a schema is beyond the manifest subset")
    _need(isinstance(given, bool), "additionalProperties", given)
    declared = schema.get("properties", {})
    _need(isinstance(declared, dict), "properties", declared)
    extras = [n for n in value if n not in declared] if isinstance(value, dict) else []
    if given is False and extras:
        verb = "was" if len(extras) == 1 else "were"
        listed = ", ".join(map(repr, sorted(extras)))
        out.append(
            Invalid(path, f"Additional properties are not allowed ({listed} {verb} unexpected)")
        )


def _items(s: Schema, schema: dict[str, Any], given: Any, value: Any, path: Any, out: Any) -> None:
    _need(isinstance(given, dict | bool), "items", given)
    if isinstance(value, list):
        for index, item in enumerate(value):
            s._walk(given, item, (*path, index), out)


def _minimum(
    s: Schema, schema: dict[str, Any], given: Any, value: Any, path: Any, out: Any
) -> None:
    _need(_number(given), "minimum", given)
    if _number(value) and value < given:
        out.append(Invalid(path, f"{value!r} is less than the minimum of {given!r}"))


def _maximum(
    s: Schema, schema: dict[str, Any], given: Any, value: Any, path: Any, out: Any
) -> None:
    _need(_number(given), "maximum", given)
    if _number(value) and value > given:
        out.append(Invalid(path, f"{value!r} is greater than the maximum of {given!r}"))


_RULES: dict[str, Rule] = {
    "type": _type,
    "enum": _enum,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "items": _items,
    "minimum": _minimum,
    "maximum": _maximum,
}


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
    def of(cls, schema: Any, validator: Schema) -> Nulls | None:
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


def _admits_null(validator: Schema, schema: Any) -> bool:
    """Whether null is valid against one subschema ($refs resolve against the whole schema);
    a subschema that cannot be evaluated keeps its nulls, to be judged when a call comes."""
    try:
        return validator.is_valid(None, schema)
    except SchemaError:
        return True


# --- the handler's view ---------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What a handler may want besides its params: who called, in which language, and
    whether the host has cancelled the call (a long handler checks between steps)."""

    request_id: Any
    method: str
    plugin_id: str
    plugin_root: Path
    log: logging.Logger
    locale: str = DEFAULT_LOCALE
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    @property
    def call_id(self) -> Any:
        """The JSON-RPC id, which FengYu keeps stable across a flow step's retries."""
        return self.request_id

    @property
    def cancelled(self) -> bool:
        """True once the host cancelled the call; its answer has then already been sent."""
        return self._cancel.is_set()

    def check_cancelled(self) -> None:
        """Raise the cancellation error if the host cancelled the call."""
        if self._cancel.is_set():
            raise cancelled_error()


@dataclass(frozen=True)
class Method:
    """A registered handler with what is checked before it runs."""

    handler: Handler
    schema: Schema | None
    nulls: Nulls | None = None


@dataclass
class _Call:
    """One admitted request on its way to its handler."""

    request_id: Any  # _MISSING for a notification
    name: str
    method: Method
    params: dict[str, Any]
    context: Context
    answered: bool = False


# --- the worker -----------------------------------------------------------------------------


class Worker:
    """A registry of methods and the loop that serves them over stdio."""

    def __init__(self, schemas: dict[str, Any] | None = None) -> None:
        self._schemas = schemas or {}
        self._methods: dict[str, Method] = {}
        self.log = logging.getLogger("worker")
        self._out: BinaryIO | None = None
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # notified as calls are answered
        self._pending: dict[bytes, _Call] = {}  # requests by encoded id, until answered
        self._owed = 0  # calls admitted and neither answered nor cancelled
        self._idle = 0  # pool threads waiting for a call
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()

    @classmethod
    def from_manifest(cls, anchor: str | Path) -> Worker:
        """A worker whose methods validate params against the manifest's rpc.methods schemas.

        anchor is any path inside the plugin (usually __file__); the nearest manifest.json
        above it is used, so schemas are declared once, in the manifest.
        """
        for folder in Path(anchor).resolve().parents:
            manifest = folder / "manifest.json"
            if manifest.is_file():
                # FengYu, the kit and the host accept a leading byte order mark: so does this.
                data = json.loads(manifest.read_text(encoding="utf-8-sig"))
                rpc = data.get("rpc") if isinstance(data, dict) else None
                # A version 1 manifest has no rpc.methods: its methods go unchecked.
                methods = (rpc.get("methods") if isinstance(rpc, dict) else None) or {}
                if not isinstance(methods, dict):
                    raise ValueError(f"{manifest}: /rpc/methods is not an object of methods")
                return cls(
                    {n: m.get("inputSchema") for n, m in methods.items() if isinstance(m, dict)}
                )
        raise FileNotFoundError(f"no manifest.json above {anchor}")

    def method(self, name: str, input_schema: Any = None) -> Callable[[Handler], Handler]:
        """Register a handler; params are validated against input_schema (or the manifest's)."""
        if not name or name.startswith(("$/", "rpc.")):
            raise ValueError(f"{name!r} is reserved for the protocol")
        if name in self._methods:
            raise ValueError(f"{name!r} already has a handler")
        schema = to_json_schema(
            input_schema if input_schema is not None else self._schemas.get(name)
        )
        validator = Schema(schema) if schema else None
        nulls = Nulls.of(schema, validator) if validator is not None else None

        def register(handler: Handler) -> Handler:
            if inspect.isgeneratorfunction(handler) or inspect.isasyncgenfunction(handler):
                raise TypeError(
                    f"the handler of {name!r} is a generator: a call is answered once, so "
                    "return the whole result (an async def handler is fine)"
                )
            self._methods[name] = Method(handler, validator, nulls)
            return handler

        return register

    # -- the loop --

    def run(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
        """Serve until stdin reaches EOF; returns the process exit code (0).

        Calls run on pool threads, so the loop keeps reading: a cancellation or a second
        call is seen while a handler works. At EOF, calls still running get
        EOF_GRACE_SECONDS to answer; then the loop returns (their threads are daemons).
        """
        stdin = stdin or sys.stdin.buffer
        self._out = stdout or sys.stdout.buffer
        install_logging(sys.stderr)
        saved, sys.stdout = sys.stdout, sys.stderr
        try:
            for frame in read_frames(stdin):
                if frame.oversize:
                    too_big = _coded(INVALID_REQUEST, "INVALID_REQUEST", "frame exceeds 16 MiB")
                    self._send(_error_frame(None, too_big))
                elif frame.data and not frame.data.isspace():
                    outcome = self._admit(frame.data)
                    if isinstance(outcome, _Call):
                        self._start(outcome)
                    elif outcome is not None:
                        self._send(outcome)
            self._drain(EOF_GRACE_SECONDS)
        finally:
            sys.stdout = saved
        return 0

    def handle(self, frame: bytes) -> dict[str, Any] | None:
        """The response to one frame as an object, or None for a notification."""
        reply = self.respond(frame)
        return None if reply is None else json.loads(reply)

    def respond(self, frame: bytes) -> bytes | None:
        """The response to one frame as the bytes to send, or None for a notification; the
        handler runs on the calling thread."""
        outcome = self._admit(frame)
        return self._complete(outcome) if isinstance(outcome, _Call) else outcome

    def _send(self, frame: bytes) -> None:
        """One frame and its newline (two writes: a big frame is not copied to append it)."""
        out = self._out
        if out is None:
            return
        with self._write_lock:
            out.write(frame)
            out.write(b"\n")
            out.flush()

    def _start(self, call: _Call) -> None:
        """Queue the call for a pool thread, starting a new one when none is idle: threads
        are reused, yet a handler that never returns holds up no other call."""
        with self._lock:
            if call.request_id is not _MISSING:
                key = encode_json(call.request_id)
                older = self._pending.get(key)
                if older is not None and not older.answered:
                    # The same id again: the newer call replaces the older, which owes nothing.
                    older.answered = True
                    older.context._cancel.set()
                    self._owed -= 1
                self._pending[key] = call
            self._owed += 1
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1
        self._calls.put(call)
        if spawn:
            threading.Thread(target=self._work, name="call", daemon=True).start()
        time.sleep(0)  # yield the GIL: the call starts now, not after the next switch interval

    def _work(self) -> None:
        while True:
            call = self._calls.get()
            threading.current_thread().name = f"call-{call.name}"
            self._serve(call)
            with self._lock:
                self._idle += 1

    def _serve(self, call: _Call) -> None:
        reply = self._complete(call)
        with self._lock:
            if call.answered:  # cancelled or replaced: answered and settled already
                return
            call.answered = True
            key = encode_json(call.request_id) if call.request_id is not _MISSING else None
            if key is not None and self._pending.get(key) is call:
                del self._pending[key]
        if reply is not None:
            self._send(reply)
        with self._settled:
            self._owed -= 1
            self._settled.notify_all()

    def _cancel(self, params: Any) -> None:
        """$/cancelRequest: answer the pending call with CANCELLED now, and tell its handler."""
        if not isinstance(params, dict) or not _valid_id(params.get("id", _MISSING)):
            return
        key = encode_json(params["id"])
        with self._lock:
            call = self._pending.pop(key, None)
            if call is None or call.answered:
                return
            call.answered = True
            call.context._cancel.set()
            self._owed -= 1
        self._send(_error_frame(call.request_id, cancelled_error()))

    def _drain(self, seconds: float) -> None:
        """Wait for the calls still owing an answer (a cancelled one owes none)."""
        deadline = time.monotonic() + seconds
        with self._settled:
            while self._owed > 0 and (left := deadline - time.monotonic()) > 0:
                self._settled.wait(left)

    # -- one frame --

    def _admit(self, frame: bytes) -> bytes | _Call | None:
        """A frame's answer when no handler is needed (errors, protocol methods), else the
        call to run: params checked, nulls dropped, context built."""
        try:
            request = decode_json(frame)
        except (ValueError, UnicodeDecodeError) as exc:
            # ValueError: also a number past Python's digit limit, which is valid JSON
            return _error_frame(None, _coded(PARSE_ERROR, "PARSE_ERROR", f"Parse error: {exc}"))
        except RecursionError:
            nested = _coded(PARSE_ERROR, "PARSE_ERROR", "Parse error: nested too deeply")
            return _error_frame(None, nested)
        if not isinstance(request, dict):
            invalid = _coded(INVALID_REQUEST, "INVALID_REQUEST", "Invalid Request: not an object")
            return _error_frame(None, invalid)
        request_id = request.get("id", _MISSING)
        id_ok = request_id is _MISSING or _valid_id(request_id)
        problem = _request_problem(request) if id_ok else "id must be a string, number or null"
        if problem:
            reply_id = request_id if id_ok and request_id is not _MISSING else None
            invalid = _coded(INVALID_REQUEST, "INVALID_REQUEST", f"Invalid Request: {problem}")
            return _error_frame(reply_id, invalid)
        try:
            return self._prepare(request, request_id)
        except RpcError as exc:
            return None if request_id is _MISSING else _error_frame(request_id, exc)
        except Exception as exc:
            self.log.exception("the params of %s could not be prepared", request.get("method"))
            failed = internal_error(f"params not prepared: {type(exc).__name__}")
            return None if request_id is _MISSING else _error_frame(request_id, failed)

    def _prepare(self, request: dict[str, Any], request_id: Any) -> bytes | _Call | None:
        name = request["method"]
        params = request.get("params", {})
        if name == INITIALIZE:
            return _result_frame(request_id, _initialize(params))
        if name == SET_LEVEL:
            return _result_frame(request_id, _set_level(params))
        if name == CANCEL:
            self._cancel(params)
            return _result_frame(request_id, None)
        method = self._methods.get(name)
        if method is None:
            raise _coded(METHOD_NOT_FOUND, "METHOD_NOT_FOUND", f"Method not found: {name}")
        if not isinstance(params, dict):
            raise _coded(
                INVALID_PARAMS,
                "INVALID_PARAMS",
                "Invalid params: expected an object of named params",
            )
        if method.nulls is not None:
            params = method.nulls.drop(params)
        if method.schema is not None:
            _validate(name, method.schema, params, self.log)
        context = Context(
            None if request_id is _MISSING else request_id,
            name,
            os.environ.get("FENGYU_PLUGIN_ID", ""),
            Path(os.environ.get("FENGYU_PLUGIN_ROOT", ".")),
            self.log,
            _locale(request, params),
        )
        return _Call(request_id, name, method, params, context)

    def _complete(self, call: _Call) -> bytes | None:
        """Run the handler and encode its answer (None for a notification). A cancelled
        call always fails, whatever its handler returned."""
        try:
            result = _awaited(call.method.handler(call.params, call.context))
            call.context.check_cancelled()
        except RpcError as exc:
            error = exc
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: a pool thread would die unanswered
            self.log.error("handler %s failed", call.name, exc_info=exc)
            error = internal_error(f"handler failed: {type(exc).__name__}")
        else:
            if call.request_id is _MISSING:
                return None
            try:
                return _result_frame(call.request_id, result)
            except Exception as exc:
                self.log.error("method %s returned a result that is not JSON: %s", call.name, exc)
                error = internal_error(f"the result is not JSON: {type(exc).__name__}")
        return None if call.request_id is _MISSING else _error_frame(call.request_id, error)


def _awaited(result: Any) -> Any:
    """An async handler's result, run to its end on this call's thread; a generator is no
    answer (a call is answered once), so it fails the call as an internal error."""
    if inspect.isawaitable(result):
        import asyncio  # here: most workers have no async handler, and it costs a start 50 ms

        return asyncio.run(_await(result))
    if inspect.isgenerator(result) or inspect.isasyncgen(result):
        raise TypeError("the handler returned a generator, not a JSON value")
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _validate(name: str, schema: Schema, params: dict[str, Any], log: logging.Logger) -> None:
    try:
        errors = schema.errors(params)
    except SchemaError as exc:
        log.error("the inputSchema of %s cannot be evaluated: %s", name, exc)
        raise internal_error(f"the inputSchema of {name} cannot be evaluated: {exc}") from None
    if errors:
        errors.sort(key=lambda e: e.pointer)
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: {errors[0].message}",
            [{"pointer": e.pointer, "message": e.message} for e in errors],
        )


def _initialize(params: Any) -> dict[str, Any]:
    """The handshake: echo the protocol version asked for, if this SDK speaks it."""
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    if type(asked) is not int or asked not in PROTOCOL_VERSIONS:
        raise _coded(
            INVALID_PARAMS, "PROTOCOL_MISMATCH", f"Unsupported FengYu worker protocol: {asked!r}"
        )
    return {
        "protocolVersion": asked,
        "runtime": RUNTIME,
        "sdkVersion": __version__,
        "capabilities": list(CAPABILITIES),
    }


def _locale(request: dict[str, Any], params: dict[str, Any]) -> str:
    """The host's `_fengyu.locale`; a legacy host's `params.locale`; else English."""
    envelope = request.get("_fengyu")
    for value in (
        envelope.get("locale") if isinstance(envelope, dict) else None,
        params.get("locale"),
    ):
        if isinstance(value, str) and value:
            return value
    return DEFAULT_LOCALE


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


def _error_frame(request_id: Any, error: RpcError) -> bytes:
    """The error's frame; an error whose data is not JSON becomes an internal error, since
    a frame that cannot be written would leave the call unanswered."""
    try:
        return encode_json({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})
    except Exception as exc:
        logging.getLogger("worker").error("an error to send is not JSON: %s", exc)
        failed = internal_error(f"the error is not JSON: {type(exc).__name__}")
        return encode_json({"jsonrpc": "2.0", "id": request_id, "error": failed.to_json()})


def _result_frame(request_id: Any, result: Any) -> bytes | None:
    """The result serialised once, straight into the frame (a big result is neither encoded
    twice nor copied into a reply object first); None for a notification."""
    if request_id is _MISSING:
        return None
    encoded = encode_json(result)
    return b'{"jsonrpc":"2.0","id":' + encode_json(request_id) + b',"result":' + encoded + b"}"


def encode_json(value: Any, allow_nan: bool = False) -> bytes:
    """Compact UTF-8 JSON; text that UTF-8 cannot carry (a lone surrogate) is \\u-escaped,
    and NaN or infinities (not JSON) raise ValueError unless allow_nan.

    Where orjson is installed, a value of plain JSON types only (_plain) is written by it,
    some 100x faster for big text: those it writes as json does, but for how a float is
    spelt. Anything else (NaN, a tuple, a subclass, a UUID orjson would take and json
    refuses...) goes to json, so what is written or refused does not depend on the machine.
    """
    if _orjson is not None:
        try:
            if _plain(value):
                return _orjson.dumps(value)
        except (_orjson.JSONEncodeError, RecursionError):
            pass  # integers past 64 bits, lone surrogates, deep nesting: json decides
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan)
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), allow_nan=allow_nan).encode("ascii")


def decode_json(data: bytes | str) -> Any:
    """json.loads, by orjson first where it is installed: what orjson refuses (NaN, UTF-16,
    invalid UTF-8) json reads or refuses as it always did, and so it reads again what orjson
    may have read as a float where json reads an integer (one past 64 bits)."""
    if _orjson is not None:
        try:
            value = _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
        else:
            try:
                if not _big_float_in(value):
                    return value
            except RecursionError:
                pass
    return json.loads(data)


def _big_float_in(value: Any) -> bool:
    """Whether value holds a whole float past 64-bit integers (orjson's reading of such an
    integer; json keeps it an int)."""
    kind = type(value)
    if kind is dict:
        value = value.values()
    elif kind is not list:
        return kind is float and abs(value) >= _BIG and value.is_integer()
    for member in value:
        kind = type(member)  # leaves are looked at here: a call per member costs more
        if kind is str or kind is int or kind is bool or member is None:
            continue
        if _big_float_in(member):
            return True
    return False


def _plain(value: Any) -> bool:
    """Whether value is made of dicts with str keys, lists, str, int, bool, None and finite
    floats only, each of exactly that type (recursive: nesting orjson refuses anyway)."""
    kind = type(value)
    if kind is dict:
        for key, member in value.items():
            if type(key) is not str:
                return False
            kind = type(member)  # leaves are looked at here: a call per member costs more
            if kind is str or kind is int or kind is bool or member is None:
                continue
            if not _plain(member):
                return False
        return True
    if kind is list:
        for member in value:
            kind = type(member)
            if kind is str or kind is int or kind is bool or member is None:
                continue
            if not _plain(member):
                return False
        return True
    if kind is str or kind is int or kind is bool or value is None:
        return True
    return kind is float and value == value and value != _INFINITY and value != -_INFINITY


# --- logs -----------------------------------------------------------------------------------


class StructuredLogs(logging.Handler):
    """Each record as one `@fengyu-log:{json}` stderr line, which FengYu's host files under
    the record's level, logger and thread (a traceback goes in `throwable`)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event = {
                "level": host_level(record.levelno),
                "logger": record.name,
                "thread": record.threadName,
                "message": record.getMessage(),
            }
            if record.exc_info:
                event["throwable"] = "".join(traceback.format_exception(*record.exc_info))
            # Handler.handle holds the handler's lock around emit: lines never interleave.
            self.stream.write(LOG_PREFIX + json.dumps(event, ensure_ascii=False) + "\n")
            self.stream.flush()
        except Exception:
            self.handleError(record)


def host_level(levelno: int) -> str:
    """A Python logging level as one of the host's five names."""
    for name, bound in (("TRACE", 5), ("DEBUG", 10), ("INFO", 20), ("WARN", 30)):
        if levelno <= bound:
            return name
    return "ERROR"


def install_logging(stream: TextIO) -> None:
    """Route every logging record to stream as structured lines, at FENGYU_LOG_LEVEL."""
    logging.addLevelName(LEVELS["TRACE"], "TRACE")
    root = logging.getLogger()
    root.handlers[:] = [StructuredLogs(stream)]
    root.setLevel(LEVELS.get(os.environ.get("FENGYU_LOG_LEVEL", "INFO").upper(), 20))


def _set_level(params: Any) -> dict[str, Any]:
    """$/fengyu/logging/setLevel: the new threshold for every logger of the worker."""
    level = params.get("level") if isinstance(params, dict) else None
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise _coded(INVALID_PARAMS, "INVALID_PARAMS", f"unknown log level {level!r}")
    logging.getLogger().setLevel(LEVELS[level.upper()])
    return {"level": level.upper()}


# --- background jobs ------------------------------------------------------------------------
# Long worker calls as *_start / *_status / *_cancel methods (spec: fengyu-manifest.md#timeouts).
# A call that may outlive its timeout starts a job and answers with its id at once; later calls
# poll the job's log and result, or ask it to stop. Cancellation is cooperative: the job's
# function checks `handle.cancelled` (or calls `handle.raise_if_cancelled()`) between steps.
# Finished jobs are kept for the last `keep_finished` runs and each job keeps its last
# `max_log_lines` lines, so a long-lived worker does not grow without bound.

JOB_RUNNING = "running"
JOB_SUCCEEDED = "succeeded"
JOB_FAILED = "failed"
JOB_CANCELLED = "cancelled"
JOB_STATUSES = (JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED, JOB_CANCELLED)


class JobCancelled(Exception):
    """Raised by JobHandle.raise_if_cancelled once cancellation was requested."""


class JobHandle:
    """What a job's function gets: a log to append to and the cancellation flag."""

    def __init__(self, job_id: str, max_log_lines: int) -> None:
        self.id = job_id
        self._max_log_lines = max(1, max_log_lines)
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._lines: list[str] = []
        self._dropped = 0
        self.status = JOB_RUNNING
        self.result: Any = None
        self.error: str | None = None

    @property
    def cancelled(self) -> bool:
        """True once cancellation was requested; the function should stop soon after."""
        return self._cancel.is_set()

    def raise_if_cancelled(self) -> None:
        if self._cancel.is_set():
            raise JobCancelled(f"job {self.id} was cancelled")

    def log(self, message: str) -> None:
        """Append one line to the job's log (older lines are dropped past the bound)."""
        with self._lock:
            self._lines.append(str(message))
            overflow = len(self._lines) - self._max_log_lines
            if overflow > 0:
                del self._lines[:overflow]
                self._dropped += overflow

    def _snapshot(self, cursor: int, limit: int | None) -> dict[str, Any]:
        with self._lock:
            total = self._dropped + len(self._lines)
            start = min(max(cursor, self._dropped), total)
            lines = self._lines[start - self._dropped :]
            if limit is not None:
                lines = lines[: max(0, limit)]
            snapshot: dict[str, Any] = {
                "jobId": self.id,
                "status": self.status,
                "logs": list(lines),
                "cursor": start + len(lines),
                "done": self.status != JOB_RUNNING,
            }
            if self.result is not None:
                snapshot["result"] = self.result
            if self.error is not None:
                snapshot["error"] = self.error
            return snapshot


class Jobs:
    """A registry of background jobs, each run on its own daemon thread."""

    def __init__(self, keep_finished: int = 16, max_log_lines: int = 1000) -> None:
        self._keep_finished = max(0, keep_finished)
        self._max_log_lines = max_log_lines
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, JobHandle] = OrderedDict()

    def start(self, fn: Callable[[JobHandle], Any], name: str = "job") -> str:
        """Run fn(handle) in the background and return the new job's id.

        fn's return value becomes the job's result. An exception fails the job, unless
        cancellation was requested, in which case the job ends cancelled.
        """
        job_id = f"job_{secrets.token_hex(8)}"
        handle = JobHandle(job_id, self._max_log_lines)
        with self._lock:
            self._jobs[job_id] = handle
        thread = threading.Thread(
            target=self._run, args=(handle, fn), name=f"{name}-{job_id}", daemon=True
        )
        thread.start()
        return job_id

    def _run(self, handle: JobHandle, fn: Callable[[JobHandle], Any]) -> None:
        try:
            result = fn(handle)
        except BaseException as exc:
            status, result = (JOB_CANCELLED if handle.cancelled else JOB_FAILED), None
            error = None if handle.cancelled else (str(exc) or type(exc).__name__)
            if handle.cancelled:
                handle.log("cancelled")
        else:
            status, error = JOB_SUCCEEDED, None
        with handle._lock:
            handle.status, handle.result, handle.error = status, result, error
        handle._finished.set()
        self._evict()

    def _evict(self) -> None:
        with self._lock:
            finished = [jid for jid, h in self._jobs.items() if h.status != JOB_RUNNING]
            for job_id in finished[: max(0, len(finished) - self._keep_finished)]:
                del self._jobs[job_id]

    def snapshot(
        self, job_id: str, cursor: int = 0, limit: int | None = None
    ) -> dict[str, Any] | None:
        """The job's state and its log lines from cursor on (at most limit), or None if unknown.

        cursor counts lines since the job started; the answer's cursor is where the next
        poll continues. Lines dropped by the log bound are skipped over.
        """
        handle = self._get(job_id)
        return None if handle is None else handle._snapshot(int(cursor), limit)

    def cancel(self, job_id: str) -> bool:
        """Ask a running job to stop; False if it is unknown or already finished."""
        handle = self._get(job_id)
        if handle is None or handle.status != JOB_RUNNING:
            return False
        handle._cancel.set()
        return True

    def wait(self, job_id: str, timeout: float | None = None) -> bool:
        """Block until the job finished (True) or timeout passed (False); unknown -> True."""
        handle = self._get(job_id)
        return True if handle is None else handle._finished.wait(timeout)

    def running(self) -> list[str]:
        with self._lock:
            return [jid for jid, h in self._jobs.items() if h.status == JOB_RUNNING]

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel every running job and give them up to timeout seconds in all to stop."""
        running = self.running()
        for job_id in running:
            self.cancel(job_id)
        deadline = time.monotonic() + timeout
        for job_id in running:
            self.wait(job_id, max(0.0, deadline - time.monotonic()))

    def _get(self, job_id: Any) -> JobHandle | None:
        if not isinstance(job_id, str):
            return None
        with self._lock:
            return self._jobs.get(job_id)
