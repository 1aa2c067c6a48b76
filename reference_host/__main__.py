"""`python -m reference_host serve ...`: the reference host's HTTP API on uvicorn.

Everything runs on one event loop: the host is created, the plugins given with --plugins are
installed (a rejected one is reported on one line and skipped), uvicorn serves the API, and
the host (its workers) is closed when the server stops. The options are declared once, in
reference_host.options, which builds both the parser and the HostConfig.

Access (reference_host.http.access): the API answers only Host values in the allow-list
(loopback names, plus --allowed-host and the bind address itself when it is a specific one),
and every request needs a bearer token. By default the host makes a fresh one at each start,
prints the dev console's URL with it once, and keeps it in DATA_DIR/api-token for curl and
scripts (reference_host.http.token_file); --token, or better the REFERENCE_HOST_TOKEN
environment variable (a command line is visible to other users), sets one instead, and
--no-token serves without one, with a warning. Binding an address other than loopback needs
a token given that way.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import httpx
import uvicorn

from plugin_spec.plugin_folders import expand
from reference_host.agent.call_commands import CallCommandModel
from reference_host.agent.models import ChatModel
from reference_host.builtins import SearxngProvider, builtin_tools
from reference_host.host import Host, HostConfig
from reference_host.http.access import (
    TOKEN_ENV,
    is_loopback,
    is_valid_token,
)
from reference_host.http.app import create_app
from reference_host.http.token_file import new_token, remove_token, token_path, write_token
from reference_host.mcp.config import McpConfigError
from reference_host.mcp.mount import McpMounts, mount_servers
from reference_host.options import HostOptions, build_parser
from reference_host.plugins.lifecycle import PluginError
from reference_host.plugins.validators import installed_validator


def plugin_folders(paths: Sequence[str]) -> list[Path]:
    """Each given folder, or the plugin subfolders of a folder that is not itself a plugin."""
    return expand(Path(raw).expanduser() for raw in paths)


def scripted_factory() -> Callable[[], ChatModel]:
    """The default model: `/call <tool> <json>` lines make it call tools (call_commands)."""
    return CallCommandModel


def access_problem(options: HostOptions, token: str | None) -> str | None:
    """Why the host must not start with these access settings (token: the one given), or
    None. A token the host makes is not enough beyond loopback: it changes at each start, and
    a client on another machine cannot read its file."""
    if token is not None and not is_valid_token(token):
        return "the token must be at least 16 visible ASCII characters"
    if token is None and not is_loopback(options.host):
        return (
            f"--host {options.host} is not a loopback address: set a token with --token or "
            f"{TOKEN_ENV} (every request must then send it as a bearer token)"
        )
    if options.max_body_bytes < 1:
        return "--max-body-bytes must be positive"
    return None


def root_problem(roots: Sequence[Path]) -> str | None:
    """Why an --allow-root cannot be shared, or None: a root that is missing, not a folder or
    not readable would refuse every grant later without a word, so it stops the start."""
    for root in roots:
        if not root.exists():
            return f"--allow-root {root} does not exist"
        if not root.is_dir():
            return f"--allow-root {root} is not a folder"
        if not os.access(root, os.R_OK | os.X_OK):
            return f"--allow-root {root} cannot be read by this user"
    return None


def started_line(options: HostOptions, url: str, config: HostConfig, created: bool) -> str:
    """What the host says once it listens: where to go, and where its state lives."""
    data = f"{config.data_dir}{' (created)' if created else ''}"
    roots = ", ".join(str(root) for root in config.allowed_roots) or "none (nothing can be granted)"
    return (
        f"reference host listening on {url} (dev console at /, API under /api/); "
        f"data folder {data}; database {config.database}; allowed roots: {roots}; "
        f"approval {options.approval}; model {options.model}"
    )


NO_TOKEN_WARNING = (
    "warning: --no-token: the API answers without a token, so any program on this machine "
    "(a plugin's worker with the network, an MCP server, a page on another port) can install, "
    "disable and grant"
)


def console_line(url: str, token: str | None, made: bool, config: HostConfig) -> str:
    """Where the dev console is: with a token the host made, its URL carries the token in
    the fragment (never sent to the server, so never in a log), which the page keeps."""
    if token is None:
        return f"dev console: {url} (no token)"
    if not made:
        return f"dev console: {url} (enter the token you gave in its Token field)"
    return (
        f"dev console: {url}#token={token} (API token for curl and scripts: "
        f"{token_path(config.data_dir)}, sent as Authorization: Bearer <token>)"
    )


class AnnouncingServer(uvicorn.Server):
    """uvicorn's server, which also prints the host's own start-up line once it listens
    (with the real port, which --port 0 leaves to the OS)."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[str], None]) -> None:
        super().__init__(config)
        self._announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        listeners = self.servers[0].sockets if self.servers and not self.should_exit else ()
        if listeners:  # the first one: the address --host named
            address, port = listeners[0].getsockname()[:2]
            name = f"[{address}]" if ":" in address else address
            self._announce(f"http://{name}:{port}/")


