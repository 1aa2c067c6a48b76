"""How FengYu starts a plugin's worker and greets it (spec: fengyu-worker.md#starting-the-worker,
fengyu-worker.md#the-handshake): the runtime's fixed artifact and command, the handshake request
and what its answer must say. The kit and the reference host both read this one description.

The facts are FengYu's worker protocol 4 (toolchain 2.1) as read on 2026-12-04. FengYu never
takes a command from the manifest: `backend.runtime` picks one of three fixed launches, and no
runtime means java, the legacy default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from plugin_spec.json_types import JsonMapping, JsonObject, ReadOnlyJson

RUNTIMES = ("java", "python", "go")
DEFAULT_RUNTIME = "java"
ARTIFACTS = {
    "java": PurePosixPath("backend/worker.jar"),
    "python": PurePosixPath("backend/worker.py"),
    "go": PurePosixPath("backend/worker"),
}
# FengYu's host reads the interpreter of python workers from this variable of its own
# environment (after a system property the reference host does not have), else python3.
PYTHON_VARIABLE = "FENGYU_PYTHON"
DEFAULT_PYTHON = "python3"

HANDSHAKE_METHOD = "$/fengyu/initialize"
CANCEL_METHOD = "$/cancelRequest"
SET_LEVEL_METHOD = "$/fengyu/logging/setLevel"
RESERVED_PREFIX = "$/fengyu/"
ENVELOPE_KEY = "_fengyu"
LOG_PREFIX = "@fengyu-log:"
# Protocol 1 (app 4.0 rc) is wire-identical to 4; the newest host accepts either and sends the
# version the manifest declares.
PROTOCOL_VERSIONS = (1, 4)
CURRENT_PROTOCOL = 4
HANDSHAKE_SECONDS = 10.0
CANCEL_GRACE_SECONDS = 1.0
# The FengYu app version the kit and the host present themselves as (inside the ranges of
# FengYu's own templates, `>=4.0.0-beta.4 <5.0.0`).
HOST_VERSION = "4.1.0"
HOST_CAPABILITIES = ("cancellation", "locale", "structuredLogs")
DEFAULT_LOCALE = "en"

# The `data.code` values FengYu's host and SDKs give a meaning to (JSON-RPC's own codes: jsonrpc).
METHOD_NOT_FOUND_CODE = "METHOD_NOT_FOUND"
CANCELLED_CODE = "CANCELLED"
PERMISSION_DENIED_CODE = "PERMISSION_DENIED"
INTERNAL_ERROR_CODE = "INTERNAL_ERROR"
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR")


@dataclass(frozen=True)
class Launch:
    """What FengYu runs for a manifest: the runtime (declared or the java default), the file
    it needs in the package, and the command, relative to the package root."""

    runtime: str
    declared: bool
    artifact: PurePosixPath
    argv: tuple[str, ...]
    protocol_version: int | None

    def describe(self) -> str:
        """The command as a sentence names it, with where the runtime came from."""
        source = "backend.runtime" if self.declared else "no backend.runtime, so java"
        return f"`{' '.join(self.argv)}` ({source})"


class UnsupportedRuntime(ValueError):
    """backend.runtime names no runtime FengYu knows; FengYu refuses to start such a worker."""


def fengyu_launch(manifest: JsonMapping, environ: Mapping[str, str]) -> Launch:
    """FengYu's launch for a manifest (environ: the host's own, for FENGYU_PYTHON)."""
    backend = manifest.get("backend")
    backend = backend if isinstance(backend, Mapping) else {}
    declared = "runtime" in backend
    runtime = backend.get("runtime", DEFAULT_RUNTIME)
    if runtime not in RUNTIMES:
        raise UnsupportedRuntime(
            f"backend.runtime {runtime!r} is not one FengYu runs ({', '.join(RUNTIMES)})"
        )
    artifact = ARTIFACTS[runtime]
    argv: tuple[str, ...]
    if runtime == "java":
        argv = ("java", "-Djava.awt.headless=true", "-jar", str(artifact))
    elif runtime == "python":
        argv = (environ.get(PYTHON_VARIABLE) or DEFAULT_PYTHON, "-u", str(artifact))
    else:
        argv = (str(artifact),)
    return Launch(runtime, declared, artifact, argv, _protocol(backend.get("protocolVersion")))


def _protocol(version: ReadOnlyJson) -> int | None:
    """The declared protocol version; 4.0 is 4, as JSON Schema's integer and FengYu's reader
    take it (a declared version is never lost to its spelling: the handshake is then sent)."""
    if isinstance(version, float) and version.is_integer():
        return int(version)
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def handshake_params(protocol_version: int, plugin_id: str, plugin_version: str) -> JsonObject:
    """The params of `$/fengyu/initialize`: the manifest's version, as the newest host sends."""
    return {
        "protocolVersion": protocol_version,
        "hostVersion": HOST_VERSION,
        "pluginId": plugin_id,
        "pluginVersion": plugin_version,
        "capabilities": list(HOST_CAPABILITIES),
    }


