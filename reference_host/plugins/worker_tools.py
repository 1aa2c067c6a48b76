"""A FengYu aiTool as a ToolCallback: arguments -> FileRefs injected and handed over -> worker
-> what it wrote for writable grants committed (once its plugin is gone, PluginTool's
"no longer available" answer instead).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plugin_spec.fengyu_decls import ToolDecl
from plugin_spec.filerefs import FileRefError
from plugin_spec.sensitive import secrets
from reference_host.grants.grant_store import GrantStore
from reference_host.plugins.input_contract import InputContract
from reference_host.process.manager import PluginProcessManager
from reference_host.process.secrets import SECRETS
from reference_host.process.worker_errors import WorkerError
from reference_host.tools.callbacks import (
    Arguments,
    CallContext,
    CallPlan,
    PluginTool,
    ToolResult,
    failure,
)

# A call's params with its FileRefs handed over, and the grant folders (writable, readable)
Opened = tuple[dict[str, Any], tuple[tuple[Path, ...], tuple[Path, ...]]]


class WorkerToolCallback(PluginTool[ToolDecl]):
    """Calls one aiTool's method on its plugin's worker through the process manager."""

    def __init__(
        self,
        plugin_id: str,
        decl: ToolDecl,
        manager: PluginProcessManager,
        grants: GrantStore,
        available: Callable[[str], bool],
    ) -> None:
        super().__init__(plugin_id, decl, available)
        self._manager = manager
        self._grants = grants
        self._contract = InputContract(decl.method, decl.definition.input_schema)

    def plan(self, arguments: Arguments, context: CallContext) -> CallPlan:
        """The arguments with route B's FileRef filled in, and the granted files they hold.

        Arguments that cannot be planned (not an object) are planned as sent: the call
        refuses them with its own error.
        """
        if arguments.problem is not None:
            return CallPlan(arguments)
        try:
            classes = self.decl.file_classes
            return self._grants.plan(context.conversation_id, self.owner, arguments, classes)
        except (ValueError, RecursionError):
            return CallPlan(arguments)

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        if gone := self.gone():
            return gone
        conversation = context.conversation_id
        try:
            args = plan.arguments.object()
            # one step off the event loop: copies of granted files may be large, and a plugin
            # installed without the kit may hold a slow pattern
            opened = await asyncio.to_thread(self._open, conversation, args)
        except (ValueError, FileRefError) as exc:
            return failure(str(exc))
        except Exception as exc:  # the model layer never sees an exception (spec: host.md)
            return failure(f"internal error: {type(exc).__name__}: {exc}")
        if isinstance(opened, str):
            return failure(opened)  # what the worker would get, route B's refs in place
        params, roots = opened
        SECRETS.hold(self.owner, secrets(args, self.definition.input_schema))
        try:
            # the worker reaches this conversation's grant folders (roots), and no other's
            output = ToolResult.of(
                await self._manager.invoke(
                    self.owner,
                    self.decl.method,
                    params,
                    tool_timeout=self.decl.timeout,
                    method_timeout=self.decl.method_timeout,
                    grants=roots,
                )
            )
        except WorkerError as exc:
            output = failure(exc.message)
        except Exception as exc:
            output = failure(f"internal error: {type(exc).__name__}: {exc}")
        # after every call, failed ones too: a worker may write before it fails, and a
        # background job of an earlier call may have written since
        try:
            await asyncio.to_thread(self._grants.commit, conversation, self.owner)
        except FileRefError as exc:
            return failure(str(exc))
        except Exception as exc:
            return failure(f"internal error: {type(exc).__name__}: {exc}")
        return output

    def _open(self, conversation: str, args: dict[str, Any]) -> Opened | str:
        """The call's params with its FileRefs handed over and the grant folders its worker
        reaches; or, for params the method's inputSchema refuses, why (the staging handed
        over is then released unchanged: no call runs)."""
        params, roots = self._grants.open_call(
            conversation, self.owner, args, self.decl.file_classes
        )
        problem = self._contract.problem(params)
        if problem is not None:
            self._grants.commit(conversation, self.owner)
            return problem
        return params, roots