async def serve(options: HostOptions) -> int:
    token = options.given_token
    problem = access_problem(options, token) or root_problem(options.allowed_roots)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    made = token is None and not options.no_token
    if made:
        token = new_token()
    elif options.no_token:
        print(NO_TOKEN_WARNING, file=sys.stderr, flush=True)
    config = options.host_config(token)
    data_dir = config.data_dir
    created = not data_dir.exists()
    web = httpx.AsyncClient(follow_redirects=False)
    search = SearxngProvider(options.searxng_url, web) if options.searxng_url else None
    builtins = builtin_tools(search, web_fetch_allow=config.web_fetch_allow)
    mcp: McpMounts | None = None
    if options.mcp_config is not None:
        try:
            mcp = await mount_servers(
                options.mcp_config,
                data_dir,
                taken={callback.definition.name for callback in builtins},
                sandbox=config.sandbox,
                pass_env=config.worker_env,
                roots=options.mcp_roots,
                bounds=config.worker_limits,
            )
        except McpConfigError as exc:
            await web.aclose()
            print(f"error: --mcp-config: {exc}", file=sys.stderr)
            return 2
        for line in mounted_lines(mcp):
            print(line, flush=True)
    host = Host(config, validator=installed_validator(), builtins=builtins, mcp=mcp)
    closers: list[Callable[[], Awaitable[None]]] = []
    closed = False

    async def close() -> None:
        """Once: the models, the workers and the store, the web client."""
        nonlocal closed
        if not closed:
            closed = True
            for closer in [*closers, host.close, web.aclose]:
                await closer()
            if made:
                remove_token(data_dir, token)

    try:
        # The host made data_dir; the file holds the token in force, or is gone.
        if made:
            assert token is not None
            write_token(data_dir, token)
        else:
            remove_token(data_dir)
        for folder in plugin_folders(options.plugins):
            try:
                info = await host.install(folder, options.allow_downgrade)
            except PluginError as exc:
                detail = f": {'; '.join(exc.problems)}" if exc.problems else ""
                print(f"rejected {folder}: {exc.message}{detail}", file=sys.stderr, flush=True)
                continue
            tools = ", ".join(info.tools) or "no AI tools"
            print(
                f"installed {' '.join(filter(None, (info.id, info.version)))} ({tools})", flush=True
            )
        factory = model_factory(options, closers)
        app = create_app(host, factory, keep_alive=options.keep_alive, on_shutdown=[close])
        server = AnnouncingServer(
            uvicorn.Config(
                app,
                host=options.host,
                port=options.port,
                log_level=options.log_level,
                timeout_graceful_shutdown=5,
            ),
            lambda url: print(
                started_line(options, url, config, created),
                console_line(url, token, made, config),
                sep="\n",
                flush=True,
            ),
        )
        await server.serve()
    finally:
        await close()
    return 0


def mounted_lines(mcp: McpMounts) -> list[str]:
    """What the host says of each MCP server it mounted: its era and the names offered."""
    return [
        f"mounted MCP server {entry['name']} ({entry['era']}, {entry['protocolVersion']}): "
        f"{', '.join(entry['tools']) or 'no tools'}"
        for entry in mcp.listing()
    ]


def model_factory(
    options: HostOptions, closers: list[Callable[[], Awaitable[None]]]
) -> Callable[[], ChatModel]:
    """A fresh scripted model per chat, or one shared OpenAI-compatible client."""
    if options.model != "openai":
        return scripted_factory()
    from reference_host.agent.openai_model import OpenAICompatibleModel

    model = OpenAICompatibleModel(
        options.openai_base_url, options.openai_model, api_key=os.environ.get("OPENAI_API_KEY")
    )
    closers.append(model.aclose)
    return lambda: model


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        try:
            return asyncio.run(serve(HostOptions.from_args(args)))
        except KeyboardInterrupt:
            return 130
        except OSError as exc:  # e.g. the port is taken, or the data dir is not writable
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