def handshake_problems(
    result: object, protocol_version: int, runtime: str
) -> list[tuple[str, str]]:
    """What FengYu refuses in a handshake result, as (field, problem) pairs: the echoed
    protocolVersion must be the declared one (and one FengYu speaks), the runtime the
    manifest's."""
    if not isinstance(result, Mapping):
        return [("result", f"the result is {type(result).__name__}, not an object")]
    problems = []
    echoed = result.get("protocolVersion")
    if echoed != protocol_version or type(echoed) is not int:
        problems.append(
            (
                "protocolVersion",
                f"protocolVersion {echoed!r} is not the declared {protocol_version}",
            )
        )
    elif echoed not in PROTOCOL_VERSIONS:
        problems.append(("protocolVersion", f"protocolVersion {echoed} is not 1 or 4"))
    if result.get("runtime") != runtime:
        problems.append(
            ("runtime", f"runtime {result.get('runtime')!r} is not the manifest's {runtime!r}")
        )
    return problems


def envelope(locale: str | None) -> JsonObject:
    """The frame-root `_fengyu` member FengYu adds to every request (none without a locale)."""
    return {ENVELOPE_KEY: {"locale": locale}} if locale else {}


def error_data_code(error: object) -> str | None:
    """The `data.code` of a JSON-RPC error object, where it has one."""
    data = error.get("data") if isinstance(error, Mapping) else None
    code = data.get("code") if isinstance(data, Mapping) else None
    return code if isinstance(code, str) else None


@dataclass(frozen=True)
class LogLine:
    """One `@fengyu-log:` stderr line as FengYu reads it; problem says what FengYu could not
    use in it (it then falls back to reading the line as free text)."""

    level: str
    logger: str
    message: str
    problem: str = ""


def parse_log_line(line: str) -> LogLine | None:
    """The structured log record of a stderr line; None for a line without the prefix."""
    if not line.startswith(LOG_PREFIX):
        return None
    text = line[len(LOG_PREFIX) :].strip()
    try:
        record = json.loads(text)
    except ValueError:
        return LogLine("INFO", "stderr", line, "the text after @fengyu-log: is not JSON")
    if not isinstance(record, dict):
        return LogLine("INFO", "stderr", line, "the JSON after @fengyu-log: is not an object")
    fields = {k: record.get(k) for k in ("level", "logger", "thread", "message", "throwable")}
    wrong = [k for k, v in fields.items() if v is not None and not isinstance(v, str)]
    if wrong:
        return LogLine("INFO", "stderr", line, f"{', '.join(wrong)} must be a string")
    level = str(fields["level"] or "INFO").upper()
    problem = ""
    if level not in LOG_LEVELS:
        problem = f"level {fields['level']!r} is not one of {', '.join(LOG_LEVELS)}"
        level = "INFO"
    elif fields["message"] is None:
        problem = "the record has no message"
    message = fields["message"] or ""
    if fields["throwable"]:
        message = f"{message}\n{fields['throwable']}"
    level = "WARN" if level == "WARNING" else level
    return LogLine(level, fields["logger"] or "worker", message, problem)
