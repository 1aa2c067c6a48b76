"""An MCP server writes where it was pointed, and only there (issue 35, "too tight"): the
folders its arguments name and the roots the user hands it (`--mcp-root`, the entry's
`roots`) are writable in its sandbox, in the kit as in the host; other folders are not even
there. Real servers (server-filesystem, mcp-server-git) could not write at all before.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.mcp.server import McpServer
from reference_host.mcp.config import ServerConfig
from reference_host.mcp.launch import Launch, handed_folders, server_data
from reference_host.mcp.start_problems import start_hint
from reference_host.process.launch import WorkerSpec
from reference_host.process.sandbox import support

pytestmark = pytest.mark.skipif(not support().available, reason=support().reason or "sandbox")

# Writes a file into each folder named on its command line, and into the one in $ROOT.
WRITE = """
import os, sys
for folder in [*sys.argv[1:], os.environ.get("ROOT", "")]:
    if not folder:
        continue
    try:
        open(os.path.join(folder, "written.txt"), "w").write("server")
        print(folder, "ok")
    except OSError as exc:
        print(folder, exc.strerror)
"""


def run(spec: WorkerSpec) -> dict[str, str]:
    spec.prepare_folders()
    with spec.started_command() as (argv, fds):
        done = subprocess.run(
            argv,
            pass_fds=fds,
            cwd=spec.root,
            env=spec.environment("0" * 32),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


def host_spec(tmp_path: Path, args: tuple[str, ...], roots: tuple[Path, ...] = ()) -> WorkerSpec:
    config = ServerConfig("writer", sys.executable, ("-c", WRITE, *args), {}, tmp_path / "cwd")
    state = tmp_path / "host-state"
    return Launch(config, server_data(state, "writer"), (state.resolve(),), (), roots).spec


def kit_spec(tmp_path: Path, args: tuple[str, ...], roots: tuple[Path, ...] = ()) -> WorkerSpec:
    server = McpServer(
        "writer", (sys.executable, "-c", WRITE, *args), tmp_path / "cwd", {}, (), "test"
    )
    server.roots = roots
    return server.spec()


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    handed, rooted, other = tmp_path / "handed", tmp_path / "rooted", tmp_path / "other"
    for folder in (handed, rooted, other, tmp_path / "cwd"):
        folder.mkdir()
    return handed, rooted, other


@pytest.mark.parametrize("make", [host_spec, kit_spec], ids=["host", "kit"])
def test_a_server_writes_where_it_was_pointed_and_nowhere_else(
    tmp_path: Path, folders: tuple[Path, Path, Path], make: object
) -> None:
    handed, rooted, other = folders
    spec = make(tmp_path, (str(handed),), (rooted,))  # type: ignore[operator]
    spec = WorkerSpec(**{**spec.__dict__, "extra_env": {"ROOT": str(rooted)}})
    seen = run(spec)
    assert seen == {str(handed): "ok", str(rooted): "ok"}
    assert (handed / "written.txt").read_text() == "server"
    assert (rooted / "written.txt").read_text() == "server"
    with_other = make(tmp_path, (str(handed), str(other)))  # type: ignore[operator]
    assert run(with_other)[str(other)] == "ok"  # named on its command line: handed too
    untouched = tmp_path / "untouched"
    untouched.mkdir()
    outside = run(WorkerSpec(**{**spec.__dict__, "extra_env": {"ROOT": str(untouched)}}))
    assert outside[str(untouched)] in {"No such file or directory", "Permission denied"}
    assert not (untouched / "written.txt").exists()


def test_a_tls_failure_names_the_machines_certificate_variables() -> None:
    stderr = "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate"
    environ = {"SSL_CERT_FILE": "/etc/ssl/certs/ca.pem", "NODE_EXTRA_CA_CERTS": "/x.pem"}
    hint = start_hint(stderr, {"PATH": "/usr/bin"}, environ, "/data/home")
    assert hint is not None
    assert "`--worker-env SSL_CERT_FILE --worker-env NODE_EXTRA_CA_CERTS`" in hint
    given = start_hint(stderr, environ, environ, "/data/home")
    assert given is not None and "--worker-env SSL_CERT_FILE" not in given


def test_a_read_only_write_names_the_path_and_the_fix() -> None:
    stderr = "Error: EROFS: read-only file system, open '/srv/app/config.json'"
    hint = start_hint(stderr, {}, {}, "/data/home")
    assert hint is not None
    assert "wrote /srv/app/config.json" in hint and "--mcp-root DIR" in hint
    assert start_hint("Traceback: KeyError: 'x'", {}, {}, "/data/home") is None


# Runs git in each repository named on its command line (as mcp-server-git does in its
# --repository), printing the repository and git's verdict.
GIT = """
import subprocess, sys
for repo in sys.argv[1:]:
    done = subprocess.run(["git", "-C", repo, "status", "--porcelain"], capture_output=True,
                          text=True)
    print(repo, "ok" if done.returncode == 0 else done.stderr.strip().splitlines()[0])
