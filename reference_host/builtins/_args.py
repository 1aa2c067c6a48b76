"""Argument readers shared by the built-in tools: each raises ValueError with a reason."""

from __future__ import annotations

from collections.abc import Mapping


def required_string(arguments: Mapping[str, object], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"'{name}' is required and must be a non-empty string")
    return value.strip()


def optional_integer(
    arguments: Mapping[str, object], name: str, *, default: int, minimum: int, maximum: int
) -> int:
    """An optional integer: below minimum is an error, above maximum is clamped to it."""
    value = arguments.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"'{name}' must be an integer")
    if value < minimum:
        raise ValueError(f"'{name}' must be at least {minimum}")
    return min(value, maximum)
