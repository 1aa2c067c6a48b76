"""The options of `python -m reference_host serve`, declared once.

Each field of HostOptions carries its flag, help text, default and, where it has one, the
environment variable read in its place. build_parser() declares the flags from them,
HostOptions.from_args() reads a parse back as typed values, and host_config() makes the
HostConfig: a flag's `config` names the HostConfig field it fills, copied as is, so no value
is copied by hand. tests/reference_host/test_options.py checks the declarations against
HostConfig and against the options section of docs/guide/reference-host.md, as the kit's
options are checked against theirs (conformance/options.py).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from reference_host.agent.approval import ApprovalPolicy, Decision
from reference_host.builtins.fetch_allow import allow_entry
from reference_host.host import DEFAULT_ALLOWED_HOSTS, HostConfig
from reference_host.http.access import TOKEN_ENV, host_entry
from reference_host.http.streaming import DEFAULT_KEEP_ALIVE
from reference_host.process.bounds import (
    DEFAULT_LIMITS,
    LimitSettingError,
    WorkerLimits,
    limit_setting,
)
from reference_host.process.environment import WorkerEnvError, check_names

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_POLICY = ApprovalPolicy()
LIST_ACTIONS = ("append", "extend")
T = TypeVar("T")


@dataclass(frozen=True)
class Flag:
    """How one option is spelled and read: action, nargs, type and choices are argparse's;
    env is the variable read when the flag is not given, group the mutually exclusive group
    it belongs to, config the HostConfig field its value is copied to, and read the
    conversion of what argparse gives (None, the flag not given, is left to the default)."""

    name: str
    help: str
    metavar: str | None = None
    action: str = "store"
    nargs: str | None = None
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    env: str | None = None
    group: str | None = None
    config: str | None = None
    read: Callable[[Any], Any] | None = None

    @property
    def dest(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")

    @property
    def listed(self) -> bool:
        """argparse gives a list: the flag repeats or takes several values."""
        return self.action in LIST_ACTIONS or self.nargs is not None

    @property
    def usage(self) -> str:
        """The flag as `serve --help` spells it, and as the docs page's heading names it."""
        if self.action == "store_true":
            return self.name
        word = self.metavar or (
            "{" + ",".join(self.choices) + "}" if self.choices else self.dest.upper()
        )
        return f"{self.name} {word} [{word} ...]" if self.nargs == "+" else f"{self.name} {word}"

    def arguments(self, default: Any) -> dict[str, Any]:
        """The keyword arguments of argparse's add_argument for this flag."""
        if self.action == "store_true":
            return {"action": "store_true", "help": self.help}
        given = {
            "action": self.action,
            "nargs": self.nargs,
            "type": self.type,
            "choices": self.choices,
            "metavar": self.metavar,
        }
        kwargs = {key: value for key, value in given.items() if value is not None}
        return {**kwargs, "default": [] if self.listed else default, "help": self.help}


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


def _option(default: T, flag: Flag) -> T:
    return field(default=default, metadata={"flag": flag})


def _path(raw: Path) -> Path:
    return raw.expanduser()


