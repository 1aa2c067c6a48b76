"""A method schema of the manifest subset read as standard JSON Schema
(spec: fengyu-manifest.md#method-schemas).

The subset admits null with `nullable: true` (OpenAPI style); JSON Schema says the same with a
type list or a null enum value. The reading lives in the vendorable worker SDK (fengyu_worker),
which a plugin copies without this project, so the kit's strategies and checks and the SDK's
params validation read `nullable` from one place.
"""

from __future__ import annotations

from fengyu_worker import to_json_schema

__all__ = ["to_json_schema"]
