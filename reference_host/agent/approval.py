"""Approval of tool calls (spec: host.md#approval-by-effect): read runs at once; write and
external follow a policy.

With `ask`, the run emits an approval event and waits for a decision posted to the host;
no decision within the timeout counts as a denial. An approval holds only for what it showed:
whoever opens one gives a recheck that says what changed since (the tool's plugin upgraded,
say), and a decision that arrives after such a change settles the approval as not run.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from plugin_spec.tool_definition import Effect

# What changed since the approval was asked, or None while it still holds.
Recheck = Callable[[], str | None]


class Decision(StrEnum):
    ASK = "ask"
    ALLOW = "allow"
    DENY = "deny"


@dataclass(frozen=True)
class ApprovalPolicy:
    write: Decision = Decision.ASK
    external: Decision = Decision.ASK
    timeout: float = 120.0

    def decide(self, effect: Effect) -> Decision:
        if effect is Effect.READ:
            return Decision.ALLOW
        return self.write if effect is Effect.WRITE else self.external


@dataclass(frozen=True)
class Verdict:
    """How a pending approval was settled. changed is set when the user approved but what
    was approved had changed meanwhile: the call must not run, and changed says why."""

    approved: bool
    changed: str | None = None

    @property
    def runs(self) -> bool:
        return self.approved and self.changed is None


@dataclass
class ApprovalBroker:
    """Pending approval requests, settled by decide() from the HTTP API or a test."""

    _pending: dict[str, tuple[asyncio.Future[Verdict], Recheck]] = field(default_factory=dict)

    def open(self, recheck: Recheck = lambda: None) -> tuple[str, asyncio.Future[Verdict]]:
        """A new pending approval; recheck says what changed since it was asked."""
        approval_id = f"approval_{uuid.uuid4()}"
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._pending[approval_id] = (future, recheck)
        return approval_id, future

    def decide(self, approval_id: str, approved: bool) -> Verdict | None:
        """Settle a pending request; None when there is none by that id (or it timed out).

        An approval is checked against its recheck the moment it arrives: when what it was
        asked for has changed, the verdict says so and the call does not run."""
        entry = self._pending.pop(approval_id, None)
        if entry is None or entry[0].done():
            return None
        future, recheck = entry
        verdict = Verdict(approved, recheck() if approved else None)
        future.get_loop().call_soon_threadsafe(_settle, future, verdict)
        return verdict

    async def wait(
        self, approval_id: str, future: asyncio.Future[Verdict], timeout: float
    ) -> Verdict:
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return Verdict(False)
        finally:
            self._pending.pop(approval_id, None)

    def pending(self) -> list[str]:
        return list(self._pending)


def _settle(future: asyncio.Future[Verdict], verdict: Verdict) -> None:
    if not future.done():
        future.set_result(verdict)
