"""One declaration of the host's options (reference_host/options.py) serves the command line,
the HostConfig and the options section of docs/guide/reference-host.md: each is checked
against it here, as tests/conformance/test_options.py does for the kit's."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from reference_host.host import HostConfig
from reference_host.http.access import TOKEN_ENV
from reference_host.options import HostOptions, build_parser
from tests.conftest import REPO

PAGE = REPO / "docs" / "guide" / "reference-host.md"
SPEC = REPO / "docs" / "spec" / "host.md"
# HostConfig fields made of several options, and those no option sets (the kit's, or tests').
MADE = {"approval", "allowed_hosts", "token"}
NOT_OPTIONS = {"log_level", "worker_commands", "sandbox"}
# A flag the spec names that is another program's: bubblewrap's, in the worker sandbox.
OTHER_PROGRAMS = {"--die-with-parent"}
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# A value unlike the default for each option HostConfig takes as is.
GIVEN = [
    "--data-dir=~/host-data",
    "--db=~/host.db",
    "--allow-root=/srv/a",
    "--allow-root=/srv/b",
    "--turn-time-limit=90",
    "--web-fetch-allow=intranet.example:8080",
    "--erp-base-url=http://127.0.0.1:9",
    "--actors=~/actors.json",
    "--worker-env=LANG*",
    "--worker-limit=data=2G",
    "--max-body-bytes=2048",
    "--max-read-copies=3",
    "--max-read-copy-bytes=4096",
    "--max-copy-bytes=1024",
]


def serve_help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    return capsys.readouterr().out


def options_section() -> str:
    return PAGE.read_text(encoding="utf-8").split("\n## Options\n", 1)[1].split("\n## ", 1)[0]


def test_every_option_has_one_flag_with_help_as_serve_help_spells_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = serve_help(capsys)
    for name, flag in HostOptions.flags():
        assert flag.name.startswith("--") and flag.help, name
        assert f"  {flag.usage}" in shown, flag.usage
    names = [flag.name for _, flag in HostOptions.flags()]
    assert len(set(names)) == len(names) == len(fields(HostOptions))
    assert set(FLAG.findall(shown)) == {*names, "--help"}


def test_the_copied_options_are_host_config_fields_of_the_same_name_type_and_default() -> None:
    """A flag's `config` is the HostConfig field it fills as is; every other HostConfig field
    is made of several options or set by no option, so a new field must be placed here."""
    config = {f.name: f for f in fields(HostConfig)}
    options = {f.name: f for f in fields(HostOptions)}
    copied = {name for name, flag in HostOptions.flags() if flag.config is not None}
    for name in copied:
        flag = options[name].metadata["flag"]
        assert flag.config == name, name
        assert options[name].type == config[name].type, name
        if config[name].default is not MISSING:
            assert options[name].default == config[name].default, name
    assert copied | MADE | NOT_OPTIONS == set(config)
    assert not copied & (MADE | NOT_OPTIONS)


def test_the_host_config_holds_each_value_given() -> None:
    options = HostOptions.from_args(build_parser().parse_args(["serve", *GIVEN]))
    config = options.host_config("t" * 16)
    for name, flag in HostOptions.flags():
        if flag.config is not None:
            assert getattr(config, name) == getattr(options, name), name
            assert getattr(options, name) != getattr(HostOptions(), name), name
    assert config.data_dir == Path.home() / "host-data"
    assert config.allowed_roots == (Path("/srv/a"), Path("/srv/b"))
    assert config.worker_limits.data_bytes == 2 * 1024**3
    assert (config.token, config.allowed_hosts) == ("t" * 16, options.allowed_hosts)
    defaults = HostOptions.from_args(build_parser().parse_args(["serve"])).host_config(None)
    assert defaults == HostConfig(Path.home() / ".reference_host", token=None)


@pytest.mark.parametrize(
    ("argv", "environ", "token"),
    [
        ([], {}, None),
        ([], {TOKEN_ENV: "from-the-environment"}, "from-the-environment"),
        (["--token", "given"], {TOKEN_ENV: "from-the-environment"}, "given"),
        (["--no-token"], {TOKEN_ENV: "from-the-environment"}, None),
    ],
)
def test_the_token_falls_back_to_its_environment_variable(
    argv: list[str], environ: dict[str, str], token: str | None
) -> None:
    args = build_parser().parse_args(["serve", *argv])
    assert HostOptions.from_args(args, environ).given_token == token


def test_the_options_section_has_one_heading_per_flag_as_the_help_spells_it() -> None:
    """docs/guide/reference-host.md names each flag with its metavar in a heading of its
    Options section, in the order of `serve --help`, and names each one's variable."""
    section = options_section()
    headings = re.findall(r"^### `([^`]+)`$", section, re.MULTILINE)
    assert headings == [flag.usage for _, flag in HostOptions.flags()]
    for _, flag in HostOptions.flags():
        if flag.env is not None:
            text = section.split(f"### `{flag.usage}`\n", 1)[1].split("\n### ", 1)[0]
            assert f"`{flag.env}`" in text, flag.name


@pytest.mark.parametrize("page", [PAGE, SPEC], ids=lambda page: page.name)
def test_the_host_pages_name_no_flag_the_host_lacks(page: Path) -> None:
    declared = {"--help", *(flag.name for _, flag in HostOptions.flags())}
    named = set(FLAG.findall(page.read_text(encoding="utf-8"))) - OTHER_PROGRAMS
    assert named <= declared, sorted(named - declared)
