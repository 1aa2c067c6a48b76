"""`python -m reference_host serve ...`: the reference host's HTTP API on uvicorn.

Everything runs on one event loop: the host is created, the plugins given with --plugins are
installed (a rejected one is reported on one line and skipped), uvicorn serves the API, and
the host (its workers) is closed when the server stops.

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

import argparse
import asyncio
import math
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import httpx
import uvicorn

from plugin_spec.plugin_folders import expand
from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.agent.call_commands import CallCommandModel
from reference_host.agent.models import ChatModel
from reference_host.agent.turn_limit import DEFAULT_TURN_TIME_LIMIT
from reference_host.builtins import SearxngProvider, builtin_tools
from reference_host.builtins.fetch_allow import allow_entry
from reference_host.grants.copies import MAX_BYTES
from reference_host.grants.quota import DEFAULT_COPIES, DEFAULT_TOTAL_BYTES
from reference_host.host import DEFAULT_ALLOWED_HOSTS, DEFAULT_MAX_BODY_BYTES, Host, HostConfig
from reference_host.http.access import (
    TOKEN_ENV,
    host_entry,
    is_loopback,
    is_valid_token,
)
from reference_host.http.app import create_app
from reference_host.http.streaming import DEFAULT_KEEP_ALIVE
from reference_host.http.token_file import new_token, remove_token, token_path, write_token
from reference_host.mcp.config import McpConfigError
from reference_host.mcp.mount import McpMounts, mount_servers
from reference_host.plugins.lifecycle import PluginError
from reference_host.plugins.validators import installed_validator
from reference_host.process.bounds import DEFAULT_LIMITS, LimitSettingError, limit_setting
from reference_host.process.environment import WorkerEnvError, check_names

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reference_host",
        description="The reference host: aggregates AI-tool plugins and serves them over "
        "HTTP with an SSE chat stream.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve the HTTP API",
        description="Install the given plugins and serve the HTTP API (GET /api/plugins, "
        "GET /api/tools, POST /api/chat, ...).",
    )
    serve.add_argument(
        "--plugins",
        nargs="+",
        default=[],
        metavar="DIR",
        help="plugin folders to install (or upgrade) at start; a folder that is not a "
        "plugin (no manifest.json, no metadata/tool/) stands for its plugin subfolders",
    )
    serve.add_argument(
        "--allow-downgrade",
        action="store_true",
        help="let a --plugins folder replace an installed newer version of its plugin "
        "(refused otherwise, naming both versions)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    serve.add_argument("--port", type=int, default=8765, help="port (default %(default)s)")
    serve.add_argument(
        "--data-dir",
        type=Path,
        default=Path.home() / ".reference_host",
        metavar="PATH",
        help="where installed plugins and worker data live (default %(default)s)",
    )
    serve.add_argument(
        "--db", type=Path, metavar="PATH", help="SQLite database (default DATA_DIR/host.sqlite3)"
    )
    serve.add_argument(
        "--allow-root",
        type=Path,
        nargs="+",
        action="extend",
        default=[],
        metavar="DIR",
        help="folders whose files may be granted to plugins as FileRefs (each must exist and "
        "be readable, or the host does not start)",
    )
    serve.add_argument(
        "--approval",
        choices=[d.value for d in Decision],
        default=Decision.ASK.value,
        help="what happens to write and external tool calls (default %(default)s)",
    )
    serve.add_argument(
        "--approval-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="an unanswered approval counts as denied after this (default %(default)s)",
    )
    serve.add_argument(
        "--turn-time-limit",
        type=positive_seconds,
        default=DEFAULT_TURN_TIME_LIMIT,
        metavar="SECONDS",
        help="a chat turn (model answers, approvals and tool calls together) ends with an "
        "error after this; its unfinished calls are cancelled (default %(default)s)",
    )
    serve.add_argument(
        "--model",
        choices=["scripted", "openai"],
        default="scripted",
        help="scripted calls the tools a '/call <tool> <json arguments>' message names and "
        "answers with their results; openai streams from an OpenAI-compatible server "
        "(default %(default)s)",
    )
    serve.add_argument(
        "--openai-base-url",
        default=DEFAULT_OPENAI_BASE_URL,
        metavar="URL",
        help="server root; requests go to URL/v1/chat/completions (default %(default)s); "
        "the key is read from OPENAI_API_KEY",
    )
    serve.add_argument(
        "--openai-model", default=DEFAULT_OPENAI_MODEL, metavar="NAME", help="(default %(default)s)"
    )
    serve.add_argument(
        "--searxng-url",
        metavar="URL",
        help="SearXNG instance for the built-in web_search (without it web_search answers "
        "that no search provider is configured)",
    )
    serve.add_argument(
        "--web-fetch-allow",
        action="append",
        default=[],
        type=web_fetch_allow_entry,
        metavar="HOST[:PORT]",
        help="a host the built-in web_fetch may reach though it is not public, e.g. "
        "intranet.example:8080 or localhost:8080 (repeatable); matched by the name the URL "
        "gives, any port without :PORT. Otherwise web_fetch reaches public addresses only",
    )
    serve.add_argument(
        "--erp-base-url",
        default="http://127.0.0.1:8801",
        metavar="URL",
        help="where ERP tools' endpoints live (default %(default)s: "
        "python sample_plugins/erp_backends.py)",
    )
    serve.add_argument(
        "--actors",
        type=Path,
        metavar="FILE",
        help='JSON file of ERP actors: {"actors": {"alice": {"tenants": [...], '
        '"permissions": [...]}}}',
    )
    serve.add_argument(
        "--keep-alive",
        type=float,
        default=DEFAULT_KEEP_ALIVE,
        metavar="SECONDS",
        help="send ': keep-alive' after this many seconds without an event (default %(default)s)",
    )
    serve.add_argument(
        "--worker-env",
        action="append",
        default=[],
        type=worker_env_name,
        metavar="NAME",
        help="pass this variable of the host's environment to plugin workers (repeatable; "
        "NAME* for a prefix); otherwise a worker sees only PATH, the locale, TZ, JAVA_HOME "
        "and the FENGYU_* variables, never OPENAI_API_KEY",
    )
    serve.add_argument(
        "--worker-limit",
        action="append",
        default=[],
        type=worker_limit_setting,
        metavar="NAME=VALUE",
        help="a bound of every plugin worker and MCP server, in place of its default "
        f"(repeatable): processes (default {DEFAULT_LIMITS.processes}; a manifest's "
        f"maxProcesses wins), open-files (default {DEFAULT_LIMITS.open_files}, per process) "
        "or data (bytes in its data folder, K/M/G for KiB/MiB/GiB; default 1G)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host header value to answer besides localhost, 127.0.0.1 and [::1] (any port; "
        "repeatable)",
    )
    token = serve.add_mutually_exclusive_group()
    token.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"require 'Authorization: Bearer TOKEN' on every request (default: ${TOKEN_ENV}, "
        "else a fresh token at each start, printed in the console's URL and kept in "
        "DATA_DIR/api-token); required when --host is not a loopback address",
    )
    token.add_argument(
        "--no-token",
        action="store_true",
        help="serve without a token: any program on this machine (a plugin's worker, an MCP "
        "server, a page on another port) can then drive the API; loopback only",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="BYTES",
        help="a larger request body gets 413 (default %(default)s)",
    )
    serve.add_argument(
        "--max-read-copies",
        type=positive_int,
        default=DEFAULT_COPIES,
        metavar="N",
        help="read copies of granted files the host keeps at once, over every conversation; "
        "a grant past it is refused with 409 until one is revoked (default %(default)s)",
    )
    serve.add_argument(
        "--max-read-copy-bytes",
        type=positive_int,
        default=DEFAULT_TOTAL_BYTES,
        metavar="BYTES",
        help="bytes those read copies hold together (default %(default)s: 2 GiB)",
    )
    serve.add_argument(
        "--max-copy-bytes",
        type=positive_int,
        default=MAX_BYTES,
        metavar="BYTES",
        help="bytes of one copy of a granted file or folder, and of one commit of a writable "
        "folder (default %(default)s: 1 GiB)",
    )
    serve.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help='mount the MCP stdio servers of this mcpServers file ({"mcpServers": {"NAME": '
        '{"command", "args", "env", "cwd"}}}, as Claude Desktop, Cursor and VS Code write it) '
        "as plugins; each runs in the workers' sandbox, in the file's folder unless cwd says "
        "otherwise, and its tools are offered as NAME__TOOL",
    )
    serve.add_argument(
        "--mcp-root",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="a folder every MCP server may write in its sandbox (repeatable), besides the "
        "folders its arguments name and its entry's roots",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level (default %(default)s)",
    )
    return parser


def positive_seconds(text: str) -> float:
    """argparse type of a duration: a finite number of seconds above zero."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive, finite number of seconds")
    return seconds


