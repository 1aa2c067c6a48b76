"""`--shard I/N`: the slice of a run's targets that shard I of N checks.

A target goes to the shard whose hash with the target's id is highest (rendezvous hashing):
the slice depends on the id and N only, never on where the target is listed, so adding or
removing targets moves none of the others, and going from N to N+1 shards moves only the
targets the new shard wins (about 1/(N+1) of them). Shards count from 1 (`1/4` is the first
of four); Kubernetes Indexed Jobs count from 0, so `--shards N` with JOB_COMPLETION_INDEX=k
is shard k+1 of N."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A shard that cannot be: the message names the flag and the value found."""


@dataclass(frozen=True)
class Shard:
    """Shard index (from 1) of count."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ShardError(f"shard {self.index}/{self.count}: expected I/N with 1 <= I <= N")

    def holds(self, target_id: str) -> bool:
        return shard_of(target_id, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(target_id: str, count: int) -> int:
    """The shard (from 1) that target_id belongs to among count shards."""
    return 1 + max(range(count), key=lambda shard: _weight(target_id, shard))


def _weight(target_id: str, shard: int) -> bytes:
    return hashlib.sha256(f"{shard}\0{target_id}".encode()).digest()


def parse_shard(value: str) -> Shard:
    """`I/N` as `--shard` takes it."""
    found = _SHARD.match(value)
    if found is None:
        raise ShardError(f"--shard {value!r}: expected I/N, e.g. 1/4 (the first of four)")
    try:
        return Shard(int(found[1]), int(found[2]))
    except ShardError as exc:
        raise ShardError(f"--shard {value!r}: {exc}") from None


def shard_from_environment(count: int, environ: dict[str, str] | None = None) -> Shard:
    """`--shards N`: the shard JOB_COMPLETION_INDEX (from 0, as a Kubernetes Indexed Job
    sets it) names."""
    raw = (os.environ if environ is None else environ).get(INDEX_VARIABLE)
    if raw is None or not raw.strip().isdigit():
        raise ShardError(
            f"--shards {count}: {INDEX_VARIABLE} is {raw!r}, expected the job's index (0 to "
            f"{count - 1})"
        )
    index = int(raw) + 1
    if index > count:
        raise ShardError(f"--shards {count}: {INDEX_VARIABLE}={raw} is past the last index")
    return Shard(index, count)


def chosen_shard(shard: str | None, shards: int | None) -> Shard | None:
    """The shard --shard or --shards names (None: the whole run); both is an error."""
    if shard is not None and shards is not None:
        raise ShardError("--shard and --shards name the slice twice: give one")
    if shard is not None:
        return parse_shard(shard)
    if shards is not None:
        return shard_from_environment(shards)
    return None
