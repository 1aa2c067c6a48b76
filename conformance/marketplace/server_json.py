"""An MCP registry `server.json` package entry as the command a client runs.

The registry describes a package (npm or PyPI here), its arguments and the environment
variables it declares, and leaves the command line to the client. As clients build it: the
command is the package's `runtimeHint`, else `npx` for npm and `uvx` for PyPI (npx with `-y`,
so a first run does not stop at a prompt); the arguments are `runtimeArguments`, the package
pinned to its version, then `packageArguments`. A variable takes the value the target gives,
else its default; a required one with neither, like an argument required without a value, is
a ServerJsonError naming its pointer: the target needs configuration before it can run."""

from __future__ import annotations

from plugin_spec.json_types import JsonObject

RUNNERS = {"npm": "npx", "pypi": "uvx"}


class ServerJsonError(ValueError):
    """The server cannot be run as given; the message names the JSON pointer."""


def launch_entry(server: JsonObject, package: int | None, values: dict[str, str]) -> JsonObject:
    """The `mcpServers` entry ({command, args, env}) that runs the server's package."""
    packages = server.get("packages")
    if not isinstance(packages, list) or not packages:
        raise ServerJsonError("/server/packages: no package to run (a remote server?)")
    if package is None:
        stdio = [i for i, p in enumerate(packages) if _transport(p) == "stdio"]
        if not stdio:
            raise ServerJsonError("/server/packages: none has a stdio transport")
        package = stdio[0]
    entry = packages[package] if package < len(packages) else None
    if not isinstance(entry, dict):
        raise ServerJsonError(f"/package: {package} is not an index of /server/packages")
    at = f"/server/packages/{package}"
    kind = entry.get("registryType")
    if not isinstance(kind, str) or kind not in RUNNERS:
        raise ServerJsonError(f"{at}/registryType: {kind!r} is not run here (npm or pypi is)")
    if _transport(entry) != "stdio":
        raise ServerJsonError(f"{at}/transport: {_transport(entry)!r}, not stdio")
    identifier, version = entry.get("identifier"), entry.get("version")
    if not isinstance(identifier, str) or not isinstance(version, str):
        raise ServerJsonError(f"{at}: expected an identifier and a version")
    command = entry.get("runtimeHint") or RUNNERS[kind]
    args = ["-y"] if command == "npx" else []
    args += _arguments(entry.get("runtimeArguments"), f"{at}/runtimeArguments")
    args.append(f"{identifier}@{version}")
    args += _arguments(entry.get("packageArguments"), f"{at}/packageArguments")
    env = _environment(entry.get("environmentVariables"), values, f"{at}/environmentVariables")
    return {"command": command, "args": [*args], "env": {**env}}


def _transport(package: object) -> object:
    transport = package.get("transport") if isinstance(package, dict) else None
    return transport.get("type") if isinstance(transport, dict) else None


def _arguments(declared: object, at: str) -> list[str]:
    words: list[str] = []
    for index, argument in enumerate(declared if isinstance(declared, list) else []):
        if not isinstance(argument, dict):
            raise ServerJsonError(f"{at}/{index}: expected an argument object")
        value = argument.get("value", argument.get("default"))
        if value is None:
            if argument.get("isRequired"):
                raise ServerJsonError(f"{at}/{index}: required, and no value or default given")
            continue
        if argument.get("type") == "named":
            words += [str(argument.get("name", "")), str(value)]
        else:
            words.append(str(value))
    return words


def _environment(declared: object, values: dict[str, str], at: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for index, variable in enumerate(declared if isinstance(declared, list) else []):
        if not isinstance(variable, dict) or not isinstance(variable.get("name"), str):
            raise ServerJsonError(f"{at}/{index}: expected a variable with a name")
        name = variable["name"]
        value = values.get(name, variable.get("value", variable.get("default")))
        if value is None:
            if variable.get("isRequired"):
                raise ServerJsonError(
                    f"{at}/{index}: {name} is required: give it in the target's env"
                )
            continue
        env[name] = str(value)
    return env