def positive_int(text: str) -> int:
    """argparse type of a count or a byte size: a whole number above zero."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not positive")
    return value


def worker_env_name(name: str) -> str:
    """argparse type of --worker-env: a variable name or NAME* (environment.py)."""
    try:
        return check_names([name])[0]
    except WorkerEnvError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def worker_limit_setting(text: str) -> tuple[str, int]:
    """argparse type of --worker-limit: NAME=VALUE (bounds.py)."""
    try:
        return limit_setting(text)
    except LimitSettingError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def web_fetch_allow_entry(text: str) -> str:
    """argparse type of --web-fetch-allow: HOST or HOST:PORT (fetch_allow.py)."""
    try:
        allow_entry(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip()


def plugin_folders(paths: Sequence[str]) -> list[Path]:
    """Each given folder, or the plugin subfolders of a folder that is not itself a plugin."""
    return expand(Path(raw).expanduser() for raw in paths)


def scripted_factory() -> Callable[[], ChatModel]:
    """The default model: `/call <tool> <json>` lines make it call tools (call_commands)."""
    return CallCommandModel


def given_token(args: argparse.Namespace) -> str | None:
    """The token --token or the environment gives (--no-token ignores the environment)."""
    if args.no_token:
        return None
    return args.token or os.environ.get(TOKEN_ENV) or None


def access_problem(args: argparse.Namespace, token: str | None) -> str | None:
    """Why the host must not start with these access settings (token: the one given), or
    None. A token the host makes is not enough beyond loopback: it changes at each start, and
    a client on another machine cannot read its file."""
    if token is not None and not is_valid_token(token):
        return "the token must be at least 16 visible ASCII characters"
    if token is None and not is_loopback(args.host):
        return (
            f"--host {args.host} is not a loopback address: set a token with --token or "
            f"{TOKEN_ENV} (every request must then send it as a bearer token)"
        )
    if args.max_body_bytes < 1:
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


def started_line(args: argparse.Namespace, url: str, config: HostConfig, created: bool) -> str:
    """What the host says once it listens: where to go, and where its state lives."""
    data = f"{config.data_dir}{' (created)' if created else ''}"
    roots = ", ".join(str(root) for root in config.allowed_roots) or "none (nothing can be granted)"
    return (
        f"reference host listening on {url} (dev console at /, API under /api/); "
        f"data folder {data}; database {config.database}; allowed roots: {roots}; "
        f"approval {args.approval}; model {args.model}"
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


def allowed_hosts(args: argparse.Namespace) -> tuple[str, ...]:
    """The loopback names, the --allowed-host values, and a specific bind address."""
    hosts = [*DEFAULT_ALLOWED_HOSTS, *args.allowed_host]
    if args.host not in ("0.0.0.0", "::", ""):
        hosts.append(args.host)
    return tuple(dict.fromkeys(host_entry(h) for h in hosts))


async def serve(args: argparse.Namespace) -> int:
    token = given_token(args)
    problem = access_problem(args, token)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    roots = [root.expanduser() for root in args.allow_root]
    problem = root_problem(roots)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    made = token is None and not args.no_token
    if made:
        token = new_token()
    elif args.no_token:
        print(NO_TOKEN_WARNING, file=sys.stderr, flush=True)
    decision = Decision(args.approval)
    data_dir = args.data_dir.expanduser()
    created = not data_dir.exists()
    config = HostConfig(
        data_dir=data_dir,
        db_path=args.db.expanduser() if args.db else None,
        approval=ApprovalPolicy(decision, decision, args.approval_timeout),
        allowed_roots=tuple(roots),
        erp_base_url=args.erp_base_url,
        actors_file=args.actors.expanduser() if args.actors else None,
        worker_env=tuple(args.worker_env),
        worker_limits=DEFAULT_LIMITS.with_settings(args.worker_limit),
        allowed_hosts=allowed_hosts(args),
        token=token,
        max_body_bytes=args.max_body_bytes,
        max_read_copies=args.max_read_copies,
        max_read_copy_bytes=args.max_read_copy_bytes,
        max_copy_bytes=args.max_copy_bytes,
        turn_time_limit=args.turn_time_limit,
        web_fetch_allow=tuple(args.web_fetch_allow),
    )
    web = httpx.AsyncClient(follow_redirects=False)
    search = SearxngProvider(args.searxng_url, web) if args.searxng_url else None
    builtins = builtin_tools(search, web_fetch_allow=config.web_fetch_allow)
    mcp: McpMounts | None = None
    if args.mcp_config is not None:
        try:
            mcp = await mount_servers(
                args.mcp_config.expanduser(),
                data_dir,
                taken={callback.definition.name for callback in builtins},
                sandbox=config.sandbox,
                pass_env=config.worker_env,
                roots=tuple(r.expanduser().resolve() for r in args.mcp_root),
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
        for folder in plugin_folders(args.plugins):
            try:
                info = await host.install(folder, args.allow_downgrade)
            except PluginError as exc:
                detail = f": {'; '.join(exc.problems)}" if exc.problems else ""
                print(f"rejected {folder}: {exc.message}{detail}", file=sys.stderr, flush=True)
                continue
            tools = ", ".join(info.tools) or "no AI tools"
            print(
                f"installed {' '.join(filter(None, (info.id, info.version)))} ({tools})", flush=True
            )
        factory = model_factory(args, closers)
        app = create_app(host, factory, keep_alive=args.keep_alive, on_shutdown=[close])
        server = AnnouncingServer(
            uvicorn.Config(
                app,
                host=args.host,
                port=args.port,
                log_level=args.log_level,
                timeout_graceful_shutdown=5,
            ),
            lambda url: print(
                started_line(args, url, config, created),
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
    args: argparse.Namespace, closers: list[Callable[[], Awaitable[None]]]
) -> Callable[[], ChatModel]:
    """A fresh scripted model per chat, or one shared OpenAI-compatible client."""
    if args.model != "openai":
        return scripted_factory()
    from reference_host.agent.openai_model import OpenAICompatibleModel

    model = OpenAICompatibleModel(
        args.openai_base_url, args.openai_model, api_key=os.environ.get("OPENAI_API_KEY")
    )
    closers.append(model.aclose)
    return lambda: model


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        try:
            return asyncio.run(serve(args))
        except KeyboardInterrupt:
            return 130
        except OSError as exc:  # e.g. the port is taken, or the data dir is not writable
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
