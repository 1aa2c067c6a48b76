"""The base of every request body: unknown fields are refused, and a field may be sent by its
camelCase alias or its own name."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

PATH_LIMIT = 4096  # PATH_MAX on Linux: no longer path names a file


class StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
