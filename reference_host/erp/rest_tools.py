"""ERP plugins in the host (spec: erp.md): tool files as REST-backed tool callbacks.

The model sees each tool under its toolCode with dots turned into underscores. HIGH risk
counts as a write (approval first); a strict tool re-checks the actor's permission when it is
called, not only when the snapshot was filtered; the namespace rule is checked again before
every dispatch.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from plugin_spec.erp_decls import ErpToolDecl
from plugin_spec.namespace import namespace_problem
from reference_host.erp.actors import ActorDirectory
from reference_host.erp.dispatch import RestCall, dispatch
from reference_host.tools.callbacks import (
    CallContext,
    CallPlan,
    PluginTool,
    SentAsIs,
    ToolResult,
    failure,
)


class RestToolCallback(SentAsIs, PluginTool[ErpToolDecl]):
    """Calls one ERP tool's endpoint on the ERP backend over httpx."""

    def __init__(
        self,
        plugin_id: str,
        decl: ErpToolDecl,
        client: httpx.AsyncClient,
        base_url: str,
        directory: ActorDirectory,
        available: Callable[[str], bool],
    ) -> None:
        super().__init__(plugin_id, decl, available)
        self.required_permission = decl.permission
        self._client = client
        self._base_url = base_url
        self._directory = directory

    async def call(self, plan: CallPlan, context: CallContext) -> ToolResult:
        if gone := self.gone():
            return gone
        permission = self.decl.permission
        if self.decl.strict and not self._directory.permits(
            context.tenant, context.actor, permission
        ):
            return failure(
                f"{context.actor or 'the caller'} lacks permission {permission} "
                f"for {self.decl.code}"
            )
        if problem := namespace_problem(self.decl.handler.path):
            return failure(f"{self.decl.code}: handler path {problem}")
        try:
            arguments = plan.arguments.object()
        except ValueError as exc:
            return failure(str(exc))
        call = RestCall(self._base_url, self.decl.handler, arguments, context.tenant, context.actor)
        return await dispatch(self._client, call)
