"""A plugin's or server's words reach the kit's output (stderr tails, tool names, error
messages), and must be shown, not acted on: an ESC sequence there could erase lines of the
report or print a fake PASSED, a bidirectional override could reorder what a reviewer reads."""

from __future__ import annotations

import sys

import pytest

from conformance.findings import Finding, printable
from conformance.kit import Verdict

ATTACK = "\x1b[2K\x1b[1A\x1b[32m=== 40 passed ===\x1b[0m\r\u202eevil\x9b"


def test_controls_are_written_as_escapes() -> None:
    shown = printable(f"line one\n\tline two {ATTACK}")
    assert shown.startswith("line one\n\tline two ")  # layout kept
    assert not any(c in shown for c in "\x1b\r\u202e\x9b")
    assert "\\x1b[2K" in shown and "\\u202e" in shown


def test_a_name_stays_on_one_line() -> None:
    assert printable("add\nconformance::FAKE PASSED\t", one_line=True) == (
        "add\\nconformance::FAKE PASSED\\t"
    )


def test_findings_hold_no_controls() -> None:
    finding = Finding("MCP-LIF-001", ATTACK, f"mcp.x{ATTACK}", fix=ATTACK)
    assert not any(c in f"{finding.message}{finding.location}{finding.fix}" for c in "\x1b\r")


def test_a_servers_stderr_reaches_the_terminal_escaped(pytester: pytest.Pytester) -> None:
    """A server that dies printing escape sequences to stderr: its MCP-LIF-001 failure quotes
    them, escaped."""
    script = pytester.path / "dies.py"
    script.write_text(f"import sys\nsys.stderr.write({ATTACK!r} + '\\n')\nsys.exit(1)\n")
    result = pytester.runpytest("--mcp-command", f"{sys.executable} {script}", "-m", "lifecycle")
    output = result.stdout.str()
    assert "MCP-LIF-001" in output and "\\x1b[2K" in output
    assert "\x1b" not in output and "\u202e" not in output


def test_settings_from_the_checked_folder_are_refused(pytester: pytest.Pytester) -> None:
    """A plugin's own pytest.ini decides what the run does: the run stops with a usage error
    (tests/security/test_checked_settings.py), which quotes the file's words escaped."""
    attack = ATTACK.replace("\r", "")  # a line break would end the ini value
    pytester.makeini(f"[pytest]\naddopts = -p no:cacheprovider -k {attack}\n")
    script = pytester.path / "server.py"
    script.write_text("import sys\nsys.exit(1)\n")
    result = pytester.runpytest("--mcp-command", f"{sys.executable} {script}", "-m", "lifecycle")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*conformance: pytest's settings come from *tox.ini*, inside*"])
    error = result.stderr.str()
    assert "\\x1b[2K" in error and "\x1b" not in error and "\u202e" not in error


def test_skip_reasons_hold_no_controls() -> None:
    """A reason quotes a server's words too (a refusal, a stderr tail), and is printed in the
    run's summary and reports as well as on the skip."""
    assert "\x1b" not in Verdict.skipped(f"the server said {ATTACK}", ()).reason
