"""The environment a worker gets (spec: host.md#the-worker-environment): a short documented
list, never the host's secrets.

A worker runs plugin code the host did not write, so it inherits nothing by default: only
FengYu's allow-list of what a program needs to run at all (PATH, the locale, the time zone,
the user's name and shell, JAVA_HOME for `java -jar` workers, the Windows system folders),
plus the names the host's owner passes through
explicitly (HostConfig.worker_env / `--worker-env NAME`, the kit's `--worker-env`, or the
REFERENCE_HOST_WORKER_ENV variable, a comma-separated list, for both). The FENGYU_* variables,
TMPDIR/TMP/TEMP (`tmp` in the plugin's data folder) and HOME (a folder inside it) are set on
top.

A name ending in `*` passes every variable starting with the rest (`LC_*`, `AWS_*`), except
names that look like a credential (KEY, TOKEN, SECRET, PASSW, CREDENTIAL, AUTH, COOKIE,
PRIVATE anywhere in them, any case): `AWS_*` or `A*` must not hand every plugin
AWS_SECRET_ACCESS_KEY or ANTHROPIC_API_KEY by accident, so such a variable passes only when
it is listed by its full name. The host's own secrets, its model key (OPENAI_API_KEY) and
its bearer token (REFERENCE_HOST_TOKEN), are never passed, even when listed in another
case (Windows ignores the case of names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# FengYu's allow-list (spec: host.md#the-worker-environment), but for TMP/TEMP and HOME, which
# are set to folders of the plugin's own.
DEFAULT_PASS_ENV = (
    *("PATH", "PATHEXT", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "JAVA_HOME"),
    *("LANG", "LANGUAGE", "LC_*", "TZ", "USER", "LOGNAME", "SHELL", "TERM", "DISPLAY"),
    *("SYSTEMROOT", "WINDIR", "COMSPEC"),
)
# What the MCP SDKs' stdio clients pass a server on POSIX (HOME is the server's own here).
MCP_PASS_ENV = ("LOGNAME", "PATH", "SHELL", "TERM", "USER")
PASS_ENV_VARIABLE = "REFERENCE_HOST_WORKER_ENV"
NEVER_PASSED = frozenset({"OPENAI_API_KEY", "REFERENCE_HOST_TOKEN"})
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\*?$")
SECRET_LOOKING = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|PRIVATE", re.I)


class WorkerEnvError(ValueError):
    """A pass-through name that is not a variable name (or a `PREFIX*` pattern)."""


def check_names(names: Iterable[str]) -> tuple[str, ...]:
    """The names as given, or WorkerEnvError naming the first bad one."""
    checked = tuple(names)
    for name in checked:
        if not NAME.match(name):
            shown = name if len(name) <= 80 else f"{name[:80]}..."
            raise WorkerEnvError(
                f"worker environment: {shown!r} is not a variable name (letters, digits, _; "
                "a trailing * passes every variable with that prefix)"
            )
        if name.upper() in NEVER_PASSED:
            raise WorkerEnvError(
                f"worker environment: {name} is the host's own secret (model key or token)"
            )
    return checked


def configured_names(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The names REFERENCE_HOST_WORKER_ENV lists (bad entries are ignored: the variable is
    read by every worker start, where there is nobody to tell)."""
    raw = environ.get(PASS_ENV_VARIABLE, "")
    return tuple(n for n in (part.strip() for part in raw.split(",")) if NAME.match(n))


def passed_through(
    environ: Mapping[str, str],
    extra: Iterable[str] = (),
    defaults: Iterable[str] = DEFAULT_PASS_ENV,
) -> dict[str, str]:
    """The variables of environ a worker may see: the defaults (FengYu's list, or the MCP
    clients' for a server), extra, and the configured names (a pattern never admits a name
    that looks like a credential)."""
    names = (*defaults, *extra, *configured_names(environ))
    exact = {n for n in names if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))

    def passes(key: str) -> bool:
        if key.upper() in NEVER_PASSED:
            return False
        if key in exact:
            return True
        return bool(prefixes) and key.startswith(prefixes) and not SECRET_LOOKING.search(key)

    return {key: value for key, value in environ.items() if passes(key)}
