"""Real files for file-class parameters, handed to the worker as granted FileRefs.

A plugin may ship example inputs in `conformance/examples/<tool name>/` (an .xlsx for an
Excel tool, say; regular files only, anything else there is left out); otherwise the kit
writes a small text file. Examples are copied into the
run's scratch folder first, so a worker that writes where it should only read cannot touch
the plugin repo. Writable directories are fresh empty folders, one per call.

The scratch folder is gone once the run ends, so a finding's reproduction makes the tool's
files again, in a new temporary folder of its own (`$w`), before it sends the request.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import tempfile
import uuid
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from plugin_spec.filerefs import Access, FileClass, FileKind, FileRef
from reference_host.process.identity import give

EXAMPLES = Path("conformance") / "examples"
DEFAULT_INPUT = "conformance kit input"  # the one line of the file handed without examples
REPRODUCE = "reproduce: "


def _not_files(folder: str, names: list[str]) -> set[str]:
    """Entries that are neither files nor folders (FIFOs, sockets, devices, broken links):
    copying a FIFO would wait for a writer, so examples are regular files only."""
    skipped = set()
    for name in names:
        try:
            mode = os.stat(os.path.join(folder, name)).st_mode
        except OSError:
            skipped.add(name)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            skipped.add(name)
    return skipped


class ToolFiles:
    """The files one tool's checks may use, and the grants that resolve their FileRefs."""

    def __init__(self, plugin_root: Path, tool: str, workdir: Path) -> None:
        self.workdir = workdir
        self.inputs = workdir / "inputs"
        source = plugin_root / EXAMPLES / tool
        self.source = source if source.is_dir() else None
        if source.is_dir():
            shutil.copytree(source, self.inputs, ignore=_not_files, dirs_exist_ok=True)
        else:
            self.inputs.mkdir(parents=True, exist_ok=True)
            (self.inputs / "input.txt").write_text(f"{DEFAULT_INPUT}\n", encoding="utf-8")
        self.files = sorted(p for p in self.inputs.rglob("*") if p.is_file())
        # The kit's copies, the sandbox's own where it runs as another id: a tool that writes
        # to its input is seen doing it (FY-EFF), as where the worker is the file's owner.
        for path in (self.inputs, *self.inputs.rglob("*")):
            give(path)
        self.grants: dict[str, Path] = {}
        self.writable: list[Path] = []

    def as_shipped(self, text: str) -> str:
        """text with the tool's scratch folder named $w, and its last reproduce line made
        self-contained: the scratch folder is gone after the run, so the command first makes
        $w, a new temporary folder, with the files the kit handed the tool (the plugin's
        examples copied, never handed in place: a tool that writes to its input would
        change them) and the writable folders the request names."""
        lines = text.split("\n")
        last = max((i for i, line in enumerate(lines) if line.startswith(REPRODUCE)), default=-1)
        return "\n".join(
            REPRODUCE + self._recreating(line[len(REPRODUCE) :])
            if index == last
            else self._named(line)
            for index, line in enumerate(lines)
        )

    def _named(self, line: str) -> str:
        """line with the scratch folder, as a path or inside a JSON string, named $w."""
        for prefix in {f"{self.workdir}/", f"{_in_json(str(self.workdir))}/"}:
            line = line.replace(prefix, "$w/")
        return line

    def _recreating(self, command: str) -> str:
        """command (a request piped to the worker, its JSON single-quoted) preceded by what
        makes $w and with each path into the scratch folder spliced in as "$w"/..."""
        prefix = _in_json(str(self.workdir)).replace("'", "'\"'\"'") + "/"
        if prefix not in command:
            return command
        named = re.findall(re.escape(prefix) + r"([\w.-]+)", command)
        folders = ['"$w/inputs"'] + [
            f'"$w"/{shlex.quote(name)}' for name in dict.fromkeys(named) if name != "inputs"
        ]
        if self.source is not None:
            fill = f'cp -RL {shlex.quote(str(self.source))}/. "$w/inputs"'
        else:
            fill = f"printf '%s\\n' {shlex.quote(DEFAULT_INPUT)} > \"$w/inputs/input.txt\""
        spliced = command.replace(prefix, "'\"$w\"'/")
        return f"w=$(mktemp -d) && mkdir -p {' '.join(folders)} && {fill} && {spliced}"

    def ref(self, path: Path, kind: FileKind, access: Access) -> FileRef:
        """A FileRef granted for this run, as the host would put it in the params."""
        ref_id = f"ref_{uuid.uuid4()}"
        self.grants[ref_id] = path
        size = path.stat().st_size if path.is_file() else 0
        return FileRef(id=ref_id, name=path.name, kind=kind, access=access, size=size)

    def value(self, file_class: FileClass, draw: Any) -> Any:
        """A FileRef (or a list of them) of the right kind for file_class."""
        if file_class is FileClass.READ_FILE:
            return self.ref(draw(st.sampled_from(self.files)), "file", Access.READ)
        if file_class is FileClass.READ_DIRECTORY:
            return self.ref(self.inputs, "directory", Access.READ)
        if file_class is FileClass.WRITE_DIRECTORY:
            out = self._output_folder()
            self.writable.append(out)
            return self.ref(out, "directory", Access.WRITE)
        chosen = draw(st.lists(st.sampled_from(self.files), min_size=1, max_size=3))
        return [self.ref(path, "file", Access.READ) for path in chosen]

    def substitute(
        self,
        params: Any,
        classes: dict[str, FileClass],
        draw: Any,
        keep: AbstractSet[str] = frozenset(),
    ) -> Any:
        """params with each present file-class parameter (but those in keep) given a FileRef."""
        if not isinstance(params, dict):
            return params
        return {
            name: self.value(classes[name], draw) if name in classes and name not in keep else value
            for name, value in params.items()
        }

    def fresh_outputs(self, params: Any) -> Any:
        """params with every folder granted writable replaced by a new empty one, so that a
        repeated call does not find the first call's output."""
        if isinstance(params, dict):
            return {k: self.fresh_outputs(v) for k, v in params.items()}
        if isinstance(params, list):
            return [self.fresh_outputs(v) for v in params]
        if isinstance(params, str) and Path(params) in self.writable:
            out = self._output_folder()
            self.writable.append(out)  # granted writable as the first: its writes are allowed
            return str(out)
        return params

    def _output_folder(self) -> Path:
        """A new empty folder to grant writable, the sandbox's own where it runs as another
        id (reference_host/process/identity.py), as a host's staging folder is."""
        out = Path(tempfile.mkdtemp(prefix="out-", dir=self.workdir))
        give(out)
        return out


def _in_json(text: str) -> str:
    """text as it stands inside a JSON string of a reproduction (escapes, no quotes)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]
