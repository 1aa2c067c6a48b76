"""Reading a JSON object from a file with an error that names the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class JsonFileError(Exception):
    pass


def read_json_object(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise JsonFileError(f"{path}: {exc}") from None
    if not isinstance(value, dict):
        raise JsonFileError(f"{path}: expected a JSON object")
    return value