"""
# The same in the repository at a relative path below the folder it is handed (the only
# folder on its command line).
GIT_BELOW = """
import os, subprocess, sys
repo = os.path.normpath(os.path.join(sys.argv[1], sys.argv[2]))
done = subprocess.run(["git", "-C", repo, "status", "--porcelain"], capture_output=True, text=True)
print(repo, "ok" if done.returncode == 0 else done.stderr.strip().splitlines()[0])
"""


@pytest.mark.parametrize("where", ["host", "kit"])
@pytest.mark.parametrize("inside", [False, True])
def test_git_works_in_a_repository_the_user_handed_over(
    tmp_path: Path, where: str, inside: bool
) -> None:
    """As root the sandbox runs as nobody, and git refused the user's repository ("dubious
    ownership"): every call of mcp-server-git failed in the folder it was handed, and a
    server handed a workspace (cyanheads-git) in the repository inside it."""
    handed = tmp_path / "workspace"
    repo = handed / "projects" / "repo" if inside else handed
    repo.mkdir(parents=True)
    (tmp_path / "cwd").mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    argv = (sys.executable, "-c", GIT_BELOW, str(handed), str(repo.relative_to(handed)))
    if where == "host":
        config = ServerConfig("git", argv[0], argv[1:], {}, tmp_path / "cwd")
        state = tmp_path / "host-state"
        spec = Launch(config, server_data(state, "git"), (state.resolve(),)).spec
    else:
        spec = McpServer("git", argv, tmp_path / "cwd", {}, (), "test").spec()
    assert run(spec) == {str(repo): "ok"}


def test_a_launcher_that_gave_up_is_named_not_the_protocol() -> None:
    notices = "npm notice\nnpm notice New minor version of npm available! 11.19.1 -> 11.21.3"
    hint = start_hint(notices, {}, {}, "/data/home", "/usr/bin/npx")
    assert hint is not None and hint.startswith("the launcher (npx) exited before the server ran")
    assert "PUPPETEER_SKIP_DOWNLOAD" in hint
    assert start_hint(notices, {}, {}, "/data/home", "python") is None
    spoke = f"{notices}\nTypeError: cannot read properties of undefined"
    assert start_hint(spoke, {}, {}, "/data/home", "npx") is None


def run_reader(tmp_path: Path, script: Path, relative: str) -> tuple[tuple[Path, ...], str]:
    """`python SCRIPT`, a server that prints the file at relative to its own folder, started
    as the host starts it from a folder of its own: the folders its argument makes readable,
    and what it read in its sandbox."""
    script.write_text(
        "import pathlib, sys\n"
        f"print('read', (pathlib.Path(sys.argv[0]).parent / {relative!r}).read_text())\n"
    )
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    config = ServerConfig("reader", sys.executable, (str(script),), {}, cwd)
    state = tmp_path / "host-state"
    output = run(Launch(config, server_data(state, "reader"), (state.resolve(),)).spec)
    return handed_folders([str(script)], cwd).readable, output.get("read", str(output))


def test_a_script_argument_brings_its_package(tmp_path: Path) -> None:
    """`node .../server-everything/dist/index.js` found no dependency: only dist/ was
    readable, and node resolves node_modules from the package's top."""
    package = tmp_path / "server-everything"
    (package / "dist").mkdir(parents=True)
    (package / "node_modules" / "dep").mkdir(parents=True)
    (package / "package.json").write_text("{}")
    (package / "node_modules" / "dep" / "index.txt").write_text("dependency")
    readable, read = run_reader(
        tmp_path, package / "dist" / "main.py", "../node_modules/dep/index.txt"
    )
    assert readable == (package,)
    assert read == "dependency"


def test_a_script_of_an_installed_package_brings_the_project_node_modules(tmp_path: Path) -> None:
    """`npm install @modelcontextprotocol/server-everything` in a folder puts the server's
    dependencies (@modelcontextprotocol/sdk) beside it in that folder's node_modules, not in
    its own: started from another folder, node found none of them (issue 37 calibration)."""
    modules = tmp_path / "project" / "node_modules"
    package = modules / "@scope" / "server"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text("{}")
    (modules / "sdk").mkdir()
    (modules / "sdk" / "index.txt").write_text("the sdk")
    readable, read = run_reader(tmp_path, package / "dist" / "main.py", "../../../sdk/index.txt")
    assert readable == (modules,)
    assert read == "the sdk"
