"""How a worker is started (spec: fengyu-worker.md#starting-the-worker): its command, working
folder and environment."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugin_spec.fengyu_decls import resource_limits
from plugin_spec.fengyu_runtime import (
    DEFAULT_LOCALE,
    DEFAULT_RUNTIME,
    Launch,
    UnsupportedRuntime,
    fengyu_launch,
)
from reference_host.process.bounds import DEFAULT_LIMITS, WorkerLimits
from reference_host.process.environment import DEFAULT_PASS_ENV, passed_through
from reference_host.process.identity import closed_to_sandbox, give, open_tree
from reference_host.process.lineage import LINEAGE_VARIABLE
from reference_host.process.netstack import slirp_program
from reference_host.process.sandbox import (
    BIN_PLACE,
    DATA_PLACE,
    PACKAGE_PLACE,
    Place,
    SandboxPolicy,
    command,
    launch_prefix,
    reproduction_options,
    support,
    wants_network,
)
from reference_host.process.seccomp import program_fd
from reference_host.process.worker_errors import WorkerLaunchError

# The project's legacy launch: an executable backend/worker in a package that declares no
# runtime (FengYu would run java -jar backend/worker.jar there; the kit says so, FY-WRK-012).
EXECUTABLE = Path("backend") / "worker"


class MissingArtifact(WorkerLaunchError):
    """The file FengYu's launch for the manifest's runtime needs is not in the package."""

    def __init__(self, message: str, command: str) -> None:
        super().__init__(message)
        self.command = command


UNCONFINED_VIEW = SandboxPolicy(Path("/"), Path("/"))  # no places: paths are as they are


@dataclass(frozen=True)
class WorkerSpec:
    """Everything needed to (re)start one plugin's worker, and to greet it: protocol_version
    is the manifest's backend.protocolVersion (None: no handshake, a legacy package)."""

    plugin_id: str
    root: Path
    argv: tuple[str, ...]
    data_dir: Path
    log_level: str = "INFO"
    call_timeout: float | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    runtime: str = DEFAULT_RUNTIME
    protocol_version: int | None = None
    plugin_version: str = ""
    locale: str | None = DEFAULT_LOCALE
    sandbox: SandboxPolicy | None = None
    wrapper: tuple[str, ...] = ()
    host_variables: bool = True  # the FENGYU_* variables; an MCP server is given none
    env_defaults: tuple[str, ...] = DEFAULT_PASS_ENV  # MCP_PASS_ENV for an MCP server
    private_home: bool = False  # HOME in the data folder in the sandbox too (MCP servers)
    limits: WorkerLimits = DEFAULT_LIMITS  # its bounds (bounds.py), the manifest's applied

    @property
    def sandboxed(self) -> bool:
        """Whether the worker runs in the OS sandbox (asked for, and possible here)."""
        return self.sandbox is not None and support().available

    def command(self, seccomp_fd: int | None = None) -> tuple[str, ...]:
        """What is started: argv in the sandbox where there is one (sandbox.py; seccomp_fd:
        the descriptor of its system call filter, seccomp.py), behind the wrapper (the kit's
        tracer, which stays outside the sandbox), with the kernel's share of its bounds
        (bounds.py; unconfined, no process count: it would count all the user's)."""
        if self.sandbox is None or not support().available:
            bounds = self.limits.prlimit(own_user_namespace=False) if self._runnable() else ()
            return (*self.wrapper, *bounds, *self.argv)
        sandboxed = command(
            support().program, self.sandbox, self.argv, self.root, seccomp_fd, self.limits
        )
        return (*launch_prefix(self.sandbox), *self.wrapper, *sandboxed)

    def _runnable(self) -> bool:
        """Whether argv's program can be run (found on PATH, or executable from the plugin
        folder): prlimit goes only in front of one that can, so that one that cannot is still
        reported as such, not as a worker that exited."""
        program = self.argv[0] if self.argv else ""
        if "/" not in program:
            return bool(program) and shutil.which(program) is not None
        return os.access(self.root / program, os.X_OK)

    @contextlib.contextmanager
    def started_command(self) -> Iterator[tuple[tuple[str, ...], tuple[int, ...]]]:
        """The command and the descriptors to pass to it, for as long as it is being
        started; the descriptors are closed after."""
        fd = program_fd() if self.sandboxed else None
        try:
            yield self.command(fd), (fd,) if fd is not None else ()
        finally:
            if fd is not None:
                os.close(fd)

    def machinery(self) -> frozenset[str]:
        """The programs command() puts around the worker (the sandbox, the kit's tracer):
        their processes are not the plugin's, and count against none of its limits."""
        programs = {shutil.which(self.wrapper[0]) or self.wrapper[0]} if self.wrapper else set()
        if self.sandboxed:
            programs.add(support().program)
            slirp = slirp_program()
            if slirp is not None and self.sandbox is not None and self.sandbox.network:
                programs.add(slirp)
        return frozenset(os.path.realpath(p) for p in programs)

    @property
    def home(self) -> Path | None:
        """HOME when it is one of the worker's own: `home` in the data folder, writable and
        kept across restarts, for an MCP server (private_home: as MCP clients give a server
        a writable HOME) and for an unconfined worker (where a real write would escape the
        plugin's folder). None for a sandboxed FengYu worker, which gets the user's HOME,
        unmounted, as FengYu gives it: a write there fails as it fails under FengYu."""
        if self.private_home or not self.sandboxed:
            return self.data_dir / "home"
        return None

    @property
    def tmp(self) -> Path:
        """TMPDIR, TMP and TEMP: `tmp` in the data folder, as FengYu sets them."""
        return self.data_dir / "tmp"

    def prepare_folders(self) -> None:
        """Create the data folder, its tmp and HOME, and the writable folders, before every
        start. Where the sandbox runs as another id than the caller (identity.py), the data
        folders become that id's (a grant's staging folder is made its own when it is made),
        the folders the user handed it get an ACL entry for it, and a bound folder it could
        not even enter is a WorkerLaunchError naming the fix."""
        home = self.home
        self.tmp.mkdir(parents=True, exist_ok=True)
        if home is not None:
            home.mkdir(parents=True, exist_ok=True)
        policy = self.sandbox
        for folder in policy.writable if policy is not None else ():
            folder.mkdir(parents=True, exist_ok=True)
        if policy is None or not self.sandboxed:
            return
        for folder in (self.data_dir, self.tmp, *([home] if home else [])):
            give(folder)
        for folder in policy.handed:
            problem = open_tree(folder)
            if problem is not None:
                raise WorkerLaunchError(f"cannot hand a folder to the sandbox: {problem}")
        for folder in (policy.package, *policy.readable):
            problem = closed_to_sandbox(folder)
            if problem is not None:
                raise WorkerLaunchError(problem)

    def environment(self, lineage: str | None = None) -> dict[str, str]:
        """What a worker sees (spec: host.md#the-worker-environment; environment.py): the
        allowed part of the host's environment, TMP and HOME (see home) in its data folder, the
        FENGYU_* variables, extra_env (an MCP entry's `env`) on top, and the lineage token
        that marks every process it starts (lineage.py)."""
        env = passed_through(os.environ, self.pass_env, self.env_defaults)
        seen = self.seen
        tmp = str(seen(self.tmp))
        env.update({"TMPDIR": tmp, "TMP": tmp, "TEMP": tmp})
        home = self.home
        if home is not None:
            env["HOME"] = str(seen(home))
        elif "HOME" in os.environ:
            env["HOME"] = os.environ["HOME"]
        if self.host_variables:
            env.update(
                {
                    "FENGYU_PLUGIN_ID": self.plugin_id,
                    "FENGYU_PLUGIN_ROOT": str(seen(self.root)),
                    "FENGYU_PLUGIN_DATA_DIR": str(seen(self.data_dir)),
                    "FENGYU_LOG_LEVEL": self.log_level,
                }
            )
        env.update(self.extra_env)
        if lineage is not None:
            env[LINEAGE_VARIABLE] = lineage
        return env

    def seen(self, path: Path) -> Path:
        """Where the worker sees path: inside its sandbox, the place the kit and the host
        both show it at (sandbox.Place); unconfined, path itself."""
        return self.view.inside(path)

    @property
    def view(self) -> SandboxPolicy:
        """What maps paths between the worker's view and ours: the sandbox's policy, or one
        without places (every path as it is) where the worker runs unconfined."""
        if self.sandbox is not None and self.sandboxed:
            return self.sandbox
        return UNCONFINED_VIEW

    def shell_command(self, confined: bool = False) -> str:
        """The command as a user would type it in the plugin folder (for reproductions).

        confined: run it in the sandbox as the kit and the host do, where this one runs in
        a sandbox: unconfined, a write the sandbox refused would succeed, in the author's
        folder. The line makes a data folder of its own ($t: TMPDIR and the data folder)
        and binds $w writable where a reproduction made one (conformance/fengyu/tool_files.py);
        the system, the runtime and the folder itself are read-only, and there is no network
        unless the manifest asks for it (sandbox.reproduction_options)."""
        env = f"FENGYU_PLUGIN_ID={shlex.quote(self.plugin_id)} FENGYU_PLUGIN_ROOT=."
        folder = f"cd {shlex.quote(str(self.root))}"
        if not (confined and self.sandbox is not None and self.sandboxed):
            return f"{folder} && {env} {shlex.join(self.argv)}"
        options = reproduction_options(self.sandbox, list(self.argv))
        data = 'FENGYU_PLUGIN_DATA_DIR="$t" TMPDIR="$t"'
        launch = f"{env} {data} bwrap {options} -- {shlex.join(self.argv)}"
        return f"{folder} && {{ t=$(mktemp -d) && {launch}; }}"


