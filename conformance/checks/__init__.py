"""The kit's checks; importing this package registers every one of them."""

from conformance.checks import (
    fengyu_files,
    fengyu_host,
    fengyu_legacy,
    fengyu_manifest,
    fengyu_tools,
    fengyu_worker,
)

__all__ = [
    "fengyu_files",
    "fengyu_host",
    "fengyu_legacy",
    "fengyu_manifest",
    "fengyu_tools",
    "fengyu_worker",
]
