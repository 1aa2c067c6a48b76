"""The visual workflow canvas (spec: host.md#saved-workflows): save, load against the live
catalog, reconcile.

A workflow is `{"id", "name", "nodes": [node]}`; a node is

    {"id", "identity": "<pluginId>:<toolName>" | "builtin:<name>",
     "inputs": {input: literal value},
     "bindings": {input: {"node": upstream node id, "field": output field | null}},
     "seen": {"revision", "inputSchema", "outputSchema"}}

A binding with a field passes that field of the upstream result, with null the whole result.
`seen` is the tool as the catalog described it when the node was last saved or reconciled; the
host fills it in, whatever a client sends.

Saving checks the workflow against the live catalog and refuses it with a WorkflowError
naming the node and the input. Loading never refuses and never drops anything: a node whose
tool has left the catalog is kept and marked `available: false`, and a node whose tool has a
new revision carries `reconcile` (the bindings and literals to inputs that no longer exist, the
inputs now required without a value). `reconcile()` then adopts the live schemas, keeping
every binding and literal: a person decides what to do with them, not the host.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from plugin_spec.workflow_catalog import CatalogEntry
from reference_host.tools.catalog_entries import from_snapshot
from reference_host.workflow.store import WorkflowStore

if TYPE_CHECKING:
    from reference_host.host import Host

Catalog = Mapping[str, CatalogEntry]
# Keys load() adds to a node; a client sending an annotated workflow back gets them dropped.
ANNOTATIONS = ("available", "revision", "reconcile", "problems")


class WorkflowError(Exception):
    """A workflow the host refuses (or cannot find); `problems` lists every reason."""

    def __init__(self, message: str, problems: list[str] | None = None, *, kind: str = "invalid"):
        super().__init__(message)
        self.message = message
        self.problems = problems or [message]
        self.kind = kind  # "invalid" or "not_found"


def live_catalog(entries: Iterable[CatalogEntry]) -> dict[str, CatalogEntry]:
    return {entry.identity: entry for entry in entries}


class Canvas:
    """Saved workflows over a live catalog (a callable, read afresh on every operation)."""

    def __init__(
        self, workflows: WorkflowStore, catalog: Callable[[], Iterable[CatalogEntry]]
    ) -> None:
        self.workflows = workflows
        self._catalog = catalog

    @classmethod
    def for_host(cls, host: Host) -> Canvas:
        """The host's canvas: its database, and the catalog of its registry's snapshot."""
        return cls(WorkflowStore(host.store), lambda: from_snapshot(host.registry.snapshot()))

    def catalog(self) -> dict[str, CatalogEntry]:
        return live_catalog(self._catalog())

    def save(self, workflow: Any) -> tuple[dict[str, Any], bool]:
        """Validate and store; (the workflow as load() shows it, whether it is new)."""
        clean = normalize(workflow)
        catalog = self.catalog()
        validate(clean, catalog)
        for node in clean["nodes"]:
            node["seen"] = seen_of(catalog[node["identity"]])
        created = self.workflows.put(clean)
        return annotate(clean, catalog), created

    def load(self, workflow_id: str) -> dict[str, Any]:
        return annotate(self._get(workflow_id), self.catalog())

    def raw(self, workflow_id: str) -> dict[str, Any]:
        """The stored workflow, without annotations."""
        return self._get(workflow_id)

    def reconcile(self, workflow_id: str) -> dict[str, Any]:
        """Adopt the live schema of every available node whose revision changed.

        Returns `{"workflow": <as load() shows it afterwards>, "reconciled": [report]}`, a
        report per node that changed: node, identity, from and to revision, and (as load()
        showed them before) bindingsToRemovedInputs and newRequiredInputs. Bindings and
        literals are all kept; unavailable nodes keep what they had seen.
        """
        catalog = self.catalog()
        reports: list[dict[str, Any]] = []

        def change(workflow: dict[str, Any]) -> dict[str, Any] | None:
            reports.clear()
            for node in workflow.get("nodes", []):
                entry = catalog.get(node["identity"])
                if entry is None or entry.revision == _seen_revision(node):
                    continue
                reports.append(
                    {
                        "node": node["id"],
                        "identity": node["identity"],
                        "from": _seen_revision(node),
                        "to": entry.revision,
                        **reconcile_info(node, entry),
                    }
                )
                node["seen"] = seen_of(entry)
            return workflow if reports else None

        stored = self.workflows.update(workflow_id, change)
        if stored is None:
            raise _not_found(workflow_id)
        return {"workflow": annotate(stored, catalog), "reconciled": list(reports)}

    def delete(self, workflow_id: str) -> None:
        if not self.workflows.delete(workflow_id):
            raise _not_found(workflow_id)

    def _get(self, workflow_id: str) -> dict[str, Any]:
        workflow = self.workflows.get(workflow_id)
        if workflow is None:
            raise _not_found(workflow_id)
        return workflow


# -- shape -----------------------------------------------------------------------------------


def normalize(workflow: Any) -> dict[str, Any]:
    """A copy in the stored shape (defaults filled, annotations dropped), or a WorkflowError.

    Keys a client adds to a node besides the known ones (a position on the canvas, a label)
    are kept as they are.
    """
    if not isinstance(workflow, dict):
        raise WorkflowError("a workflow must be a JSON object")
    workflow_id = workflow.get("id")
    if workflow_id is None:
        workflow_id = f"wf_{uuid.uuid4().hex}"
    if not isinstance(workflow_id, str) or not workflow_id:
        raise WorkflowError("the workflow id must be a non-empty string")
    name = workflow.get("name", workflow_id)
    if not isinstance(name, str):
        raise WorkflowError("the workflow name must be a string")
    nodes = workflow.get("nodes", [])
    if not isinstance(nodes, list):
        raise WorkflowError("nodes must be a list")
    clean_nodes = [_node(node, index) for index, node in enumerate(nodes)]
    return {"id": workflow_id, "name": name, "nodes": clean_nodes}


def _node(node: Any, index: int) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise WorkflowError(f"nodes[{index}] must be a JSON object")
    node_id = node.get("id")
    if not isinstance(node_id, str) or not node_id:
        raise WorkflowError(f"nodes[{index}]: the node id must be a non-empty string")
    where = f"node {node_id!r}"
    identity = node.get("identity")
    if not isinstance(identity, str) or ":" not in identity:
        raise WorkflowError(f"{where}: identity must be '<pluginId>:<toolName>'")
    inputs = node.get("inputs", {})
    if not isinstance(inputs, dict):
        raise WorkflowError(f"{where}: inputs must be an object of literal values")
    bindings = node.get("bindings", {})
    if not isinstance(bindings, dict):
        raise WorkflowError(f"{where}: bindings must be an object")
    clean_bindings = {}
    for name, binding in bindings.items():
        if not isinstance(binding, dict) or not isinstance(binding.get("node"), str):
            raise WorkflowError(
                f'{where}, input {name!r}: a binding is {{"node": <node id>, "field": ...}}'
            )
        field = binding.get("field")
        if field is not None and (not isinstance(field, str) or not field):
            raise WorkflowError(
                f"{where}, input {name!r}: field must be an output field name or null"
            )
        clean_bindings[name] = {"node": binding["node"], "field": field}
    extra = {
        k: copy.deepcopy(v)
        for k, v in node.items()
        if k not in {"id", "identity", "inputs", "bindings", "seen", *ANNOTATIONS}
    }
    clean = {
        **extra,
        "id": node_id,
        "identity": identity,
        "inputs": copy.deepcopy(inputs),
        "bindings": clean_bindings,
    }
    if isinstance(node.get("seen"), dict):
        clean["seen"] = copy.deepcopy(node["seen"])
    return clean


# -- validation ------------------------------------------------------------------------------


def validate(workflow: dict[str, Any], catalog: Catalog) -> None:
    """Every reason the workflow cannot be saved against catalog, as one WorkflowError."""
    problems: list[str] = []
    nodes: dict[str, dict[str, Any]] = {}
    for node in workflow["nodes"]:
        if node["id"] in nodes:
            problems.append(f"node id {node['id']!r} is used by more than one node")
        nodes[node["id"]] = node
    for node in workflow["nodes"]:
        where = f"node {node['id']!r}"
        entry = catalog.get(node["identity"])
        if entry is None:
            problems.append(f"{where}: tool {node['identity']} is not in the catalog")
        for name in node["inputs"]:
            if entry is not None and name not in entry.inputs:
                problems.append(f"{where}, input {name!r}: not an input of {entry.identity}")
            if name in node["bindings"]:
                problems.append(f"{where}, input {name!r}: has both a literal value and a binding")
        for name, binding in node["bindings"].items():
            at = f"{where}, input {name!r}"
            if entry is not None and name not in entry.inputs:
                problems.append(f"{at}: not an input of {entry.identity}")
            upstream = nodes.get(binding["node"])
            if binding["node"] == node["id"]:
                problems.append(f"{at}: a node cannot bind to its own result")
            elif upstream is None:
                problems.append(f"{at}: binds to unknown node {binding['node']!r}")
            elif binding["field"] is not None:
                source = catalog.get(upstream["identity"])
                if source is not None and binding["field"] not in source.output_fields:
                    problems.append(
                        f"{at}: field {binding['field']!r} is not in the outputSchema of "
                        f"{source.identity}"
                    )
    if not problems:
        try:
            topological_order(workflow["nodes"])
        except WorkflowError as exc:
            problems.append(exc.message)
    if problems:
        raise WorkflowError("; ".join(problems), problems)


def topological_order(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nodes with every upstream before its downstream, else in list order; a cycle raises.

    Bindings to unknown nodes are ignored here (validation reports them).
    """
    by_id = {node["id"]: node for node in nodes}
    upstream = {
        node["id"]: {b["node"] for b in node["bindings"].values() if b["node"] in by_id}
        for node in nodes
    }
    ordered: list[dict[str, Any]] = []
    placed: set[str] = set()
    pending = list(nodes)
    while pending:
        ready = next((n for n in pending if upstream[n["id"]] <= placed), None)
        if ready is None:
            raise WorkflowError(f"the bindings form a cycle: {_cycle(pending, upstream)}")
        ordered.append(ready)
        placed.add(ready["id"])
        pending.remove(ready)
    return ordered