def worker_command(
    root: Path,
    manifest: Mapping[str, Any],
    override: str | Sequence[str] | None = None,
    *,
    scratch: Path | None = None,
    tmp: Path | None = None,
) -> tuple[str, ...]:
    """The launch command (spec: fengyu-worker.md#starting-the-worker): the override, else
    FengYu's fixed launch for backend.runtime (java when none is declared), else, for a
    package without a runtime, the legacy executable backend/worker.

    scratch: a folder of the caller's own, where a go worker without its executable bit is
    copied and made executable (FengYu sets the bit itself; the author's files stay as
    they are). tmp: the worker's TMP, handed to java as java.io.tmpdir as FengYu does.
    Raises MissingArtifact when the runtime's file is missing, WorkerLaunchError
    for anything else that cannot start."""
    if override:
        return tuple(shlex.split(override) if isinstance(override, str) else override)
    try:
        launch = fengyu_launch(manifest, os.environ)
    except UnsupportedRuntime as exc:
        raise WorkerLaunchError(str(exc)) from None
    artifact = root / launch.artifact
    problem = artifact_problem(root, launch)
    if problem is None:
        if launch.runtime == "java":
            java = shutil.which("java")
            if java is None:
                raise WorkerLaunchError(f"{artifact} needs java, which is not on PATH")
            tmpdir = (f"-Djava.io.tmpdir={tmp}",) if tmp is not None else ()
            return (java, *tmpdir, *launch.argv[1:])
        if launch.runtime == "go":
            return (str(_executable(artifact, scratch)),)
        return launch.argv
    legacy = root / EXECUTABLE
    if not launch.declared and not os.path.lexists(artifact) and legacy.is_file():
        if not os.access(legacy, os.X_OK):
            raise WorkerLaunchError(f"{legacy} is not executable (chmod +x it)")
        return (str(legacy),)
    raise MissingArtifact(problem, " ".join(launch.argv))


