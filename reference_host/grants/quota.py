"""The host's bound on read copies of grants (spec: host.md#fileref-grants): how many copies
there are and how many bytes they hold, over every conversation and plugin.

Why: each grant handed to a worker for reading is copied, and a copy lives as long as its
grant; without a bound, 60 conversations granting a 20 MB file made 1.2 GB of copies in 5 s.
A grant reserves its slot (and a file its size) when it is attached, so an attach over the
limit is refused at once; a copy then draws its bytes here as it writes them, so a refusal
comes before the disk fills, and a refused copy gives back what it drew.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from plugin_spec.filerefs import FileRefError

GIB = 1024**3
MIB = 1024**2
KIB = 1024
DEFAULT_COPIES = 200
DEFAULT_TOTAL_BYTES = 2 * GIB


@dataclass(frozen=True)
class CopyLimits:
    """What a host's read copies may take (HostConfig and the CLI set them)."""

    copies: int = DEFAULT_COPIES  # read copies held at once, over every conversation
    total_bytes: int = DEFAULT_TOTAL_BYTES  # bytes those copies hold together
    # one copy, or one commit of a writable folder; None: copies.MAX_BYTES (1 GiB)
    copy_bytes: int | None = None


class QuotaError(FileRefError):
    """Attaching or copying a grant would pass the host's limit on read copies: a refusal
    the client can act on (revoke a grant), not a bad request (HTTP 409)."""


class CopyQuota:
    """Slots and bytes of the host's read copies, by ref id.

    A held ref has a slot; its bytes are what its copy holds, or before its first copy the
    size it reserved when attached. The lock is held for bookkeeping only, never over I/O.
    """

    def __init__(self, limits: CopyLimits) -> None:
        self.limits = limits
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def usage(self) -> tuple[int, int]:
        """(copies, bytes) held now."""
        with self._lock:
            return len(self._held), sum(self._held.values())

    def reserve(self, ref_id: str, size: int, what: str) -> None:
        """A slot and size bytes for a grant about to be attached, or QuotaError."""
        with self._lock:
            self._check_slot(ref_id, what)
            self._check_bytes(size, what)
            self._held[ref_id] = size

    def release(self, ref_id: str) -> None:
        """The grant is gone (revoked, forgotten, the host closed): its slot and bytes return."""
        with self._lock:
            self._held.pop(ref_id, None)

    @contextlib.contextmanager
    def refresh(self, ref_id: str, what: str) -> Iterator[Draw]:
        """Account for a new copy of ref_id while it is made: the old copy's bytes are set
        aside (the new one replaces it), what the new one writes is drawn; if making it
        fails, the ref holds what it held before (the old copy is still in place)."""
        with self._lock:
            prior = self._held.get(ref_id)
            if prior is None:
                self._check_slot(ref_id, what)
            self._held[ref_id] = 0
        try:
            yield Draw(self, ref_id, what)
        except BaseException:
            with self._lock:
                if ref_id in self._held:  # not released meanwhile
                    if prior is None:
                        del self._held[ref_id]
                    else:
                        self._held[ref_id] = prior
            raise

    def draw(self, ref_id: str, size: int, what: str) -> None:
        with self._lock:
            if ref_id not in self._held:
                raise FileRefError(f"{what}: its grant was revoked while it was copied")
            if size > 0:
                self._check_bytes(size, what)
            self._held[ref_id] += size

    def room(self) -> int:
        with self._lock:
            return max(0, self.limits.total_bytes - sum(self._held.values()))

    def refusal(self, what: str, needed: int) -> QuotaError:
        with self._lock:
            return self._refusal(what, needed)

    def _check_slot(self, ref_id: str, what: str) -> None:
        if ref_id not in self._held and len(self._held) >= self.limits.copies:
            raise self._refusal(what, 0)

    def _check_bytes(self, size: int, what: str) -> None:
        if sum(self._held.values()) + size > self.limits.total_bytes:
            raise self._refusal(what, size)

    def _refusal(self, what: str, needed: int) -> QuotaError:
        used = sum(self._held.values())
        why = (
            f" needs {size_text(needed)}, more than the host's read copies have room for"
            if needed
            else ": the host's read copies are at their limit"
        )
        return QuotaError(
            f"{what}{why}: {len(self._held)} of {self.limits.copies} copies and "
            f"{size_text(used)} of {size_text(self.limits.total_bytes)} in use; revoke a "
            "grant to make room"
        )


@dataclass
class Draw:
    """One copy's account with the quota: copies.Budget draws through it."""

    quota: CopyQuota
    ref_id: str
    what: str

    def draw(self, size: int) -> None:
        self.quota.draw(self.ref_id, size, self.what)

    def room(self) -> int:
        return self.quota.room()

    def refusal(self) -> QuotaError:
        return self.quota.refusal(self.what, 0)


def size_text(size: int) -> str:
    """A byte count for people: exact below 1 KiB, else in the largest unit that fits."""
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if size >= unit:
            return f"{size / unit:.1f} {name}"
    return f"{size} bytes"
