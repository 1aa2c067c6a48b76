"""Approval of tool calls (spec: host.md#approval-by-effect): read runs at once; write and
external follow a policy.

With `ask`, the run emits an approval event and waits for a decision posted to the host;
no decision within the timeout counts as a denial.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from enum import StrEnum

from plugin_spec.tool_definition import Effect


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


@dataclass
class ApprovalBroker:
    """Pending approval requests, settled by decide() from the HTTP API or a test."""

    _pending: dict[str, asyncio.Future[bool]] = field(default_factory=dict)

    def open(self) -> tuple[str, asyncio.Future[bool]]:
        approval_id = f"approval_{uuid.uuid4()}"
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[approval_id] = future
        return approval_id, future

    def decide(self, approval_id: str, approved: bool) -> bool:
        """Settle a pending request; False when there is none by that id (or it timed out)."""
        future = self._pending.pop(approval_id, None)
        if future is None or future.done():
            return False
        future.get_loop().call_soon_threadsafe(_settle, future, approved)
        return True

    async def wait(self, approval_id: str, future: asyncio.Future[bool], timeout: float) -> bool:
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return False
        finally:
            self._pending.pop(approval_id, None)

    def pending(self) -> list[str]:
        return list(self._pending)


def _settle(future: asyncio.Future[bool], approved: bool) -> None:
    if not future.done():
        future.set_result(approved)