def _paths(raw: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(path.expanduser() for path in raw)


def _resolved(raw: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(path.expanduser().resolve() for path in raw)


def _limits(raw: Iterable[tuple[str, int]]) -> WorkerLimits:
    return DEFAULT_LIMITS.with_settings(raw)


@dataclass(frozen=True)
class HostOptions:
    """Everything `serve` is told on the command line (or, for the token, the environment)."""

    plugins: tuple[str, ...] = _option(
        (),
        Flag(
            "--plugins",
            "plugin folders to install (or upgrade) at start; a folder that is not a "
            "plugin (no manifest.json, no metadata/tool/) stands for its plugin subfolders",
            "DIR",
            nargs="+",
        ),
    )
    allow_downgrade: bool = _option(
        False,
        Flag(
            "--allow-downgrade",
            "let a --plugins folder replace an installed newer version of its plugin "
            "(refused otherwise, naming both versions)",
            action="store_true",
        ),
    )
    host: str = _option(
        "127.0.0.1",
        Flag("--host", "address to bind (default %(default)s)"),
    )
    port: int = _option(8765, Flag("--port", "port (default %(default)s)", type=int))
    data_dir: Path = _option(
        Path.home() / ".reference_host",
        Flag(
            "--data-dir",
            "where installed plugins and worker data live (default %(default)s)",
            "PATH",
            type=Path,
            config="data_dir",
            read=_path,
        ),
    )
    db_path: Path | None = _option(
        HostConfig.db_path,
        Flag(
            "--db",
            "SQLite database (default DATA_DIR/host.sqlite3)",
            "PATH",
            type=Path,
            config="db_path",
            read=_path,
        ),
    )
    allowed_roots: tuple[Path, ...] = _option(
        HostConfig.allowed_roots,
        Flag(
            "--allow-root",
            "folders whose files may be granted to plugins as FileRefs (each must exist and "
            "be readable, or the host does not start)",
            "DIR",
            action="extend",
            nargs="+",
            type=Path,
            config="allowed_roots",
            read=_paths,
        ),
    )
    approval: str = _option(
        DEFAULT_POLICY.write.value,
        Flag(
            "--approval",
            "what happens to write and external tool calls (default %(default)s)",
            choices=tuple(d.value for d in Decision),
        ),
    )
    approval_timeout: float = _option(
        DEFAULT_POLICY.timeout,
        Flag(
            "--approval-timeout",
            "an unanswered approval counts as denied after this (default %(default)s)",
            "SECONDS",
            type=float,
        ),
    )
    turn_time_limit: float = _option(
        HostConfig.turn_time_limit,
        Flag(
            "--turn-time-limit",
            "a chat turn (model answers, approvals and tool calls together) ends with an "
            "error after this; its unfinished calls are cancelled (default %(default)s)",
            "SECONDS",
            type=positive_seconds,
            config="turn_time_limit",
        ),
    )
    model: str = _option(
        "scripted",
        Flag(
            "--model",
            "scripted calls the tools a '/call <tool> <json arguments>' message names and "
            "answers with their results; openai streams from an OpenAI-compatible server "
            "(default %(default)s)",
            choices=("scripted", "openai"),
        ),
    )
    openai_base_url: str = _option(
        DEFAULT_OPENAI_BASE_URL,
        Flag(
            "--openai-base-url",
            "server root; requests go to URL/v1/chat/completions (default %(default)s); "
            "the key is read from OPENAI_API_KEY",
            "URL",
        ),
    )
    openai_model: str = _option(
        DEFAULT_OPENAI_MODEL,
        Flag("--openai-model", "(default %(default)s)", "NAME"),
    )
    searxng_url: str | None = _option(
        None,
        Flag(
            "--searxng-url",
            "SearXNG instance for the built-in web_search (without it web_search answers "
            "that no search provider is configured)",
            "URL",
        ),
    )
    web_fetch_allow: tuple[str, ...] = _option(
        HostConfig.web_fetch_allow,
        Flag(
            "--web-fetch-allow",
            "a host the built-in web_fetch may reach though it is not public, e.g. "
            "intranet.example:8080 or localhost:8080 (repeatable); matched by the name the URL "
            "gives, any port without :PORT. Otherwise web_fetch reaches public addresses only",
            "HOST[:PORT]",
            action="append",
            type=web_fetch_allow_entry,
            config="web_fetch_allow",
        ),
    )
    erp_base_url: str = _option(
        HostConfig.erp_base_url,
        Flag(
            "--erp-base-url",
            "where ERP tools' endpoints live (default %(default)s: "
            "python sample_plugins/erp_backends.py)",
            "URL",
            config="erp_base_url",
        ),
    )
    actors_file: Path | None = _option(
        HostConfig.actors_file,
        Flag(
            "--actors",
            'JSON file of ERP actors: {"actors": {"alice": {"tenants": [...], '
            '"permissions": [...]}}}',
            "FILE",
            type=Path,
            config="actors_file",
            read=_path,
        ),
    )
    keep_alive: float = _option(
        DEFAULT_KEEP_ALIVE,
        Flag(
            "--keep-alive",
            "send ': keep-alive' after this many seconds without an event (default %(default)s)",
            "SECONDS",
            type=float,
        ),
    )
    worker_env: tuple[str, ...] = _option(
        HostConfig.worker_env,
        Flag(
            "--worker-env",
            "pass this variable of the host's environment to plugin workers (repeatable; "
            "NAME* for a prefix); otherwise a worker sees only PATH, the locale, TZ, JAVA_HOME "
            "and the FENGYU_* variables, never OPENAI_API_KEY",
            "NAME",
            action="append",
            type=worker_env_name,
            config="worker_env",
        ),
    )
    worker_limits: WorkerLimits = _option(
        HostConfig.worker_limits,
        Flag(
            "--worker-limit",
            "a bound of every plugin worker and MCP server, in place of its default "
            f"(repeatable): processes (default {DEFAULT_LIMITS.processes}; a manifest's "
            f"maxProcesses wins), open-files (default {DEFAULT_LIMITS.open_files}, per "
            "process) or data (bytes in its data folder, K/M/G for KiB/MiB/GiB; default 1G)",
            "NAME=VALUE",
            action="append",
            type=worker_limit_setting,
            config="worker_limits",
            read=_limits,
        ),
    )
    allowed_host: tuple[str, ...] = _option(
        (),
        Flag(
            "--allowed-host",
            "a Host header value to answer besides localhost, 127.0.0.1 and [::1] (any port; "
            "repeatable)",
            "NAME",
            action="append",
        ),
    )
    token: str | None = _option(
        None,
        Flag(
            "--token",
            f"require 'Authorization: Bearer TOKEN' on every request (default: ${TOKEN_ENV}, "
            "else a fresh token at each start, printed in the console's URL and kept in "
            "DATA_DIR/api-token); required when --host is not a loopback address",
            "TOKEN",
            env=TOKEN_ENV,
            group="token",
        ),
    )
    no_token: bool = _option(
        False,
        Flag(
            "--no-token",
            "serve without a token: any program on this machine (a plugin's worker, an MCP "
            "server, a page on another port) can then drive the API; loopback only",
            action="store_true",
            group="token",
        ),
    )
    max_body_bytes: int = _option(
        HostConfig.max_body_bytes,
        Flag(
            "--max-body-bytes",
            "a larger request body gets 413 (default %(default)s)",
            "BYTES",
            type=int,
            config="max_body_bytes",
        ),
    )
    max_read_copies: int = _option(
        HostConfig.max_read_copies,
        Flag(
            "--max-read-copies",
            "read copies of granted files the host keeps at once, over every conversation; "
            "a grant past it is refused with 409 until one is revoked (default %(default)s)",
            "N",
            type=positive_int,
            config="max_read_copies",
        ),
    )
    max_read_copy_bytes: int = _option(
        HostConfig.max_read_copy_bytes,
        Flag(
            "--max-read-copy-bytes",
            "bytes those read copies hold together (default %(default)s: 2 GiB)",
            "BYTES",
            type=positive_int,
            config="max_read_copy_bytes",
        ),
    )
    max_copy_bytes: int = _option(
        HostConfig.max_copy_bytes,
        Flag(
            "--max-copy-bytes",
            "bytes of one copy of a granted file or folder, and of one commit of a writable "
            "folder (default %(default)s: 1 GiB)",
            "BYTES",
            type=positive_int,
            config="max_copy_bytes",
        ),
    )
    mcp_config: Path | None = _option(
        None,
        Flag(
            "--mcp-config",
            'mount the MCP stdio servers of this mcpServers file ({"mcpServers": {"NAME": '
            '{"command", "args", "env", "cwd"}}}, as Claude Desktop, Cursor and VS Code '
            "write it) as plugins; each runs in the workers' sandbox, in the file's folder "
            "unless cwd says otherwise, and its tools are offered as NAME__TOOL",
            "FILE",
            type=Path,
            read=_path,
        ),
    )
    mcp_roots: tuple[Path, ...] = _option(
        (),
        Flag(
            "--mcp-root",
            "a folder every MCP server may write in its sandbox (repeatable), besides the "
            "folders its arguments name and its entry's roots",
            "DIR",
            action="append",
            type=Path,
            read=_resolved,
        ),
    )
    log_level: str = _option(
        "info",
        Flag(
            "--log-level",
            "uvicorn's log level (default %(default)s)",
            choices=("critical", "error", "warning", "info", "debug"),
        ),
    )

    @staticmethod
    def flags() -> Iterator[tuple[str, Flag]]:
        """Each option's field name and flag, in the order of `serve --help`."""
        for f in fields(HostOptions):
            yield f.name, f.metadata["flag"]

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, environ: Mapping[str, str] | None = None
    ) -> HostOptions:
        """The options of a parse of build_parser(): a flag not given falls back to its
        environment variable, then to its default."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, flag in cls.flags():
            raw = getattr(args, flag.dest)
            if raw in (None, "") and flag.env is not None:
                raw = environ.get(flag.env) or None
            if raw is None:
                continue
            if flag.read is not None:
                values[name] = flag.read(raw)
            else:
                values[name] = tuple(raw) if flag.listed else raw
        return cls(**values)

    @property
    def given_token(self) -> str | None:
        """The token --token or the environment gives (--no-token ignores the environment)."""
        return None if self.no_token else self.token

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """--approval for write and external calls alike, with --approval-timeout."""
        decision = Decision(self.approval)
        return ApprovalPolicy(decision, decision, self.approval_timeout)

    @property
    def allowed_hosts(self) -> tuple[str, ...]:
        """The loopback names, the --allowed-host values, and a specific bind address."""
        hosts = [*DEFAULT_ALLOWED_HOSTS, *self.allowed_host]
        if self.host not in ("0.0.0.0", "::", ""):
            hosts.append(self.host)
        return tuple(dict.fromkeys(host_entry(h) for h in hosts))

    def host_config(self, token: str | None) -> HostConfig:
        """The host's settings: each flag's value copied to the field its `config` names,
        and the settings made of several (the approval policy, the allowed hosts, the
        token in force, given or made)."""
        copied = {flag.config: getattr(self, name) for name, flag in self.flags() if flag.config}
        return HostConfig(
            **copied,
            approval=self.approval_policy,
            allowed_hosts=self.allowed_hosts,
            token=token,
        )


def build_parser() -> argparse.ArgumentParser:
    """The command line: `serve` takes the flags of HostOptions, in their order."""
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
    groups: dict[str, Any] = {}
    for f in fields(HostOptions):
        flag: Flag = f.metadata["flag"]
        target = serve
        if flag.group is not None:
            if flag.group not in groups:
                groups[flag.group] = serve.add_mutually_exclusive_group()
            target = groups[flag.group]
        target.add_argument(flag.name, **flag.arguments(f.default))
    return parser