def _cycle(pending: list[dict[str, Any]], upstream: dict[str, set[str]]) -> str:
    """One cycle among nodes that all wait on another pending node, as 'a -> b -> a'."""
    left = {node["id"] for node in pending}
    path = [pending[0]["id"]]
    while True:
        following = min(upstream[path[-1]] & left)
        if following in path:
            cycle = [*path[path.index(following) :], following]
            return " -> ".join(reversed(cycle))  # in data-flow order: upstream first
        path.append(following)


# -- annotation ------------------------------------------------------------------------------


def seen_of(entry: CatalogEntry) -> dict[str, Any]:
    return {
        "revision": entry.revision,
        "inputSchema": copy.deepcopy(dict(entry.input_schema)),
        "outputSchema": copy.deepcopy(dict(entry.output_schema))
        if entry.output_schema is not None
        else None,
    }


def _seen_revision(node: dict[str, Any]) -> str | None:
    seen = node.get("seen")
    return seen.get("revision") if isinstance(seen, dict) else None


def reconcile_info(node: dict[str, Any], entry: CatalogEntry) -> dict[str, list[str]]:
    """What the live tool means for a node's bindings and literals (none is dropped)."""
    given = set(node["inputs"]) | set(node["bindings"])
    return {
        "bindingsToRemovedInputs": sorted(given - entry.inputs),
        "newRequiredInputs": sorted(entry.required - given),
    }


