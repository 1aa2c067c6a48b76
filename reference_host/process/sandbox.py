"""The OS sandbox every worker and MCP server runs in (spec: host.md#the-worker-sandbox),
shaped like FengYu's and tighter where FengYu is open.

FengYu wraps each worker in `bwrap --die-with-parent`: the system folders (`/usr /bin /lib
/lib64 /etc`) read-only, a fresh `/tmp`, the runtime and the package read-only, the data
folder and the current call's write grants writable, read grants readable, and no network
unless the manifest asks for `network`, `network.email` or `database`. Nothing else of the
machine is mounted: not `/home`, not `/run`, not the other jobs' files in `/tmp`, so no key
in the user's folders is read and no unix socket of another program (a tmux server, an ssh
agent, a container engine) is reached. The kit and the host build the same command here, so
a worker cannot tell them apart and what the kit checks is what the host runs.

On top of FengYu's shape: the worker gets PID, IPC, UTS and cgroup namespaces of its own
(what it starts dies with it), is never the real root (identity.py: as root, the sandbox is
set up as root and the worker dropped to an unprivileged id; otherwise a user namespace it
cannot nest), no capabilities, a system call filter (seccomp.py), read-only kernel settings,
a private HOME in its data folder, and, where a bound folder holds them, the host's or the
kit's own state (`hidden`) and the user's credential files show up empty.

What a runtime needs is found, not guessed: the folder its program is installed in (the
venv and the interpreter behind it, a node or Java install), the folders on PATH and what a
Python environment's `.pth` files add (an editable install's sources), all read-only.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from plugin_spec.json_types import JsonMapping, JsonValue, ReadOnlyJson
from reference_host.process.bounds import WorkerLimits
from reference_host.process.identity import dropped_id
from reference_host.process.netstack import (
    BLOCK_FD,
    INFO_FD,
    RESOLVER_FD,
    SYNC_FD,
    launcher,
    slirp_program,
)
from reference_host.process.seccomp import program_fd

PROBE_SECONDS = 10.0
NETWORK_PERMISSIONS = frozenset({"network", "network.email", "database"})
# The system folders every program needs, read-only (FengYu's list, and their usual
# siblings); a link among them (a merged /usr) is made the same link.
SYSTEM = tuple(
    Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
)
# The user's credentials, relative to HOME: hidden wherever a bound folder holds them (a
# server whose folder is HOME, say). Folders show up empty; files, empty.
CREDENTIAL_FOLDERS = (
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".docker",
    ".kube",
    ".password-store",
    ".config/gcloud",
    ".config/gh",
    ".config/github-copilot",
    ".local/share/keyrings",
)
CREDENTIAL_FILES = (
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".cargo/credentials",
    ".cargo/credentials.toml",
)
# The kernel's settings in a fresh /proc: writable where bwrap runs as root, and a worker
# could then set kernel.core_pattern to a program of its own, which the kernel runs as root.
KERNEL_SETTINGS = (Path("/proc/sys"), Path("/proc/sysrq-trigger"))
# What is never bound as a runtime folder, however a PATH names it: the whole machine, the
# shared scratch folders (other jobs' files and sockets) and the runtime state of services.
NEVER_BOUND = tuple(Path(p) for p in ("/", "/tmp", "/var/tmp", "/run", "/var", "/dev", "/proc"))
BIN_FOLDERS = frozenset({"bin", "sbin", "shims", "Scripts"})
SETPRIV = "/usr/bin/setpriv"
RESOLV_CONF = Path("/etc/resolv.conf")
# Where the folders the kit or the host made for a worker show up inside its sandbox: the same
# paths in both (their own paths differ: a kit run's scratch folder, the host's data folder),
# so that a plugin cannot tell a kit run from a host by its package, data or HOME path.
PACKAGE_PLACE = Path("/plugin")
DATA_PLACE = Path("/plugin-data")
BIN_PLACE = Path("/plugin-bin")
FILES_PLACE = Path("/plugin-files")  # a call's grant folders: `write`, `read` (and `write-2`...)
SERVER_DATA_PLACE = Path("/server-data")


@dataclass(frozen=True)
class Place:
    """A folder bound somewhere else than its own path: outside, the folder; inside, where
    the sandbox shows it."""

    outside: Path
    inside: Path


@dataclass(frozen=True)
class SandboxPolicy:
    """What one worker may reach: package read-only; data, writable and handed read-write;
    readable read-only, and its runtime's folders, found from its command; hidden folders
    emptied wherever a bound folder holds them; the network only when network is set.
    writable holds folders the host or the kit made (grant staging), handed the user's own
    (an MCP server's roots), which the sandbox's id may need an ACL entry to write
    (identity.open_tree)."""

    package: Path
    data: Path
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    network: bool = False
    handed: tuple[Path, ...] = ()
    places: tuple[Place, ...] = ()

    def with_grants(self, writable: Iterable[Path], readable: Iterable[Path]) -> SandboxPolicy:
        """The policy with the grant folders of one call's conversation added, shown in
        FILES_PLACE: the host's staging and read copies, the kit's handed files alike."""
        writable, readable = tuple(writable), tuple(readable)
        return replace(
            self,
            writable=(*self.writable, *writable),
            readable=(*self.readable, *readable),
            places=(
                *self.places,
                *_file_places(writable, "write"),
                *_file_places(readable, "read"),
            ),
        )

    def with_data(self, data: Path) -> SandboxPolicy:
        """The policy with another data folder, shown where the old one was."""
        places = tuple(
            replace(p, outside=data) if p.outside == self.data else p for p in self.places
        )
        return replace(self, data=data, places=places)

    def _inward(self) -> list[tuple[Path, Path]]:
        """Each place as (its folder out here, where the sandbox shows it)."""
        return [(p.outside, p.inside) for p in self.places]

    def _outward(self) -> list[tuple[Path, Path]]:
        return [(p.inside, p.outside) for p in self.places]

    def inside(self, path: Path) -> Path:
        """Where path shows up in the sandbox: under the inside path of the innermost place
        that holds it, else at its own path."""
        return _moved(path, self._inward())

    def outside(self, path: Path) -> Path:
        """The path that shows up at path in the sandbox (inside's inverse)."""
        return _moved(path, self._outward())

    def inside_text(self, text: str) -> str:
        """A command-line word, a variable's value or a request's string with each place's
        path replaced by where the sandbox shows it (`-Djava.io.tmpdir=<data>/tmp`), the
        innermost places first."""
        return _moved_in_text(text, self._inward())

    def outside_text(self, text: str) -> str:
        """A worker's string (a path in its answer) with each place's inside path replaced
        by the folder it shows (inside_text's inverse)."""
        return _moved_in_text(text, self._outward())

    def inside_value(self, value: ReadOnlyJson) -> ReadOnlyJson:
        """A request's params with the places' paths in every string as the worker sees
        them (a FileRef's path into a grant folder)."""
        return _map_strings(value, self.inside_text) if self.places else value

    def outside_value(self, value: JsonValue) -> JsonValue:
        """A worker's answer with the paths it names as they are out here."""
        return _map_strings(value, self.outside_text) if self.places else value

    @property
    def home(self) -> Path:
        """The worker's private HOME: writable, in its data folder, kept across restarts."""
        return self.data / "home"


def wants_network(manifest: JsonMapping) -> bool:
    """Whether FengYu gives the plugin's worker the network (its permissions ask for it)."""
    permissions = manifest.get("permissions")
    if not isinstance(permissions, Sequence) or isinstance(permissions, str):
        return False
    return any(isinstance(p, str) and p in NETWORK_PERMISSIONS for p in permissions)


@dataclass(frozen=True)
class Support:
    """Whether workers can be sandboxed here: the bwrap program, or why not."""

    program: str
    reason: str = ""

    @property
    def available(self) -> bool:
        return bool(self.program)

    @property
    def user_network(self) -> bool:
        """Whether a sandbox with the network gets one of its own (netstack.py), rather
        than the host's."""
        return self.available and slirp_program() is not None

    @property
    def user_network_reason(self) -> str:
        if not self.available:
            return self.reason
        return (
            "slirp4netns is not installed (Debian: apt-get install slirp4netns): a sandbox "
            "with the network shares the host's"
        )


@cache
def support() -> Support:
    """bwrap, when it is installed and can make the sandbox here (probed once)."""
    if not sys.platform.startswith("linux"):
        return Support("", f"the worker sandbox (bubblewrap) is Linux-only; this is {sys.platform}")
    program = shutil.which("bwrap")
    if program is None:
        return Support("", "bubblewrap is not installed (Debian: apt-get install bubblewrap)")
    if dropped_id() is not None and not os.access(SETPRIV, os.X_OK):
        return Support("", f"running as root, the sandbox needs {SETPRIV} (Debian: util-linux)")
    with tempfile.TemporaryDirectory(prefix="sandbox-probe-") as folder:
        package, data = Path(folder) / "package", Path(folder) / "data"
        package.mkdir()
        data.mkdir()
        probe = SandboxPolicy(package, data, hidden=(Path(folder),))
        fd = program_fd()
        argv = command(program, probe, ("true",), package, fd)
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=PROBE_SECONDS, check=False, pass_fds=(fd,)
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Support("", f"bubblewrap could not be run: {exc}")
        finally:
            os.close(fd)
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"exit code {done.returncode}"
        return Support("", f"bubblewrap cannot make a sandbox here (user namespaces?): {why}")
    return Support(program)


def command(
    program: str,
    policy: SandboxPolicy,
    argv: Iterable[str],
    cwd: Path,
    seccomp_fd: int | None = None,
    bounds: WorkerLimits | None = None,
) -> list[str]:
    """The bwrap command that runs argv in cwd under policy (program: the bwrap path;
    seccomp_fd: a descriptor holding seccomp.program(), passed to the child; bounds: the
    kernel's share of the worker's bounds, bounds.py: /tmp no larger than its data, and
    prlimit in front of argv, after setpriv)."""
    outside = list(argv)
    argv = [policy.inside_text(word) for word in outside]
    dropped = dropped_id()
    args = [program, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    args += ["--unshare-uts", "--unshare-cgroup-try"]
    user_network = policy.network and slirp_program() is not None
    if user_network:  # netstack.py: the launcher's namespace, or bwrap's once it is wired
        args += ["--sync-fd", str(SYNC_FD)]
        if dropped is None:
            args += ["--unshare-net", "--info-fd", str(INFO_FD)]
            args += ["--block-fd", str(BLOCK_FD)]
    elif not policy.network:
        args.append("--unshare-net")
    if dropped is None:
        args += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    else:  # set up as root; setpriv drops the worker to `dropped` with nothing left
        args += ["--cap-drop", "ALL"]
        args += [a for cap in ("SETUID", "SETGID", "SETPCAP") for a in ("--cap-add", f"CAP_{cap}")]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += _system()
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777"]
    args += ["--size", str(bounds.data_bytes)] if bounds is not None and _sizes(program) else []
    args += ["--tmpfs", "/tmp"]
    for kernel in KERNEL_SETTINGS:
        if kernel.exists():
            args += ["--ro-bind", str(kernel), str(kernel)]
    args += _mounts(policy, outside, cwd)
    if user_network:
        args += _resolver()
    elif policy.network:
        args += _host_resolver()
    args += ["--chdir", str(policy.inside(cwd)), "--"]
    if dropped is not None:
        args += [
            SETPRIV,
            *(f"--reuid={dropped}", f"--regid={dropped}", "--clear-groups"),
            *("--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"),
        ]
    if bounds is not None:
        args += bounds.prlimit(own_user_namespace=dropped is None)
    return [*args, *argv]


def reproduction_options(policy: SandboxPolicy, argv: list[str]) -> str:
    """bwrap's options for a reproduction line the user runs by hand, in the plugin folder,
    as themselves: the system and the runtime folders read-only, the folder itself ($PWD)
    read-only, a fresh /tmp, a data folder $t and a handed folder $w writable, and the
    network (the host's: no netstack here) only where the policy has it."""
    runtime = [
        f"--ro-bind {shlex.quote(str(f))} {shlex.quote(str(f))}" for f in runtime_folders(argv)
    ]
    return " ".join(
        [
            "--die-with-parent --unshare-all --unshare-user --cap-drop ALL",
            *(["--share-net"] if policy.network else []),
            shlex.join(_system()),
            "--proc /proc --dev /dev --tmpfs /tmp",
            *runtime,
            '--ro-bind "$PWD" "$PWD" --bind "$t" "$t" ${w:+--bind "$w" "$w"} --chdir "$PWD"',
        ]
    )


def launch_prefix(policy: SandboxPolicy) -> tuple[str, ...]:
    """What goes in front of the command (and of a tracer around it): the launcher that gives
    a sandbox with the network its own user-mode network (netstack.py); nothing otherwise, or
    where slirp4netns is missing and the network is shared (Support.network says so)."""
    if not policy.network or slirp_program() is None:
        return ()
    return launcher(userns=dropped_id() is None)


def _resolver() -> list[str]:
    """/etc/resolv.conf (the file it links to, where it is a link) replaced by one naming
    slirp4netns's DNS forwarder: a resolver on the host's loopback is out of reach."""
    target = Path("/etc/resolv.conf").resolve()
    shown = [p for p in target.parents if p == Path("/") or _is_system(p)]
    made = [a for p in reversed(target.parents) if p not in shown for a in ("--dir", str(p))]
    return [*made, "--perms", "0644", "--ro-bind-data", str(RESOLVER_FD), str(target)]


@cache
def _sizes(program: str) -> bool:
    """Whether this bwrap sizes a tmpfs (`--size`, bubblewrap 0.7 and later)."""
    try:
        done = subprocess.run(
            [program, "--help"], capture_output=True, timeout=PROBE_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--size" in done.stdout + done.stderr


def _host_resolver() -> list[str]:
    """For a sandbox sharing the host's network (no slirp4netns): the file /etc/resolv.conf
    links to, read-only, where it lies outside the system folders (systemd-resolved's stub
    under /run, which is not mounted): without it, names do not resolve."""
    link = RESOLV_CONF
    target = link.resolve()
    if not link.is_symlink() or _is_system(target) or not _is_file(target):
        return []
    made = [a for p in reversed(target.parents) if p != Path("/") for a in ("--dir", str(p))]
    return [*made, "--ro-bind", str(target), str(target)]


@cache
def _system() -> tuple[str, ...]:
    """The system folders, read-only, and the links among them as links."""
    args: list[str] = []
    for folder in SYSTEM:
        if folder.is_symlink():
            args += ["--symlink", os.readlink(folder), str(folder)]
        elif folder.is_dir():
            args += ["--ro-bind", str(folder), str(folder)]
    return tuple(args)


@dataclass(frozen=True)
class _Mount:
    """One mount of the sandbox: a folder bound (read-only or not), emptied (hidden), or a
    credential file shown empty; source is the folder, path where the sandbox shows it."""

    source: Path
    kind: str  # "ro", "rw", "hide", "blank"
    path: Path

    @property
    def args(self) -> list[str]:
        where = str(self.path)
        if self.kind == "hide":
            return ["--tmpfs", where]
        if self.kind == "blank":
            return ["--ro-bind", "/dev/null", where]
        return ["--ro-bind" if self.kind == "ro" else "--bind", str(self.source), where]


def _mounts(policy: SandboxPolicy, argv: list[str], cwd: Path) -> list[str]:
    """The binds of policy, outermost first, with the folders on the way to each (and cwd,
    when nothing bound holds it) made as folders every user may pass, the hidden folders
    and credentials emptied wherever a bound folder holds them, and the hidden folders
    read-only at the end."""
    placed = [p.outside for p in policy.places]
    runtime = [f for f in runtime_folders(argv) if not any(f.is_relative_to(p) for p in placed)]
    bound = [
        *(_Mount(p, "ro", policy.inside(p)) for p in (*runtime, policy.package, *policy.readable)),
        *(
            _Mount(p, "rw", policy.inside(p))
            for p in (policy.data, *policy.writable, *policy.handed)
        ),
    ]
    trees = [m.source for m in bound]
    covered = [*SYSTEM, *(m.path for m in bound)]
    emptied = [
        _Mount(p, "hide", policy.inside(p))
        for p in _hidden(policy)
        if any(p != t and p.is_relative_to(t) for t in trees) or p in trees
    ]
    home = os.environ.get("HOME")
    if home:
        for name in CREDENTIAL_FILES:
            path = Path(home) / name
            if _is_file(path) and any(path.is_relative_to(t) for t in trees):
                emptied.append(_Mount(path, "blank", policy.inside(path)))
    # Outermost first; at the same path, the emptying before the bind that shows it again.
    order = sorted([*emptied, *bound], key=lambda m: (len(m.path.parts), m.kind != "hide"))
    args: list[str] = []
    made = {Path("/"), Path("/tmp")}  # there already
    hidden = [m.path for m in emptied if m.kind == "hide"]
    for mount in order:
        for parent in reversed(mount.path.parents):
            shown = any(parent.is_relative_to(c) for c in covered)
            if parent in made or (shown and not any(parent.is_relative_to(h) for h in hidden)):
                continue
            made.add(parent)
            args += ["--dir", str(parent)]
        args += mount.args
    cwd = policy.inside(cwd)
    if not any(cwd.is_relative_to(c) for c in covered):
        args += [
            a
            for folder in (*reversed(cwd.parents), cwd)
            if folder not in made
            for a in ("--dir", str(folder))
        ]
    for mount in emptied:
        if mount.kind == "hide":
            args += ["--remount-ro", str(mount.path)]
    return args


def _file_places(folders: tuple[Path, ...], kind: str) -> tuple[Place, ...]:
    """Where a call's grant folders of one kind show up: FILES_PLACE/kind, then kind-2..."""
    return tuple(
        Place(f, FILES_PLACE / (kind if i == 0 else f"{kind}-{i + 1}"))
        for i, f in enumerate(folders)
    )


def _map_strings(value: ReadOnlyJson, change: Callable[[str], str]) -> JsonValue:
    """A copy of value (JSON: objects, arrays, strings, scalars) with change applied to every
    string, keys included."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {change(k): _map_strings(v, change) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_map_strings(v, change) for v in value]
    return value


def _moved(path: Path, moves: list[tuple[Path, Path]]) -> Path:
    """path moved from under the innermost `from` folder of moves that holds it to under
    its `to` folder; path itself where none holds it."""
    holding = [(old, new) for old, new in moves if path.is_relative_to(old)]
    if not holding:
        return path
    old, new = max(holding, key=lambda move: len(move[0].parts))
    return new / path.relative_to(old)


def _moved_in_text(text: str, moves: list[tuple[Path, Path]]) -> str:
    """text with each `from` folder of moves replaced by its `to` folder, the innermost
    first (_replace_path: only where it stands as a whole path or a path's beginning)."""
    for old, new in sorted(moves, key=lambda move: -len(move[0].parts)):
        text = _replace_path(text, str(old), str(new))
    return text


def _replace_path(text: str, old: str, new: str) -> str:
    """text with the path old replaced by new wherever it stands as a whole path or a path's
    beginning (after the start, `=` or a separator; before `/`, a separator or the end),
    never inside a longer path or name."""
    return re.sub(
        r"(?<![^=:;,\s'\"])" + re.escape(old) + r"(?=/|[:;,\s'\"]|$)", lambda _: new, text
    )


def _hidden(policy: SandboxPolicy) -> list[Path]:
    """The folders shown empty: the user's credential folders where they are real folders,
    and policy.hidden; one inside another is hidden with it."""
    home = os.environ.get("HOME")
    credentials = [Path(home) / c for c in CREDENTIAL_FOLDERS] if home else []
    real = [p for p in credentials if _is_folder(p) and not p.is_symlink()]
    folders = [*real, *(p for p in policy.hidden if p not in real)]
    return [p for p in folders if not any(p != q and p.is_relative_to(q) for q in folders)]


def runtime_folders(argv: list[str]) -> list[Path]:
    """The folders argv's program needs besides the system ones: where it is installed
    (and, for a link or a script, what it points to or is run by), the folders on PATH, a
    Python environment's `.pth` folders and JAVA_HOME; outermost only."""
    search = os.environ.get("PATH", os.defpath)
    entries = [Path(p) for p in search.split(os.pathsep) if p]
    java = os.environ.get("JAVA_HOME")
    found = [*_program_folders(argv[0] if argv else "", search)]
    found += [f for entry in entries if (f := _install_folder(entry / "x")) is not None]
    found += [Path(java)] if java and Path(java).is_absolute() else []
    candidates = [f.resolve() for f in found if _is_folder(f)]
    kept = [f for f in candidates if _bindable(f) and not _is_system(f)]
    unique = list(dict.fromkeys(kept))
    return [f for f in unique if not any(f != o and f.is_relative_to(o) for o in unique)]


@cache
def _program_folders(program: str, search: str) -> tuple[Path, ...]:
    """Install folders of the program (found on search when it names no folder), of what
    its links point to, of its script's interpreter, and of a Python environment's base
    and `.pth` entries. A tuple: the cache hands the same value to every caller."""
    if not program:
        return ()
    located = program if "/" in program else shutil.which(program, path=search)
    if located is None:
        return ()
    folders: list[Path] = []
    for path in _chain(Path(located).absolute(), search):
        folder = _install_folder(path)
        if folder is not None:
            folders.append(folder)
            folders += _python_extras(folder)
    return tuple(folders)


def _chain(path: Path, search: str) -> Iterator[Path]:
    """The program, the file its links resolve to, and a script's interpreter (its `#!`
    line; `env NAME` looked up on search), each once."""
    yield path
    real = path.resolve()
    if real != path:
        yield real
    try:
        with real.open("rb") as file:
            first = file.readline(256)
    except OSError:
        return
    if not first.startswith(b"#!"):
        return
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return
    interpreter = words[0]
    if Path(interpreter).name == "env" and len(words) > 1:
        interpreter = shutil.which(words[-1], path=search) or ""
    if interpreter:
        yield Path(interpreter)
        yield Path(interpreter).resolve()


def _install_folder(program: Path) -> Path | None:
    """The folder a program is installed in: the one above its bin folder (a venv, a node
    or JDK install), else its own folder; None for what is never bound."""
    folder = program.parent
    for candidate in (folder.parent, folder) if folder.name in BIN_FOLDERS else (folder,):
        if _bindable(candidate):
            return candidate
    return None


def _python_extras(folder: Path) -> list[Path]:
    """For a Python environment: the base interpreter's folder (pyvenv.cfg's home) and the
    folders its `.pth` files add (an editable install's sources)."""
    extras: list[Path] = []
    config = folder / "pyvenv.cfg"
    if _is_file(config):
        for line in config.read_text("utf-8", "replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                base = _install_folder(Path(value.strip()) / "python")
                extras += [base] if base is not None else []
    try:
        found = list(folder.glob("lib/python3*/site-packages/*.pth"))
    except OSError:
        found = []
    for pth in found:
        try:
            lines = pth.read_text("utf-8", "replace").splitlines()
        except OSError:
            continue
        extras += [Path(x) for x in lines if x.startswith("/") and _is_folder(Path(x))]
    return extras


def _bindable(folder: Path) -> bool:
    """Whether a folder may be bound as a runtime folder: not the whole machine, not a
    shared scratch folder, not HOME nor a folder holding it (its credentials, its sockets)."""
    if folder in NEVER_BOUND or not folder.is_absolute():
        return False
    home = os.environ.get("HOME")
    return not (home and Path(home).is_relative_to(folder))


def _is_folder(path: Path) -> bool:
    """Whether path is a folder this process may look into (a PATH entry under another
    user's HOME is not)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _is_system(folder: Path) -> bool:
    return any(folder.is_relative_to(s) for s in SYSTEM)
