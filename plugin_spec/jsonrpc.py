"""JSON-RPC 2.0 as a FengYu host and its worker speak it on stdin and stdout
(spec: fengyu-worker.md#errors-and-error-codes, fengyu-worker.md#request-ids-and-notifications):
the shapes of a request, a notification, a response and an error object, the error codes the
JSON-RPC specification reserves, and one builder for each message a host sends.

FengYu's additions live in fengyu_runtime: the frame-root `_fengyu` envelope, the control
methods and the `data.code` strings. fengyu_worker, the one file a plugin vendors, keeps its own
copy of the codes, since it may import nothing of this package.
"""

from __future__ import annotations

from enum import Enum
from typing import Final, Literal, NotRequired, TypedDict

from plugin_spec.json_types import JsonValue, ReadOnlyJson

VERSION: Final = "2.0"

# JSON-RPC 2.0 section 5.1.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# -32000 to -32099 are left to implementations; FengYu's SDKs answer a handler's exception and
# (Python) an unknown method with -32000 and a `data.code` saying which.
SERVER_ERROR: Final = -32000

RequestId = str | int


class ErrorObject(TypedDict):
    code: int
    message: str
    data: NotRequired[JsonValue]


class Request(TypedDict):
    jsonrpc: Literal["2.0"]
    id: RequestId
    method: str
    params: NotRequired[ReadOnlyJson]


class Notification(TypedDict):
    """A request without an id: it never gets an answer, not even an error."""

    jsonrpc: Literal["2.0"]
    method: str
    params: NotRequired[ReadOnlyJson]


class ResultResponse(TypedDict):
    jsonrpc: Literal["2.0"]
    id: RequestId
    result: JsonValue


class ErrorResponse(TypedDict):
    """An error answer; its id is null when the request's id could not be read."""

    jsonrpc: Literal["2.0"]
    id: RequestId | None
    error: ErrorObject


Response = ResultResponse | ErrorResponse


class _Omitted(Enum):
    """params left out of the message (JSON-RPC allows it; null would be a value)."""

    OMITTED = "omitted"


OMITTED: Final = _Omitted.OMITTED
Params = ReadOnlyJson | Literal[_Omitted.OMITTED]


def request(request_id: RequestId, method: str, params: Params) -> Request:
    message: Request = {"jsonrpc": VERSION, "id": request_id, "method": method}
    if params is not OMITTED:
        message["params"] = params
    return message


def notification(method: str, params: Params) -> Notification:
    message: Notification = {"jsonrpc": VERSION, "method": method}
    if params is not OMITTED:
        message["params"] = params
    return message


def result(request_id: RequestId, value: JsonValue) -> ResultResponse:
    return {"jsonrpc": VERSION, "id": request_id, "result": value}


def error(request_id: RequestId | None, code: int, message: str) -> ErrorResponse:
    return {"jsonrpc": VERSION, "id": request_id, "error": {"code": code, "message": message}}
