"""Why a server died at start, when the sandbox is the likely cause, and the fix.

Real servers died in the sandbox for two reasons that are the sandbox's, not the protocol's
(issue 35): a write into a folder that is read-only there, and a TLS certificate they could
not verify because MCP clients (and so kit and host) do not pass the machine's certificate
variables. Kit (MCP-LIF-001) and host (a mount error) read the server's last stderr lines and
say so, naming the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Where the machine's certificate authorities are named (behind a proxy that re-signs TLS,
# say), per language: OpenSSL and Python, requests, Node, pip, curl.
CA_VARIABLES = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "CURL_CA_BUNDLE",
)
TLS_FAILURE = re.compile(
    r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|unable to get local issuer|"
    r"self[- ]signed certificate|UNABLE_TO_GET_ISSUER_CERT|SELF_SIGNED_CERT_IN_CHAIN|"
    r"unable to verify the first certificate|invalid peer certificate|UnknownIssuer",
    re.IGNORECASE,
)
READ_ONLY = re.compile(r"read-only file system|EROFS", re.IGNORECASE)
# What package launchers print of their own (npm's notices and errors, uv's progress): a
# server whose stderr holds only these never ran, its launcher gave up installing it.
LAUNCHER_LINE = re.compile(
    r"^\s*(npm (notice|warn|error|ERR!)|npm$|Installed \d+ packages?|Resolved \d+ packages?|"
    r"Downloading |Prepared \d+ packages?|warning: )",
    re.IGNORECASE,
)
LAUNCHERS = frozenset({"npx", "uvx", "pnpx", "bunx"})
# The words of the hint for a launcher that gave up: marketplace runs tell install failures by it.
INSTALL_FAILED = "installing the package failed"
QUOTED_PATH = re.compile(r"""['"](/[^'"\n]+)['"]""")


def start_hint(
    stderr: str, given: Mapping[str, str], environ: Mapping[str, str], home: str, command: str = ""
) -> str | None:
    """What the server's stderr says went wrong, when it is the sandbox's or the launcher's
    doing, with the fix; None otherwise. given: the variables the server got; home: its
    HOME; command: the program started (npx, uvx: a launcher that installs the server)."""
    if TLS_FAILURE.search(stderr):
        missing = [name for name in CA_VARIABLES if name in environ and name not in given]
        if missing:
            names = ", ".join(missing)
            flags = " ".join(f"--worker-env {name}" for name in missing)
            return (
                "the server could not verify a TLS certificate: this machine names its "
                f"certificate authorities in {names}, which MCP clients do not pass to a "
                f"server; pass them with `{flags}` (kit and host), or set them in the "
                "entry's env"
            )
        return (
            "the server could not verify a TLS certificate: give it the machine's "
            "certificate authorities through the entry's env (SSL_CERT_FILE, "
            "NODE_EXTRA_CA_CERTS), or `--worker-env NAME` where the machine sets them"
        )
    for line in stderr.splitlines():
        if READ_ONLY.search(line):
            path = QUOTED_PATH.search(line)
            what = f"wrote {path.group(1)}, which is" if path else "wrote into a folder"
            return (
                f"the server {what} read-only in the sandbox, where only its data folder, its "
                f"HOME ({home}) and the folders it is handed are writable: hand it the folder "
                "with `--mcp-root DIR` (kit and host), the entry's `roots`, or as an argument"
            )
    launcher = command.rsplit("/", 1)[-1]
    lines = [line for line in stderr.splitlines() if line.strip()]
    if launcher in LAUNCHERS and all(LAUNCHER_LINE.match(line) for line in lines):
        return (
            f"the launcher ({launcher}) exited before the server ran: {INSTALL_FAILED}, and "
            "its own output (above) does not say why; run the command by hand "
            "(npx: with `--loglevel verbose`). A step that downloads more during the "
            "install, such as puppeteer's browser, fails where the network is closed: skip "
            "it through the entry's env (PUPPETEER_SKIP_DOWNLOAD=1)"
        )
    return None
