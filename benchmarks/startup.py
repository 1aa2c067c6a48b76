"""Section 8: what installing the kit costs pytest runs, with and without --plugin-dir.

Import cost: a pytest run in an empty folder (one trivial test) counts the modules it has
imported at its end, with the kit installed and with `-p no:conformance`; the difference is
what every run of a plugin author's own tests pays for having the kit installed.

Start-up + collection: `pytest --plugin-dir sample_plugins/fan.summer.excel --collect-only`
against the same collection without the kit (`-p no:conformance`, an empty folder), both
without the pytest plugins of this project's test extra (common.NOT_AN_AUTHORS).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from benchmarks.common import NOT_AN_AUTHORS, REPO, Row, Settings, median, run_kit_process

SECTION = "8 kit start-up"
PLUGIN = REPO / "sample_plugins" / "fan.summer.excel"
TARGET_MODULES = 25  # at most this many more modules with the kit installed
OURS = ("conformance.", "reference_host", "plugin_spec.")
# The kit's own modules a run without --plugin-dir may import: its options, nothing else.
HEAVY = ("reference_host", "conformance.checks", "conformance.kit", "conformance.fengyu")
RUN_TIMEOUT = 120.0
COUNT = (
    "import json, sys, pytest\n"
    "pytest.main(sys.argv[1:])\n"
    "print('MODULES ' + json.dumps(sorted(sys.modules)))\n"
)


def imported(folder: Path, *extra: str) -> list[str]:
    """The modules a pytest run of folder has imported when it ends."""
    argv = [sys.executable, "-c", COUNT, str(folder), "-q", "-p", "no:cacheprovider", *extra]
    _, lines = run_kit_process(argv, RUN_TIMEOUT)
    line = next(line for line in lines if line.startswith("MODULES "))
    return list(json.loads(line.removeprefix("MODULES ")))


def collect_seconds(argv: list[str], runs: int) -> float:
    return median([run_kit_process(argv, RUN_TIMEOUT)[0] for _ in range(runs)])


def run(settings: Settings) -> tuple[list[Row], list[str]]:
    runs = 1 if settings.quick else 5
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        (folder / "test_one.py").write_text("def test_one():\n    pass\n")
        with_kit = imported(folder)
        without = imported(folder, "-p", "no:conformance")
        pytest_only = [sys.executable, "-m", "pytest", str(folder), "--collect-only", "-q"]
        bare = collect_seconds([*pytest_only, "-p", "no:conformance", *NOT_AN_AUTHORS], runs)
    kit_argv = [sys.executable, "-m", "pytest", "--plugin-dir", str(PLUGIN.relative_to(REPO))]
    kit = collect_seconds([*kit_argv, "--collect-only", "-q", *NOT_AN_AUTHORS], runs)
    added = sorted(set(with_kit) - set(without))
    heavy = [m for m in added if m.startswith(HEAVY)]
    rows = [
        Row(
            SECTION,
            "modules a pytest run without --plugin-dir imports: kit installed",
            len(with_kit),
            "-p no:conformance",
            len(without),
            unit="modules",
            target=f"<= +{TARGET_MODULES}, none of the host or checks",
            met=len(added) <= TARGET_MODULES and not heavy,
            note=f"+{len(added)}: {', '.join(added)}",
        ),
        Row(
            SECTION,
            "start-up + collection of the Excel sample (--collect-only)",
            kit,
            "pytest alone, collecting an empty folder",
            bare,
            unit="s",
            note="both without the test extra's pytest plugins (schemathesis, respx, anyio)",
        ),
    ]
    notes = [f"start-up: {' '.join(kit_argv[1:])} --collect-only, median of {runs}"]
    return rows, notes
