"""One way to put a value a client or a plugin sent into an error message or a log line.

Why: an error that repeats its input hands an attacker an amplifier (a 50 MB install path
came back as a 52 MB answer and 100 MB of log per request). Every value the host echoes goes
through `quoted` (or, for text that is already a message, `shortened`), which keeps the start
of it, enough to recognise, and says how much was cut.
"""

from __future__ import annotations

DEFAULT_LIMIT = 200


def shortened(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """text itself, or its first `limit` characters and the count of the rest."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def quoted(value: object, limit: int = DEFAULT_LIMIT) -> str:
    """repr() of value's text, cut to its first `limit` characters with the count of the rest."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text) - limit} more characters)"
