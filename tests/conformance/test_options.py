"""One declaration of the kit's options (conformance/options.py) serves the flags, the run,
the rerun lines and the options page: each is checked against it here."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from conformance.baseline import Baseline
from conformance.deadlines import Deadlines
from conformance.kit import KitRun
from conformance.options import ALL_SUITES, KitOptions, OptionError
from tests.conftest import REPO

OPTIONS_PAGE = REPO / "docs" / "guide" / "options.md"
# Values unlike every default, so that each one is written in a rerun line and read back.
CHANGED = KitOptions(
    plugin_dirs=("a", "b"),
    strict=True,
    baseline="base line.json",
    providers=frozenset({"gemini", "openai"}),
    report="out/report",
    worker_cmd="-python3 backend/serve.py",
    worker_env=("PYTHONPATH", "LANG*"),
    worker_limits=("processes=512", "data=2G"),
    examples=7,
    seed=42,
    deadline_scale=0.25,
    base_url="http://127.0.0.1:9",
    tenant="t 1",
    actor="bob",
    previous="git:v1",
    mcp_roots=("shared", "out/more"),
    examples_file="known good.json",
)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The options read here are the ones given, not the tests' deadline scale (conftest's
    pytester puts it in PYTEST_ADDOPTS for kit runs)."""
    monkeypatch.delenv("PYTEST_ADDOPTS")
    return pytester


def test_every_field_declares_a_flag_with_help() -> None:
    for name, flag in KitOptions.flags():
        assert flag.name.startswith("--") and flag.help, name
        assert set(flag.suites) <= set(ALL_SUITES), name
    assert len({flag.name for _, flag in KitOptions.flags()}) == len(fields(KitOptions))


@pytest.mark.parametrize("suite", ALL_SUITES)
def test_a_rerun_line_reads_back_as_the_options_the_suite_ran_with(
    pytester: pytest.Pytester, suite: str
) -> None:
    """to_argv() then from_config() gives back each option that changes the suite's items."""
    argv = CHANGED.to_argv(suite, pytester.path)
    again = KitOptions.from_config(pytester.parseconfig(*argv))

    for name, flag in KitOptions.flags():
        expected = getattr(CHANGED, name)
        if flag.path and flag.repeat:
            expected = tuple(str(pytester.path / one) for one in expected)
        elif flag.path and not str(expected).startswith("git:"):
            expected = str(pytester.path / expected)
        if name in ("seed", "derandomize"):
            continue  # below; derandomize is on wherever CI is set
        if suite in flag.suites:
            assert getattr(again, name) == expected, name
        else:
            assert getattr(again, name) == getattr(KitOptions(), name), name
    assert again.seed == (CHANGED.seed if suite in ("tools", "endpoints") else None)


def test_the_seed_of_a_failing_search_is_written_when_none_was_given(tmp_path: Path) -> None:
    argv = KitOptions(derandomize=True).to_argv("tools", tmp_path, seed=9)
    assert argv == ["--conformance-examples", "25", "--conformance-seed", "9"]
    assert KitOptions(derandomize=True).to_argv("tools", tmp_path) == [
        "--conformance-examples",
        "25",
        "--conformance-derandomize",
    ]


def test_the_ini_file_gives_defaults_the_command_line_overrides(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nconformance_worker_cmd = python3 w.py\nconformance_examples = 9\n"
        "conformance_worker_env =\n    A\n    B*\n"
    )
    from_ini = KitOptions.from_config(pytester.parseconfig())
    assert (from_ini.worker_cmd, from_ini.examples, from_ini.worker_env) == (
        "python3 w.py",
        9,
        ("A", "B*"),
    )
    given = KitOptions.from_config(pytester.parseconfig("--worker-cmd", "x", "--worker-env", "C"))
    assert (given.worker_cmd, given.worker_env) == ("x", ("C",))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--conformance-provider", "openai,mistral"], "unknown provider mistral"),
        (["--conformance-examples", "0"], "0 is not at least 1"),
        (["--conformance-deadline-scale", "0"], "0 is not a number above 0 and at most 100"),
        (["--conformance-deadline-scale", "inf"], "inf is not a number above 0 and at most 100"),
        (["--conformance-deadline-scale", "1000"], "1000 is not a number above 0 and at most 100"),
        (["--conformance-deadline-scale", "nan"], "nan is not a number above 0 and at most"),
        (["--conformance-deadline-scale", "soon"], "'soon' is not a number"),
        (["--worker-limit", "cpu=2"], "NAME one of processes, open-files, data"),
        (["--worker-limit", "data=lots"], "'lots' is not a number"),
    ],
)
def test_a_value_the_kit_cannot_run_with_is_an_option_error(
    pytester: pytest.Pytester, argv: list[str], message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        KitOptions.from_config(pytester.parseconfig(*argv))


def test_worker_limits_are_the_host_defaults_with_those_given(pytester: pytest.Pytester) -> None:
    """--worker-limit moves a bound of the kit's workers and MCP servers as the host's does
    (reference_host/process/bounds.py), the last of a name winning."""
    given = KitOptions.from_config(
        pytester.parseconfig("--worker-limit", "data=1M", "--worker-limit", "open-files=64")
    )
    assert given.worker_limits == ("data=1M", "open-files=64")
    assert (given.bounds.data_bytes, given.bounds.open_files, given.bounds.processes) == (
        1024 * 1024,
        64,
        256,
    )
    assert KitOptions().bounds == KitOptions.from_config(pytester.parseconfig()).bounds


def test_the_options_page_has_one_heading_per_flag_as_the_help_spells_it() -> None:
    """docs/guide/options.md names each flag with its metavar in a heading, and no other."""
    headings = re.findall(r"^### (.+)$", OPTIONS_PAGE.read_text(), re.MULTILINE)
    documented = {part for heading in headings for part in re.findall(r"`([^`]+)`", heading)}
    declared = {
        f"{flag.name} {flag.metavar}" if flag.metavar and not flag.switch else flag.name
        for _, flag in KitOptions.flags()
    }
    assert documented == declared


def test_the_options_page_lists_every_deadline_with_its_default() -> None:
    """docs/guide/options.md#deadlines: one row per Deadlines field, its default as the kit
    has it, so what a user reads is what a run waits."""
    rows = re.findall(r"^\| `(\w+)` \| ([\d.]+) \|", OPTIONS_PAGE.read_text(), re.MULTILINE)
    assert [(name, float(default)) for name, default in rows] == [
        (f.name, getattr(Deadlines(), f.name)) for f in fields(Deadlines)
    ]


def test_the_deadline_scale_reaches_every_deadline_of_the_run(tmp_path: Path) -> None:
    run = KitRun([], Baseline(None), KitOptions(deadline_scale=0.5))
    assert run.deadlines == Deadlines().scaled(0.5)
    assert run.deadlines.eof == Deadlines().eof / 2
    argv = KitOptions(deadline_scale=0.5).to_argv("worker", tmp_path)
    assert argv[argv.index("--conformance-deadline-scale") + 1] == "0.5"
    assert "--conformance-deadline-scale" not in KitOptions().to_argv("worker", tmp_path)
