"""Static checks of an ERP plugin's metadata/tool/*.json files (spec: erp.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from conformance.checks.erp import ErpContext, check
from conformance.checks.fengyu_manifest import offered_tool_names
from conformance.erp.plugin import MUTATING, ErpPlugin, ErpTool, model_name
from conformance.findings import Finding, shown
from conformance.provider_view import PORTABLE_NAME
from conformance.schema_messages import explain
from conformance.schema_validation import annotated_requirements, schema_uri, validate
from conformance.sources import pointer
from plugin_spec.namespace import namespace_problem
from plugin_spec.rest_handler import DispatchError, encode_segment, placeholder_problem
from plugin_spec.schema_refs import DOCUMENT_ONLY, external_refs

TOOL_SCHEMA = "erp-tool.schema.json"
PLACEHOLDER = re.compile(r"\{([^{}/]+)\}")
# Values a path parameter's schema is probed with: each is one the host refuses to send.
UNSENDABLE_PROBES = ("a/b", "/", "1/2", "..", ".", "a\\b", "..;", "\uff0e\uff0e")


@check("ERP-TOOL-001")
def tool_files_load(ctx: ErpContext) -> Iterator[Finding]:
    plugin = ctx.plugin
    if plugin.load_error is not None:
        yield ctx.finding(plugin.load_error.message, "metadata/tool/")
    yield from plugin.file_errors


@check("ERP-TOOL-002")
def no_duplicate_keys(ctx: ErpContext) -> Iterator[Finding]:
    for tool in ctx.plugin.tools:
        for duplicate in tool.document.duplicates:
            yield ctx.tool_finding(
                tool,
                duplicate.pointer,
                f"key {duplicate.key!r} appears twice in one object",
                f"remove one of the two {duplicate.key!r} keys, or rename one; only the last "
                "value would ever be used",
            )


def schema_findings(plugin: ErpPlugin) -> list[Finding]:
    return [
        tool.finding(error.requirement, error.pointer, error.message, error.fix)
        for tool in plugin.tools
        for error in validate(tool.data, schema_uri(TOOL_SCHEMA))
    ]


@check(*sorted(annotated_requirements(TOOL_SCHEMA)))
def tool_file_schema(ctx: ErpContext) -> list[Finding]:
    return ctx.store.once(schema_findings, ctx.plugin)


@check("ERP-TOOL-012")
def input_schema_is_json_schema(ctx: ErpContext) -> Iterator[Finding]:
    for tool in ctx.plugin.tools:
        schema = tool.data.get("inputSchema")
        if not isinstance(schema, dict):
            continue
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            where = pointer("inputSchema", *exc.absolute_path)
            told = explain(exc, where)
            yield ctx.tool_finding(
                tool, where, f"not a valid JSON Schema: {told.message}", told.fix
            )
            continue
        for ref in external_refs(schema):
            yield ctx.tool_finding(
                tool,
                pointer("inputSchema") + ref.pointer,
                f"found {ref.keyword} {shown(ref.ref)}; expected a ref inside the schema "
                "(#/..., or a URI one of its subschemas names with $id): refs are resolved "
                "inside the schema only, and no file or URL a schema names is opened",
                f"put the referenced schema under inputSchema.$defs and point {ref.keyword} at "
                "it with #/$defs/NAME, or write it in place",
            )


@check("ERP-TOOL-005")
def namespace_rule(ctx: ErpContext) -> Iterator[Finding]:
    for tool, path in _with_path(ctx.plugin):
        if problem := namespace_problem(path):
            yield ctx.tool_finding(tool, "/handlerConfig/path", f"path {path!r} {problem}")


@check("ERP-TOOL-006")
def params_declared(ctx: ErpContext) -> Iterator[Finding]:
    for tool, path in _with_path(ctx.plugin):
        schema = tool.data.get("inputSchema")
        schema = schema if isinstance(schema, dict) else {}
        declared, listed = schema.get("properties"), schema.get("required")
        properties = declared if isinstance(declared, dict) else {}
        required = listed if isinstance(listed, list) else []
        path_params = _names(tool.handler.get("pathParams"))
        placeholders = PLACEHOLDER.findall(path)
        for name in path_params:
            if name not in placeholders:
                yield ctx.tool_finding(
                    tool,
                    "/handlerConfig/pathParams",
                    f"pathParams {name!r} has no {{{name}}} in the path {path!r}",
                    f"write {{{name}}} into handlerConfig.path, or remove {name!r} from pathParams",
                )
            if name not in properties or name not in required:
                yield ctx.tool_finding(
                    tool,
                    "/inputSchema",
                    f"path parameter {name!r} must be a required inputSchema property",
                    f"declare {name!r} in inputSchema.properties and list it in "
                    "inputSchema.required",
                )
        for name in placeholders:
            if name not in path_params:
                yield ctx.tool_finding(
                    tool,
                    "/handlerConfig/path",
                    f"placeholder {{{name}}} is not listed in pathParams",
                    f"add {name!r} to handlerConfig.pathParams",
                )
        for name in _names(tool.handler.get("queryParams")):
            if name not in properties:
                yield ctx.tool_finding(
                    tool,
                    "/handlerConfig/queryParams",
                    f"queryParams {name!r} is not an inputSchema property",
                    f"declare {name!r} in inputSchema.properties, or remove it from queryParams",
                )


@check("ERP-TOOL-006")
def placeholders_well_formed(ctx: ErpContext) -> Iterator[Finding]:
    """A path the platform cannot split into text and {name} placeholders is unusable: the
    reference host refuses such a handlerConfig, so no call of the tool could ever be made."""
    for tool, path in _with_path(ctx.plugin):
        if problem := placeholder_problem(path):
            yield ctx.tool_finding(
                tool,
                "/handlerConfig/path",
                f"path {path!r} {problem}",
                "write each placeholder of handlerConfig.path once as {name}: one brace on each "
                "side, no '/' inside",
            )


@check("ERP-TOOL-007")
def unique_tool_codes(ctx: ErpContext) -> Iterator[Finding]:
    first: dict[str, str] = {}
    for tool in ctx.plugin.tools:
        if isinstance(tool.code, str):
            if tool.code in first:
                yield ctx.tool_finding(
                    tool,
                    "/toolCode",
                    f"toolCode {tool.code!r} is also declared in {first[tool.code]}",
                )
            first.setdefault(tool.code, tool.file)


@check("ERP-TOOL-008")
def namespaced_tool_code(ctx: ErpContext) -> Iterator[Finding]:
    for tool in ctx.plugin.tools:
        code, app = tool.code, tool.data.get("applicationCode")
        if not isinstance(code, str) or not isinstance(app, str):
            continue
        parts = code.split(".")
        if (
            len(parts) < 3
            or not all(re.fullmatch(r"[a-z0-9][a-z0-9_-]*", p) for p in parts)
            or (not app.startswith(parts[0]))
        ):
            yield ctx.tool_finding(
                tool,
                "/toolCode",
                f"toolCode {code!r} is not <plugin>.<noun>.<verb> for applicationCode {app!r}",
            )


@check("ERP-TOOL-009")
def model_facing_names(ctx: ErpContext) -> Iterator[Finding]:
    offered = offered_tool_names(ctx.peers)
    seen: dict[str, str] = {}
    codes: set[str] = set()
    for tool in ctx.plugin.tools:
        if not isinstance(tool.code, str) or tool.code in codes:
            continue  # a repeated toolCode is ERP-TOOL-007's finding
        codes.add(tool.code)
        name = model_name(tool.code)
        if not PORTABLE_NAME.fullmatch(name):
            yield ctx.tool_finding(
                tool,
                "/toolCode",
                f"the model would see {name!r}, which model APIs refuse "
                "(letters, digits, '_' and '-', at most 64)",
            )
        elif name in seen:
            yield ctx.tool_finding(
                tool,
                "/toolCode",
                f"the model would see {name!r} for this tool and for {seen[name]}",
            )
        elif name in offered:
            yield ctx.tool_finding(
                tool,
                "/toolCode",
                f"the model would see {name!r}, also offered by {offered[name]}",
            )
        seen.setdefault(name, tool.file)


@check("ERP-TOOL-010")
def mutating_tools_not_low_risk(ctx: ErpContext) -> Iterator[Finding]:
    for tool in ctx.plugin.tools:
        method = tool.handler.get("method")
        if method in MUTATING and tool.data.get("riskLevel") == "LOW":
            route = f"{method} {tool.handler.get('path')}"
            yield ctx.tool_finding(tool, "/riskLevel", f"{route} changes data but is LOW risk")


@check("ERP-TOOL-011")
def high_risk_is_strict(ctx: ErpContext) -> Iterator[Finding]:
    for tool in ctx.plugin.tools:
        strict = tool.data.get("strictPermissionCheck")
        if tool.data.get("riskLevel") == "HIGH" and strict is not True:
            yield ctx.tool_finding(
                tool,
                "/strictPermissionCheck",
                f'found strictPermissionCheck {shown(strict)} on a riskLevel "HIGH" tool; '
                "expected true, so the permission is re-checked at call time",
            )


@check("ERP-TOOL-013")
def path_params_exclude_separators(ctx: ErpContext) -> Iterator[Finding]:
    """A value the schema admits but the host will not put in a path fails at run time,
    after the model chose it; the schema should rule it out up front."""
    for tool in ctx.plugin.tools:
        schema = tool.data.get("inputSchema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict):
            continue
        for name in _names(tool.handler.get("pathParams")):
            if accepted := _unsendable_values(properties.get(name)):
                yield ctx.tool_finding(
                    tool,
                    pointer("inputSchema", "properties", name),
                    f"path parameter {name!r} admits {', '.join(map(repr, accepted))}, which "
                    "the host refuses to send in a path",
                    f"constrain inputSchema.properties.{name}: a pattern such as "
                    "^[A-Za-z0-9_-]+$, an enum, or an integer type",
                )


def _unsendable_values(schema: object) -> list[str]:
    if not isinstance(schema, dict | bool):
        return []
    try:
        validator = Draft202012Validator(schema, registry=DOCUMENT_ONLY)
        accepted = [value for value in UNSENDABLE_PROBES if validator.is_valid(value)]
    except Exception:  # an unusable schema is ERP-TOOL-012's finding, not this one's
        return []
    return [value for value in accepted if _refused(value)]


def _refused(value: str) -> bool:
    try:
        encode_segment(value)
    except DispatchError:
        return True
    return False


def _with_path(plugin: ErpPlugin) -> Iterator[tuple[ErpTool, str]]:
    """The tools whose handlerConfig.path is a string, each with its path: the path rules
    judge no other (a path of another type is the schema's finding)."""
    for tool in plugin.tools:
        path = tool.handler.get("path")
        if isinstance(path, str):
            yield tool, path


def _names(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
