"""The README stays short and true: at most 250 lines; a quick start of two commands, the first
of which installs the kit without the test extra and still has what the sample plugin's worker
imports; a failure example that is what the kit prints; and the rest in docs/, reachable from
the README and from docs/README.md."""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO, run_pytest
from tests.docs.markdown_links import links
from tests.docs.shown_output import difference

README = REPO / "README.md"
MAX_LINES = 250


def quick_start_commands() -> list[str]:
    """The commands of the README's Quick start section: its fenced blocks, checked to be two
    `sh` blocks of one line each."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```(\w*)\n(.*?)\n```$", section, re.M | re.S)
    assert [language for language, _ in blocks] == ["sh", "sh"], (
        "the quick start is exactly two sh blocks"
    )
    assert all("\n" not in command for _, command in blocks), "each block is one command"
    return [command for _, command in blocks]


def steps(command: str) -> list[list[str]]:
    """A `a && b && c` command line as its steps, each split like a shell would."""
    return [shlex.split(step) for step in command.split("&&")]


def pip_install_arguments(command: str) -> list[str]:
    (arguments,) = [s[2:] for s in steps(command) if s[:2] == ["pip", "install"]]
    return arguments


def test_the_readme_is_at_most_250_lines() -> None:
    count = len(README.read_text(encoding="utf-8").splitlines())
    assert count <= MAX_LINES, f"README.md has {count} lines: move detail to docs/guide/"


def test_the_quick_start_installs_without_the_test_extra_first() -> None:
    """The first command runs the kit on a sample plugin from the kit's plain install (the test
    extra brings linters, a type checker and a browser driver, and is slow); the second runs
    the project's tests, which need the test extra."""
    run_the_kit, run_the_tests = quick_start_commands()
    install = pip_install_arguments(run_the_kit)
    assert install[:2] == ["-e", "."], install
    assert not any("[" in argument for argument in install), f"an extra in {install}"
    assert steps(run_the_kit)[-1][:2] == ["pytest", "--plugin-dir"]
    assert pip_install_arguments(run_the_tests) == ["-e", ".[test]"]
    assert steps(run_the_tests)[-1] == ["pytest"]


def installed_by(arguments: list[str]) -> set[str]:
    """The distributions `pip install ARGUMENTS` puts in a fresh venv: the project without
    extras (read from pyproject.toml), the other named requirements, and everything they
    require in turn (read from the installed metadata of this venv)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pending = [Requirement(r) for r in project["dependencies"]]
    pending += [Requirement(a) for a in arguments[2:] if not a.startswith("-")]
    found: set[str] = set()
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        found.add(name)
        for line in metadata.requires(requirement.name) or []:
            needed = Requirement(line)
            if needed.marker is None or needed.marker.evaluate({"extra": ""}):
                pending.append(needed)
    return found


def third_party_imports(backend: Path) -> set[str]:
    """Top-level modules the worker's Python files import that neither the standard library,
    the backend folder itself nor the project's own packages provide."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]
    own = {Path(entry).stem for entry in wheel["only-include"]}
    local = {p.stem for p in backend.iterdir()}
    modules: set[str] = set()
    for source in backend.rglob("*"):
        if not source.is_file() or source.suffix not in {".py", ""}:
            continue
        text = source.read_text(encoding="utf-8", errors="replace")
        if source.suffix == "" and not text.startswith("#!/usr/bin/env python"):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - own - local


def test_the_plain_install_has_what_the_sample_worker_imports() -> None:
    """What the first command installs is enough for the sample plugin it checks: a module the
    worker imports that only the test extra installs would fail FY-WRK-001 on a fresh machine
    (the worker exits at its import) while passing here, where the test extra is installed."""
    run_the_kit = quick_start_commands()[0]
    plugin = REPO / steps(run_the_kit)[-1][2]
    provided = installed_by(pip_install_arguments(run_the_kit))
    distributions = metadata.packages_distributions()
    missing = {
        module: distributions.get(module, ["?"])
        for module in sorted(third_party_imports(plugin / "backend"))
        if not provided & {canonicalize_name(d) for d in distributions.get(module, [])}
    }
    assert missing == {}, (
        f"the quick start's first command does not install what {plugin.name}'s worker imports "
        "(module: distributions)"
    )


def test_the_readme_and_the_docs_index_link_every_page() -> None:
    """No page under docs/ is an orphan: the index links every guide, tutorial and spec page,
    and the README links the index and every guide."""
    docs = REPO / "docs"
    index = {(docs / t.partition("#")[0]).resolve() for t in links(docs / "README.md")}
    pages = {p.resolve() for p in docs.rglob("*.md")} - {(docs / "README.md").resolve()}
    assert sorted(str(p.relative_to(docs)) for p in pages - index) == []
    from_readme = {(REPO / t.partition("#")[0]).resolve() for t in links(README)}
    guides = {p.resolve() for p in (docs / "guide").glob("*.md")}
    assert (docs / "README.md").resolve() in from_readme
    assert sorted(p.name for p in guides - from_readme) == []


def shown_failure() -> str:
    """The README's failure example, from pytest's FAILURES rule to its short summary."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## What a run looks like\n", 1)[1].split("\n## ", 1)[0]
    (console,) = re.findall(r"^```console\n(.*?)\n```$", section, re.M | re.S)
    return failure_part(console)


def failure_part(output: str) -> str:
    start = output.index("== FAILURES ==")
    start = output.rindex("\n", 0, start) + 1
    return output[start : output.index("short test summary info", start)]


def test_the_failure_shown_is_what_the_kit_prints(tmp_path: Path) -> None:
    """The README's example is the kit's output on the markdown sample with one aiTool's
    method renamed, run as the README shows it (80-odd columns, outside CI). Shown as run in
    /tmp/demo; the shown-output rules of the tutorials apply (`...`, rule lengths)."""
    plugin = tmp_path / "markdown"
    shutil.copytree(
        REPO / "sample_plugins" / "fan.summer.markdown",
        plugin,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    manifest = plugin / "manifest.json"
    text = manifest.read_text(encoding="utf-8")
    wiring = text.index('"method": "render"', text.index('"aiTools"'))
    manifest.write_text(
        text[:wiring] + '"method": "renderGhost"' + text[wiring + len('"method": "render"') :],
        encoding="utf-8",
    )
    environment = {k: v for k, v in os.environ.items() if k != "CI"} | {"COLUMNS": "88"}
    run = run_pytest(
        tmp_path, "--plugin-dir", "markdown", "-p", "no:cacheprovider", env=environment, timeout=300
    )
    assert run.returncode == 1, run.stdout + run.stderr
    printed = failure_part(run.stdout).replace(str(plugin), "/tmp/demo/markdown")
    problem = difference(shown_failure(), printed, "README.md")
    assert problem is None, problem
