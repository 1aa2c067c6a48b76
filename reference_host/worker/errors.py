"""JSON-RPC 2.0 error codes and the exception handlers raise for a structured error, as
defined once in the vendorable SDK module (fengyu_worker)."""

from fengyu_worker import (
    HANDLER_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
)

__all__ = [
    "HANDLER_ERROR",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RpcError",
]