def artifact_problem(root: Path, launch: Launch) -> str | None:
    """What keeps FengYu from running launch in the package at root (its file is a link,
    or missing); None when the file is there. The kit's FY-WRK-012 reports the same text."""
    artifact = root / launch.artifact
    if artifact.is_symlink():
        return (
            f"{launch.artifact} is a symbolic link (to {os.readlink(artifact)!r}): FengYu runs "
            "the package's own files, and a host refuses to install a folder holding links"
        )
    if not artifact.is_file():
        return f"FengYu runs {launch.describe()}, but {launch.artifact} is not in the package"
    return None


def _executable(artifact: Path, scratch: Path | None) -> Path:
    """The go worker itself when it may be executed, else a copy with the bit set."""
    if os.access(artifact, os.X_OK):
        return artifact
    if scratch is None:
        raise WorkerLaunchError(f"{artifact} is not executable (chmod +x it)")
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / artifact.name
    staged = scratch / f".{artifact.name}.{os.getpid()}.{id(artifact)}"
    try:
        shutil.copyfile(artifact, staged)
        staged.chmod(0o755)
        # a new file in place of the old one: a worker still running the old copy keeps it
        os.replace(staged, copy)
    except OSError as exc:
        staged.unlink(missing_ok=True)
        raise WorkerLaunchError(f"{artifact} cannot be made executable: {exc.strerror}") from None
    return copy


def manifest_spec(
    plugin_id: str,
    root: Path,
    manifest: Mapping[str, Any],
    data_dir: Path,
    *,
    override: str | Sequence[str] | None = None,
    scratch: Path | None = None,
    hidden: tuple[Path, ...] | None = None,
    bounds: WorkerLimits = DEFAULT_LIMITS,
    **options: Any,
) -> WorkerSpec:
    """The spec of a FengYu package's worker, as the kit and the host both start it: the
    launch of worker_command, the runtime and protocol version the handshake checks, the
    sandbox (None for hidden: no sandbox; else the folders of the host's or kit's own state
    it hides), its bounds (the host's, or the kit's --worker-limit, with what the manifest
    declares in backend.resources), and options (log level, environment) passed on to
    WorkerSpec."""
    try:
        launch = fengyu_launch(manifest, os.environ)
    except UnsupportedRuntime as exc:
        raise WorkerLaunchError(str(exc)) from None
    argv = worker_command(root, manifest, override, scratch=scratch, tmp=data_dir / "tmp")
    version = manifest.get("version")
    sandbox = None
    if hidden is not None:
        program = Path(argv[0])
        copied = scratch is not None and program.is_relative_to(scratch)
        readable = (program.parent,) if copied else ()
        places: tuple[Place, ...] = (Place(root, PACKAGE_PLACE), Place(data_dir, DATA_PLACE))
        places += (Place(program.parent, BIN_PLACE),) if copied else ()
        sandbox = SandboxPolicy(
            root,
            data_dir,
            readable=readable,
            hidden=hidden,
            network=wants_network(manifest),
            places=places,
        )
    return WorkerSpec(
        plugin_id=plugin_id,
        root=root,
        argv=argv,
        data_dir=data_dir,
        runtime=launch.runtime,
        protocol_version=launch.protocol_version,
        plugin_version=version if isinstance(version, str) else "",
        sandbox=sandbox,
        limits=bounds.declared(resource_limits(dict(manifest))),
        **options,
    )
