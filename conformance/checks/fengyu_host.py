"""Host checks (spec: fengyu-worker.md#running-inside-a-host): the plugin installed into the
reference host and driven by a scripted model, the way a user's assistant would drive it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from conformance.checks.fengyu import FengYuContext, check
from conformance.fengyu.host_session import HostSession
from conformance.fengyu.manifest import AiTool
from conformance.fengyu.services import WorkerServices
from conformance.fengyu.tool_files import ToolFiles
from conformance.findings import Finding, NotApplicable
from conformance.strategies import GeneratorGap, InputSpace
from plugin_spec import jsonrpc
from plugin_spec.filerefs import FileClass, classify_parameters
from plugin_spec.json_types import JsonObject
from reference_host.tools.callbacks import CallContext, plan_and_call


def session(ctx: FengYuContext) -> HostSession:
    return _workers(ctx).host_session()


def _workers(ctx: FengYuContext) -> WorkerServices:
    """The plugin's worker services, when its worker starts and answers."""
    workers = ctx.workers
    if workers is None:
        raise NotApplicable("the plugin declares no worker")
    workers.require_usable()
    return workers


def finding(ctx: FengYuContext, message: str) -> Finding:
    return ctx.manifest_finding("", message)


@check("FY-HOST-001")
def works_inside_a_host(ctx: FengYuContext) -> Iterator[Finding]:
    simplest = _simplest_tool(ctx.plugin.tools)
    if simplest is None:
        raise NotApplicable("the plugin declares no tools: there is nothing for a host to offer")
    _workers(ctx).require_answering(simplest, ctx.requirement.id)
    host = session(ctx)
    if host.info is None:
        yield finding(ctx, f"the host refused the install:\n{host.install_error}")
        return
    if problem := host.worker_answers():
        yield finding(
            ctx,
            f"the worker does not start from the installed copy {host.info.root}:\n{problem}",
        )
        return
    snapshot = host.host.registry.snapshot()
    for declared in ctx.plugin.tools:
        offered = snapshot.get(str(declared.name))
        if offered is None or offered.definition.description != declared.entry.get("description"):
            yield finding(ctx, f"tool {declared.name!r} is not in the host's snapshot as declared")
    tool = _simplest_tool(ctx.plugin.tools)
    if tool is not None:
        events = host.run(str(tool.name), _arguments(tool), "kit-host-001")
        phases = [(e.data.get("phase"), e.data.get("id")) for e in events if e.type == "tool"]
        if phases != [("call", "call-kit-1"), ("result", "call-kit-1")]:
            yield finding(
                ctx,
                f"a scripted call of {tool.name!r} gave the tool "
                f"events {phases}, not one call and its result",
            )
    host.loop.run(host.host.disable(host.info.id))
    left = set(host.host.registry.snapshot().names()) & set(ctx.plugin.tool_names())
    if left:
        yield finding(ctx, f"after disable the snapshot still has {sorted(left)}")
    old = snapshot.get(str(tool.name)) if tool is not None else None
    if old is not None:
        result = host.loop.run(plan_and_call(old, {}, CallContext("kit-host-001")))
        expected = f"Plugin tool is no longer available: {host.info.id}"
        if result.error != expected:
            yield finding(ctx, f"a disabled tool answered {result.text()}")
    host.loop.run(host.host.enable(host.info.id))


@check("FY-HOST-002")
def route_b_injection_accepted(ctx: FengYuContext) -> Iterator[Finding]:
    candidates = [t for t in ctx.plugin.tools if len(_classes(t)) == 1]
    if not candidates:
        raise NotApplicable("no tool has exactly one file-class parameter")
    workers = _workers(ctx)
    host = workers.host_session()
    if host.info is None or host.worker_answers():
        raise NotApplicable("the plugin does not work inside a host (FY-HOST-001)")
    for index, tool in enumerate(candidates):
        ((name, file_class),) = _classes(tool).items()
        files = workers.files_for(str(tool.name))
        expected = _attach(host, host.info.id, f"kit-host-002-{index}", file_class, files)
        arguments = {k: v for k, v in _arguments(tool).items() if k != name}
        host.dispatched.clear()
        events = host.run(str(tool.name), arguments, f"kit-host-002-{index}")
        sent = [
            params.get(name)
            for method, params in host.dispatched
            if method == tool.method and isinstance(params, dict)
        ]
        if sent != [expected]:
            yield finding(
                ctx,
                f"{tool.name!r}.{name} reached the worker as "
                f"{sent!r}, not the host's copy of the grant {expected!r}",
            )
            continue
        output = next((e.data["output"] for e in events if e.data.get("phase") == "result"), "")
        if f"(code {jsonrpc.INVALID_PARAMS})" in output:  # the worker refused its params
            yield finding(
                ctx,
                f"{tool.name!r} rejected the injected path {expected!r} for {name!r}: {output}",
            )


def _attach(
    host: HostSession, plugin_id: str, conversation: str, file_class: FileClass, files: ToolFiles
) -> str | list[str]:
    """Grant the tool's files; returns what the worker must get: the paths of the host's
    copies of them in the plugin's data folder (a staging folder for a writable one)."""
    grants = host.host.grants
    if file_class is FileClass.FILE_LIST:
        refs = [grants.attach(conversation, plugin_id, path, "read") for path in files.files]
        return [grants.copy_path(plugin_id, ref) for ref in refs]
    if file_class is FileClass.WRITE_DIRECTORY:
        out = files.workdir / f"granted-{conversation}"
        out.mkdir(parents=True, exist_ok=True)
        ref = grants.attach(conversation, plugin_id, out, "read-write")
        return grants.copy_path(plugin_id, ref, write=True)
    path: Path = files.inputs if file_class is FileClass.READ_DIRECTORY else files.files[0]
    return grants.copy_path(plugin_id, grants.attach(conversation, plugin_id, path, "read"))


def _classes(tool: AiTool) -> dict[str, FileClass]:
    return classify_parameters(tool.input_schema.data) if tool.input_schema else {}


def _simplest_tool(tools: list[AiTool]) -> AiTool | None:
    """A read tool without file parameters if there is one: the least setup to call."""
    named = [t for t in tools if isinstance(t.name, str)]
    return min(named, key=lambda t: (t.effect != "read", len(_classes(t))), default=None)


def _arguments(tool: AiTool) -> JsonObject:
    schema = tool.input_schema.data if tool.input_schema else None
    try:
        value = InputSpace.of(schema).minimal() if isinstance(schema, dict) else {}
    except GeneratorGap:
        value = {}
    return value if isinstance(value, dict) else {}
