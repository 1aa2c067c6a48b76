"""Files of a package that look like its worker under another name (FY-WRK-012's fix).

FengYu runs one fixed file per runtime (backend/worker.py, backend/worker.jar, backend/worker),
so a worker written as backend/main.py is never started. A fix that only says "build
backend/worker.py" reads as if nothing were there; naming the file that is there says what to
rename.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

SHOWN = 3  # candidates a fix names


def candidates(root: Path, runtime: str, artifact: PurePosixPath) -> list[str]:
    """The package's files, relative to root, that may be the runtime's worker under another
    name: a Python file (or a script run by python) in backend/ for python, a jar in backend/
    or target/ for java, an executable file in backend/ for go; links are left out."""
    found: list[Path] = []
    for folder in ("backend", "target") if runtime == "java" else ("backend",):
        try:
            entries = sorted((root / folder).iterdir())
        except OSError:
            continue
        found += [e for e in entries if _looks_like(e, runtime)]
    return [str(PurePosixPath(p.relative_to(root))) for p in found if p != root / artifact]


def _looks_like(path: Path, runtime: str) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    if runtime == "python":
        return path.suffix == ".py" or (not path.suffix and "python" in _shebang(path))
    if runtime == "java":
        return path.suffix == ".jar"
    return path.suffix in ("", ".exe") and os.access(path, os.X_OK)


def _shebang(path: Path) -> str:
    try:
        with path.open("rb") as file:
            first = file.readline(200)
    except OSError:
        return ""
    return first.decode("utf-8", "replace") if first.startswith(b"#!") else ""


def rename_fix(root: Path, runtime: str, artifact: PurePosixPath) -> str | None:
    """ "found backend/main.py: rename it to backend/worker.py", naming what is there; None
    when the package holds nothing that looks like the worker."""
    found = candidates(root, runtime, artifact)
    if not found:
        return None
    if len(found) == 1:
        return f"found {found[0]}: rename it to {artifact} (FengYu starts no other file)"
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return (
        f"found {', '.join(found[:SHOWN])}{more}: rename the one that runs the worker to "
        f"{artifact} (FengYu starts no other file)"
    )
