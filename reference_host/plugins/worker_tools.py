"""A FengYu aiTool as a ToolCallback: arguments -> FileRefs injected and handed over -> worker
-> what it wrote for writable grants committed.

The callback belongs to the snapshot it was made for; if its plugin has since been disabled
or uninstalled it answers the spec's "no longer available" failure instead of calling
(spec: host.md#tool-snapshots-and-built-in-names).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from plugin_spec.fengyu_decls import ToolDecl
from plugin_spec.filerefs import FileRefError
from plugin_spec.sensitive import secrets
from reference_host.grants.grant_store import GrantStore
from reference_host.plugins.input_contract import InputContract
from reference_host.process.manager import PluginProcessManager
from reference_host.process.secrets import SECRETS
from reference_host.process.worker_errors import WorkerError
from reference_host.tools.callbacks import (
    CallContext,
    CallPlan,
    failure,
    parse_arguments,
    unavailable,
)


class WorkerToolCallback:
    """Calls one aiTool's method on its plugin's worker through the process manager."""

    def __init__(
        self,
        plugin_id: str,
        decl: ToolDecl,
        manager: PluginProcessManager,
        grants: GrantStore,
        available: Callable[[str], bool],
    ) -> None:
        self.owner = plugin_id
        self.definition = decl.definition
        self.effect = decl.effect
        self.decl = decl
        self._manager = manager
        self._grants = grants
        self._available = available
        self._contract = InputContract(decl.method, decl.definition.input_schema)

    def plan(self, input_json: str, context: CallContext) -> CallPlan:
        """The arguments with route B's FileRef filled in, and the granted files they hold.

        Arguments that cannot be planned (not an object, absurdly deep) are planned as sent:
        the call refuses them with its own error.
        """
        try:
            args = parse_arguments(input_json)
            conversation = context.conversation_id
            filled = self._grants.injection(conversation, self.owner, self.decl.file_classes)
            args = {**args, **filled}
            return CallPlan(
                json.dumps(args, ensure_ascii=False) if filled else input_json,
                tuple(filled),
                tuple(self._grants.shown(conversation, self.owner, args, filled)),
            )
        except (ValueError, RecursionError):
            return CallPlan(input_json)

    async def call(self, input_json: str, context: CallContext) -> str:
        if not self._available(self.owner):
            return unavailable(self.owner)
        try:
            args = parse_arguments(input_json)
            # copies of granted files are made off the event loop: they may be large
            params = await asyncio.to_thread(
                self._grants.prepare,
                context.conversation_id,
                self.owner,
                args,
                self.decl.file_classes,
                inject=not context.planned,
            )
        except (ValueError, FileRefError) as exc:
            return failure(str(exc))
        except Exception as exc:  # the model layer never sees an exception (spec: host.md)
            return failure(f"internal error: {type(exc).__name__}: {exc}")
        # off the event loop: a plugin installed without the kit may hold a slow pattern
        if (problem := await asyncio.to_thread(self._contract.problem, params)) is not None:
            # the staging handed over is released unchanged: no call ran
            await asyncio.to_thread(self._grants.commit, context.conversation_id, self.owner)
            return failure(problem)  # what the worker would get, route B's refs in place
        SECRETS.hold(self.owner, secrets(args, self.definition.input_schema))
        try:
            # the worker reaches this conversation's grant folders, and no other's
            roots = await asyncio.to_thread(self._grants.roots, context.conversation_id, self.owner)
            output = json.dumps(
                await self._manager.invoke(
                    self.owner,
                    self.decl.method,
                    params,
                    tool_timeout=self.decl.timeout,
                    method_timeout=self.decl.method_timeout,
                    grants=roots,
                ),
                ensure_ascii=False,
            )
        except WorkerError as exc:
            output = failure(exc.message)
        except Exception as exc:
            output = failure(f"internal error: {type(exc).__name__}: {exc}")
        # after every call, failed ones too: a worker may write before it fails, and a
        # background job of an earlier call may have written since
        try:
            await asyncio.to_thread(self._grants.commit, context.conversation_id, self.owner)
        except FileRefError as exc:
            return failure(str(exc))
        except Exception as exc:
            return failure(f"internal error: {type(exc).__name__}: {exc}")
        return output
