"""The kit's command-line options, declared once.

Each field of KitOptions carries its flag, help text, default and the suites whose verdicts
depend on it. The pytest plugin declares the flags from them, a run reads them back with
from_config(), and a failing item's rerun line writes them out again with to_argv(): one
declaration serves all three, and the options page of the docs is checked against it.

This module is imported by every pytest run where the kit is installed, so it needs the
standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from plugin_spec.providers import PROVIDERS

if TYPE_CHECKING:  # imported where used: this module is every pytest run's
    import pytest

    from reference_host.process.bounds import WorkerLimits

# What each suite checks: the markers `-m` selects by, with their help text.
SUITES = {
    "manifest": "a static check of the plugin's files",
    "worker": "a protocol check of the plugin's running worker",
    "tools": "a property check of one tool against the running worker",
    "host": "the plugin installed into the reference host and driven by a scripted model",
    "endpoints": "an ERP tool's endpoint called with generated inputs (--plugin-base-url)",
    "upgrade": "what an upgrade does to saved workflow canvases (--previous-manifest)",
    "lifecycle": "an MCP server's session from launch to exit, on raw pipes",
    "listing": "an MCP server's tools/list: shapes, names, schemas, stability",
}
ALL_SUITES = tuple(SUITES)
WORKER_SUITES = ("worker", "tools", "host")
MCP_SUITES = ("lifecycle", "listing", "tools")
SEARCH_SUITES = ("tools", "endpoints")
DEFAULT_EXAMPLES = 25


class OptionError(ValueError):
    """An option value the kit cannot run with; pytest shows it as a usage error."""


# The kinds of ini value pytest's Parser.addini reads.
IniType = Literal["string", "paths", "pathlist", "args", "linelist", "bool"]
T = TypeVar("T")


class Config(Protocol):
    """What from_config reads of a pytest.Config (kept structural: no pytest import here)."""

    @property
    def option(self) -> object: ...

    def getini(self, name: str) -> object: ...


@dataclass(frozen=True)
class Flag:
    """How one option is spelled and read: name is the flag, suites the suites whose items
    it changes (a rerun of such an item repeats it), ini the pytest ini key that gives its
    default, read converts what argparse and the ini file give."""

    name: str
    help: str
    metavar: str | None = None
    suites: tuple[str, ...] = ()
    ini: str | None = None
    ini_type: IniType | None = None
    repeat: bool = False
    switch: bool = False
    path: bool = False  # relative to the folder pytest ran in; a rerun writes it absolute
    joined: bool = False  # written `--flag=value`: the value may start like a flag
    always: bool = False  # written even at its default, which an ini file may have changed
    type: Callable[[str], object] | None = None  # argparse's conversion of the flag's value
    read: Callable[[Any], object] | None = None  # the conversion of the flag's or ini's value

    @property
    def dest(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")


def _option(default: T, flag: Flag) -> T:
    return field(default=default, metadata={"flag": flag})


def _shard(raw: str | None) -> str | None:
    """--shard checked when the run starts: a usage error, not a failed item (imported
    here: a pytest run without the kit's options imports nothing but this module)."""
    from conformance.shards import ShardError, parse_shard

    if raw is not None:
        try:
            parse_shard(raw)
        except ShardError as exc:
            raise OptionError(str(exc)) from None
    return raw


def _providers(raw: str | None) -> frozenset[str]:
    names = [n.strip().lower() for n in (raw or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise OptionError(
            f"--conformance-provider: unknown provider {', '.join(unknown)} "
            f"(known: {', '.join(PROVIDERS)})"
        )
    return frozenset(names)


def _examples(raw: object) -> int:
    if raw in (None, ""):
        return DEFAULT_EXAMPLES
    try:
        value = int(str(raw))
    except ValueError:
        raise OptionError(f"--conformance-examples: {raw!r} is not a whole number") from None
    if value < 1:
        raise OptionError(f"--conformance-examples: {value} is not at least 1")
    return value


def _worker_limits(raw: Iterable[str] | None) -> tuple[str, ...]:
    from reference_host.process.bounds import LimitSettingError, configured

    settings = tuple(raw or ())
    try:
        configured(settings)
    except LimitSettingError as exc:
        raise OptionError(str(exc)) from None
    return settings


MAX_DEADLINE_SCALE = 100.0  # a typo (1000) must not make a hang wait for ever


def _deadline_scale(raw: object) -> float:
    if raw in (None, ""):
        return 1.0
    try:
        value = float(str(raw))
    except ValueError:
        raise OptionError(f"--conformance-deadline-scale: {raw!r} is not a number") from None
    if not 0 < value <= MAX_DEADLINE_SCALE:
        raise OptionError(
            f"--conformance-deadline-scale: {value:g} is not a number above 0 and at most "
            f"{MAX_DEADLINE_SCALE:g} (a run's waits stay bounded)"
        )
    return value


def _derandomize(raw: object) -> bool:
    """On, by the flag or because CI is set: a CI run fails the same way when run again."""
    return bool(raw) or bool(os.environ.get("CI"))


@dataclass(frozen=True)
class KitOptions:
    """Everything a kit run is told on the command line or in the ini file."""

    plugin_dirs: tuple[str, ...] = _option(
        (),
        Flag(
            "--plugin-dir",
            "check the plugin in DIR (repeatable); the repo's own tests are skipped",
            "DIR",
            repeat=True,
        ),
    )
    mcp_commands: tuple[str, ...] = _option(
        (),
        Flag(
            "--mcp-command",
            "check the MCP stdio server started by CMD, run in the current folder (repeatable)",
            "CMD",
            repeat=True,
            joined=True,
        ),
    )
    mcp_configs: tuple[str, ...] = _option(
        (),
        Flag(
            "--mcp-config",
            "check the stdio servers of an mcpServers JSON file (Claude Desktop, Cursor, "
            "VS Code), each run in the file's folder (repeatable)",
            "FILE",
            repeat=True,
        ),
    )
    mcp_roots: tuple[str, ...] = _option(
        (),
        Flag(
            "--mcp-root",
            "a folder every MCP server may write in its sandbox, as the host's --mcp-root "
            "(repeatable), besides the folders its arguments name and its entry's roots",
            "DIR",
            suites=MCP_SUITES,
            repeat=True,
            path=True,
        ),
    )
    mcp_servers: tuple[str, ...] = _option(
        (),
        Flag(
            "--mcp-server",
            "check only this server of the --mcp-config file (repeatable)",
            "NAME",
            repeat=True,
        ),
    )
    strict: bool = _option(
        False,
        Flag(
            "--conformance-strict",
            "fail on SHOULD findings too, not only MUST",
            suites=ALL_SUITES,
            switch=True,
        ),
    )
    allow_unobserved: bool = _option(
        False,
        Flag(
            "--conformance-allow-unobserved",
            "with --conformance-strict, pass a run whose effect checks could not run because "
            "this machine lacks bubblewrap or strace (they fail it otherwise)",
            suites=ALL_SUITES,
            switch=True,
        ),
    )
    baseline: str | None = _option(
        None,
        Flag(
            "--conformance-baseline",
            "JSON file of expected failures; a listed failure that passes fails",
            "FILE",
            suites=ALL_SUITES,
            path=True,
        ),
    )
    providers: frozenset[str] = _option(
        frozenset(),
        Flag(
            "--conformance-provider",
            "fail when one of these model providers would refuse a tool: "
            f"a comma-separated list of {', '.join(PROVIDERS)} (their requirements become MUST)",
            "NAMES",
            suites=ALL_SUITES,
            read=_providers,
        ),
    )
    report: str | None = _option(
        None,
        Flag(
            "--conformance-report",
            "write PATH.json (one record per check), PATH.md (summary) and PATH.html (a page "
            "for people, self-contained)",
            "PATH",
        ),
    )
    sarif: str | None = _option(
        None,
        Flag(
            "--conformance-sarif",
            "write the findings as SARIF 2.1.0 to PATH (GitHub code scanning shows them on "
            "the pull request's lines)",
            "PATH",
        ),
    )
    trust_settings: bool = _option(
        False,
        Flag(
            "--conformance-trust-settings",
            "run with pytest settings (addopts, pythonpath, ...) read from a folder the run "
            "checks: they are yours (without it such settings are a usage error)",
            switch=True,
        ),
    )
    list_requirements: bool = _option(
        False, Flag("--list-requirements", "print the requirement catalog and exit", switch=True)
    )
    explain: str | None = _option(
        None,
        Flag(
            "--conformance-explain",
            "print one requirement (level, reason, examples, fix) and exit",
            "ID",
        ),
    )
    worker_cmd: str | None = _option(
        None,
        Flag(
            "--worker-cmd",
            "start the worker with CMD (run in the plugin folder) instead of backend/worker",
            "CMD",
            suites=WORKER_SUITES,
            ini="conformance_worker_cmd",
            joined=True,
        ),
    )
    worker_env: tuple[str, ...] = _option(
        (),
        Flag(
            "--worker-env",
            "pass this variable of the kit's environment to the worker or MCP server, as a "
            "host's --worker-env would (repeatable; NAME* for a prefix); otherwise it sees only "
            "PATH, the locale, TZ, JAVA_HOME and what the spec's worker environment sets",
            "NAME",
            suites=(*WORKER_SUITES, "lifecycle", "listing"),
            ini="conformance_worker_env",
            ini_type="linelist",
            repeat=True,
        ),
    )
    worker_limits: tuple[str, ...] = _option(
        (),
        Flag(
            "--worker-limit",
            "a bound of the worker or MCP server in place of the host's default, as a host's "
            "--worker-limit would (repeatable): processes=N, open-files=N or data=BYTES (K/M/G)",
            "NAME=VALUE",
            suites=(*WORKER_SUITES, "lifecycle", "listing"),
            repeat=True,
            read=_worker_limits,
        ),
    )
    examples: int = _option(
        DEFAULT_EXAMPLES,
        Flag(
            "--conformance-examples",
            f"hypothesis examples per tool property (default {DEFAULT_EXAMPLES})",
            "N",
            suites=SEARCH_SUITES,
            ini="conformance_examples",
            always=True,
            type=int,
            read=_examples,
        ),
    )
    examples_file: str | None = _option(
        None,
        Flag(
            "--examples-file",
            "JSON file of argument sets known to work, by tool name (and `setup`, calls to make "
            "first): the tool searches of FengYu plugins and MCP servers start from them",
            "PATH",
            suites=("worker", "tools", "lifecycle"),
            path=True,
        ),
    )
    seed: int | None = _option(
        None, Flag("--conformance-seed", "hypothesis seed", "N", suites=SEARCH_SUITES, type=int)
    )
    shard: str | None = _option(
        None,
        Flag(
            "--shard",
            "check only the targets of shard I of N (from 1), chosen by a hash of each "
            "target's id: the same slice whatever order or other targets there are",
            "I/N",
            read=_shard,
        ),
    )
    shards: int | None = _option(
        None,
        Flag(
            "--shards",
            "check only the targets of shard JOB_COMPLETION_INDEX+1 of N (a Kubernetes "
            "Indexed Job's index, from 0)",
            "N",
            type=int,
        ),
    )
    derandomize: bool = _option(
        False,
        Flag(
            "--conformance-derandomize",
            "derive examples from the test instead of at random (the default when CI is set)",
            suites=SEARCH_SUITES,
            switch=True,
            read=_derandomize,
        ),
    )
    deadline_scale: float = _option(
        1.0,
        Flag(
            "--conformance-deadline-scale",
            "multiply every deadline the kit waits on a plugin (default 1; "
            "docs/guide/options.md#deadlines lists them)",
            "FACTOR",
            suites=(*WORKER_SUITES, "endpoints", "lifecycle", "listing"),
            read=_deadline_scale,
        ),
    )
    base_url: str | None = _option(
        None,
        Flag(
            "--plugin-base-url",
            "ERP plugins: call each tool's endpoint under URL with generated inputs",
            "URL",
            suites=("endpoints",),
        ),
    )
    tenant: str = _option(
        "conformance",
        Flag("--erp-tenant", "X-Tenant-Id the kit sends", "ID", suites=("endpoints",)),
    )
    actor: str = _option(
        "conformance-kit",
        Flag("--erp-actor", "X-Actor the kit sends", "ID", suites=("endpoints",)),
    )
    previous: str | None = _option(
        None,
        Flag(
            "--previous-manifest",
            "the previous version (manifest.json, plugin folder, or git:REF of this one): "
            "report what the upgrade does to saved workflow canvases",
            "PATH|git:REF",
            suites=("upgrade",),
            path=True,
        ),
    )

    @property
    def bounds(self) -> WorkerLimits:
        """The workers' and MCP servers' bounds: the host's defaults with --worker-limit's."""
        from reference_host.process.bounds import configured

        return configured(self.worker_limits)

    @staticmethod
    def flags() -> Iterator[tuple[str, Flag]]:
        """Each option's field name and flag, in the order of the help and of rerun lines."""
        for f in fields(KitOptions):
            yield f.name, f.metadata["flag"]

    @classmethod
    def from_config(cls, config: Config) -> KitOptions:
        """The options of a pytest run: the command line, then the ini file's defaults."""
        values: dict[str, Any] = {}
        for name, flag in cls.flags():
            raw = getattr(config.option, flag.dest)
            if flag.ini is not None and raw in (None, []):
                raw = config.getini(flag.ini) or None
            if flag.read is not None:
                values[name] = flag.read(raw)
            elif flag.repeat:
                values[name] = tuple(raw or ())
            elif raw is not None:
                values[name] = raw
        return cls(**values)

    def to_argv(self, suite: str, base: Path, seed: int | None = None) -> list[str]:
        """The flags an item of suite ran with, to run it again from anywhere: relative
        paths made absolute against base (where pytest ran), and the seed of a failing
        search when none was given."""
        chosen = self if self.seed is not None or seed is None else replace(self, seed=seed)
        if chosen.seed is not None:
            chosen = replace(chosen, derandomize=False)  # a seed fixes the examples already
        argv: list[str] = []
        for name, flag in self.flags():
            if suite in flag.suites:
                argv += _written(flag, getattr(chosen, name), _default(name), base)
        return argv


def _default(name: str) -> object:
    return next(f.default for f in fields(KitOptions) if f.name == name)


def _written(flag: Flag, value: object, default: object, base: Path) -> list[str]:
    """One option as command-line words; a default left out, except the examples count, whose
    default an ini file may have changed."""
    if flag.switch:
        return [flag.name] if value else []
    if value == default and not flag.always:
        return []
    if isinstance(value, frozenset):
        return [flag.name, ",".join(sorted(value))]
    values: Iterable[object] = value if flag.repeat and isinstance(value, Iterable) else [value]
    words: list[str] = []
    for one in values:
        text = str(one)
        if flag.path and not text.startswith("git:"):
            text = str(base / Path(text).expanduser())
        words += [f"{flag.name}={text}"] if flag.joined else [flag.name, text]
    return words


def add_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """Declare every option on a pytest option group, and the ini keys that default them."""
    for _, flag in KitOptions.flags():
        kwargs: dict[str, object] = {"help": flag.help, "dest": flag.dest}
        if flag.switch:
            kwargs["action"] = "store_true"
        else:
            kwargs["metavar"] = flag.metavar
            if flag.type is not None:
                kwargs["type"] = flag.type
            if flag.repeat:
                kwargs.update(action="append", default=[])
        group.addoption(flag.name, **kwargs)
        if flag.ini is not None:
            parser.addini(flag.ini, f"default for {flag.name}", type=flag.ini_type)