def node_problems(node: dict[str, Any], nodes: Mapping[str, Any], catalog: Catalog) -> list[str]:
    """Why the node cannot run as it is against the live catalog (empty when it can)."""
    entry = catalog.get(node["identity"])
    if entry is None:
        return [f"tool {node['identity']} is not available"]
    info = reconcile_info(node, entry)
    problems = [
        f"input {name!r} is no longer an input of {entry.identity}"
        for name in info["bindingsToRemovedInputs"]
    ]
    problems += [f"required input {name!r} has no value" for name in info["newRequiredInputs"]]
    for name, binding in sorted(node["bindings"].items()):
        upstream = nodes.get(binding["node"])
        source = catalog.get(upstream["identity"]) if upstream is not None else None
        if upstream is None:
            problems.append(f"input {name!r} binds to unknown node {binding['node']!r}")
        elif source is not None and binding["field"] not in (None, *source.output_fields):
            problems.append(
                f"input {name!r} binds field {binding['field']!r}, which is no longer in the "
                f"outputSchema of {source.identity}"
            )
    return problems


def annotate(workflow: dict[str, Any], catalog: Catalog) -> dict[str, Any]:
    """A copy of the stored workflow with, per node: available, the live revision (or
    None), problems, and `reconcile` when the live revision is not the one seen."""
    shown = copy.deepcopy(workflow)
    nodes = {node["id"]: node for node in shown.get("nodes", [])}
    for node in shown.get("nodes", []):
        entry = catalog.get(node["identity"])
        node["available"] = entry is not None
        node["revision"] = entry.revision if entry is not None else None
        node["problems"] = node_problems(node, nodes, catalog)
        if entry is not None and entry.revision != _seen_revision(node):
            node["reconcile"] = {"revision": entry.revision, **reconcile_info(node, entry)}
    return shown


def _not_found(workflow_id: str) -> WorkflowError:
    return WorkflowError(f"no workflow {workflow_id!r}", kind="not_found")
