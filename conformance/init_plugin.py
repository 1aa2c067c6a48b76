"""`plugin-conformance init fengyu|erp DIR [--id ID]`: a new plugin that passes the kit in
strict mode on its first run, with a CI workflow and a README.

The templates are the folders of conformance/scaffold; names and contents carry
placeholders (`__PLUGIN_ID__`, ...) replaced as they are copied, and a `.tmpl` suffix keeps
a template's Python out of the kit's own linting and type checks. A FengYu plugin also gets
the worker SDK, copied from the fengyu_worker module itself: one source, so the scaffold
holds no copy of it to fall behind.

The workflow and the README install the kit from where the running kit came from, read from
its distribution's PEP 610 `direct_url.json` (a git URL and commit, an archive), or from the
source `--kit-source` names: the package index has no ai-plugin-conformance, so a bare
`pip install ai-plugin-conformance` would fail in CI. A kit that came from a folder of this
machine (an editable checkout) reaches no runner: init then vendors its wheel into the
plugin's `.conformance/` (vendor.py), and the workflow installs that file."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import urlsplit

import fengyu_worker
from conformance.package_data import SCAFFOLD
from conformance.vendor import DISTRIBUTION, INSTALL, vendor

PROFILES = ("fengyu", "erp")
# FengYu ids are dotted or hyphenated lower-case words; an ERP id becomes a toolCode's first
# segment and a namespace path segment, so it has no dots.
ID_PATTERNS = {
    "fengyu": re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)+$"),
    "erp": re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$"),
}
# Where each profile's plugin vendors the worker SDK (FengYu runs backend/worker.py, whose
# folder is the first place Python looks for an import).
VENDORED_SDK = {"fengyu": Path("backend") / "fengyu_worker.py"}

# Source URLs pip installs the kit from: a VCS URL (git+https://...@REF), an archive or a
# local folder's file:// URL.
URL = re.compile(r"^(?:[a-z]+\+)?[a-z]+://\S+$")
PLACEHOLDER = re.compile(r"<[^<>]*>|__[A-Z_]+__")


class InitError(Exception):
    """The plugin cannot be created there, or with that id; the message says why."""


@dataclass(frozen=True)
class KitSource:
    """Where the plugin's CI installs the kit from: a PEP 508 requirement pip understands.

    warning is set when the source does not reach beyond this machine (a local folder or
    file), so the generated workflow would fail on a CI runner; local is set for such a
    source. vendored: the workflow installs the wheel init writes into `.conformance/`."""

    requirement: str
    warning: str | None = None
    local: bool = False
    vendored: bool = False

    @property
    def install(self) -> str:
        """The shell command that installs the kit, as the workflow and README run it."""
        return INSTALL if self.vendored else f"pip install {shlex.quote(self.requirement)}"


VENDORED = KitSource(INSTALL.removeprefix("pip install "), vendored=True)


def kit_source(explicit: str | None = None) -> KitSource:
    """The source `--kit-source` names, or else the one the running kit was installed from
    (its vendored wheel, where that is a folder of this machine only)."""
    if explicit is not None:
        return source_from_option(explicit)
    try:
        found = distribution(DISTRIBUTION)
    except PackageNotFoundError:
        raise InitError(
            f"the running kit is not an installed {DISTRIBUTION} distribution, so there is no "
            "source to install it from in CI: pass --kit-source (a git URL with a commit or "
            "tag, e.g. git+https://github.com/OWNER/ai-plugin-conformance@v0.1.0)"
        ) from None
    direct_url = found.read_text("direct_url.json")
    if direct_url is None:  # from a package index: the same index will have it again
        return KitSource(f"{DISTRIBUTION}=={found.version}")
    source = source_from_direct_url(json.loads(direct_url))
    return VENDORED if source.local else source


def source_from_direct_url(data: dict[str, object]) -> KitSource:
    """The requirement that installs the same kit again, from PEP 610 direct_url.json data:
    a VCS install pinned to its commit, an archive or a local folder by its URL."""
    url = str(data.get("url", ""))
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict):
        url = f"{vcs.get('vcs', 'git')}+{url}@{vcs.get('commit_id', '')}"
    if isinstance(data.get("subdirectory"), str):
        url += f"#subdirectory={data['subdirectory']}"
    return source_from_url(url)


def source_from_option(value: str) -> KitSource:
    """--kit-source: a URL pip installs (git+https://...@REF, https://.../kit.tar.gz), a
    requirement `ai-plugin-conformance @ URL`, or a local folder of the kit."""
    value = value.strip()
    if PLACEHOLDER.search(value):
        raise InitError(f"--kit-source {value!r} holds a placeholder: name the real source")
    named = re.match(rf"^{re.escape(DISTRIBUTION)}\s*@\s*(\S+)$", value)
    if named:
        return source_from_url(named.group(1))
    if URL.match(value):
        return source_from_url(value)
    if Path(value).is_dir():
        return source_from_url(Path(value).resolve().as_uri())
    raise InitError(
        f"--kit-source {value!r} is neither a URL pip installs (git+https://...@REF, "
        "https://.../kit.tar.gz, file:///...) nor a folder of the kit"
    )


def source_from_url(url: str) -> KitSource:
    if not URL.match(url):
        raise InitError(f"{url!r} is not a URL pip can install the kit from")
    scheme = urlsplit(url).scheme
    warning = None
    local = scheme.endswith("file")
    if local:
        warning = (
            f"the CI workflow installs the kit from {url}, which exists on this machine "
            "only; for CI elsewhere, run init again with --kit-source naming a git URL and "
            "commit (or tag) of the kit that the runner can reach"
        )
    elif "+" in scheme and "@" not in urlsplit(url).path:
        warning = (
            f"{url} names no commit or tag, so each CI run installs whatever its default "
            "branch holds then; append @COMMIT or @TAG to pin the kit the plugin was checked with"
        )
    if "+" in scheme and scheme.endswith("file"):
        # pip before 23.3 refuses `NAME @ git+file://...` (a URL without a host) and takes
        # the bare URL; the source is local either way, as the warning says.
        return KitSource(url, warning, local)
    return KitSource(f"{DISTRIBUTION} @ {url}", warning, local)


def default_id(profile: str, folder: Path) -> str:
    words = re.findall(r"[a-z0-9]+", folder.resolve().name.lower()) or ["plugin"]
    if profile == "erp":
        return "-".join(words)
    return ".".join(words) if len(words) > 1 else f"com.example.{words[0]}"


def placeholders(profile: str, plugin_id: str, source: KitSource) -> dict[str, str]:
    last = re.split(r"[.]", plugin_id)[-1]
    return {
        "__KIT_INSTALL__": source.install,
        "__KIT_SOURCE_NOTE__": (
            "It installs bubblewrap and strace, so the kit sees what the plugin's code does, "
            + (
                "and the kit from `.conformance/`, a wheel of the kit this plugin was made "
                "with (commit it; `plugin-conformance vendor .` replaces it with the kit you "
                "run)."
                if source.vendored
                else f"and the kit from `{source.requirement}`."
            )
        ),
        "__PLUGIN_ID__": plugin_id,
        "__TITLE__": " ".join(w.capitalize() for w in re.split(r"[.-]", last)),
        "__AUTHOR__": "your-name",
        "__TOOL_PREFIX__": (plugin_id if profile == "erp" else last).replace("-", "_"),
        "__PERMISSION_PREFIX__": plugin_id.replace("-", "_").upper(),
    }


def init(
    profile: str, folder: Path, plugin_id: str | None = None, source: KitSource | None = None
) -> list[Path]:
    """Write the plugin into folder (new or empty); returns the files written. Its CI
    installs the kit from source (default: where the running kit came from)."""
    if profile not in PROFILES:
        raise InitError(f"unknown profile {profile!r}: choose {' or '.join(PROFILES)}")
    plugin_id = plugin_id or default_id(profile, folder)
    if not ID_PATTERNS[profile].match(plugin_id):
        raise InitError(
            f"--id {plugin_id!r} is not a {profile} plugin id "
            f"(it must match {ID_PATTERNS[profile].pattern})"
        )
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InitError(f"{folder} exists and is not an empty folder: nothing was written")
    source = source or kit_source()
    values = placeholders(profile, plugin_id, source)
    template = SCAFFOLD / profile
    written = []
    for original in sorted(p for p in template.rglob("*") if p.is_file()):
        relative = _fill(str(original.relative_to(template)), values).removesuffix(".tmpl")
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_fill(original.read_text("utf-8"), values), "utf-8")
        shutil.copymode(original, target)
        written.append(target)
    if profile in VENDORED_SDK:
        target = folder / VENDORED_SDK[profile]
        shutil.copyfile(sdk_source(), target)
        written.append(target)
    if source.vendored:
        written.append(vendor(folder))
    return written


def sdk_source() -> Path:
    """The worker SDK's one file, as a plugin vendors it."""
    return Path(fengyu_worker.__file__).resolve()


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text
