"""How a worker is started (spec: fengyu-worker.md#starting-the-worker): its command, working
folder and environment."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reference_host.process.environment import passed_through
from reference_host.process.errors import WorkerLaunchError
from reference_host.process.lineage import LINEAGE_VARIABLE

JAR = Path("backend") / "worker.jar"
EXECUTABLE = Path("backend") / "worker"


@dataclass(frozen=True)
class WorkerSpec:
    """Everything needed to (re)start one plugin's worker."""

    plugin_id: str
    root: Path
    argv: tuple[str, ...]
    data_dir: Path
    log_level: str = "INFO"
    call_timeout: float | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    home_dir: Path | None = None

    @property
    def home(self) -> Path:
        """HOME: a folder in the data folder, unless the spec names one (the kit points it at
        a scratch folder it watches, so a read tool writing there is seen)."""
        return self.home_dir if self.home_dir is not None else self.data_dir / "home"

    def prepare_folders(self) -> None:
        """Create the data folder (TMP) and HOME, before every start."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)

    def environment(self, lineage: str | None = None) -> dict[str, str]:
        """What a worker sees (spec: host.md#the-worker-environment; environment.py): the
        allowed part of the host's environment, extra_env, the FENGYU_* variables, TMP in its
        data folder, HOME in there, and the lineage token that marks every process it starts
        (lineage.py)."""
        env = passed_through(os.environ, self.pass_env)
        env.update(self.extra_env)
        data = str(self.data_dir)
        env.update(
            {
                "FENGYU_PLUGIN_ID": self.plugin_id,
                "FENGYU_PLUGIN_ROOT": str(self.root),
                "FENGYU_LOG_LEVEL": self.log_level,
                "TMPDIR": data,
                "TMP": data,
                "TEMP": data,
                "HOME": str(self.home),
            }
        )
        if lineage is not None:
            env[LINEAGE_VARIABLE] = lineage
        return env

    def shell_command(self) -> str:
        """The command as a user would type it in the plugin folder (for reproductions)."""
        env = f"FENGYU_PLUGIN_ID={shlex.quote(self.plugin_id)} FENGYU_PLUGIN_ROOT=."
        return f"cd {shlex.quote(str(self.root))} && {env} {shlex.join(self.argv)}"


def worker_command(root: Path, override: str | Sequence[str] | None = None) -> tuple[str, ...]:
    """The launch command, in the spec's order: the override, backend/worker.jar, backend/worker."""
    if override:
        argv = shlex.split(override) if isinstance(override, str) else list(override)
        return tuple(argv)
    if (root / JAR).is_file():
        java = shutil.which("java")
        if java is None:
            raise WorkerLaunchError(f"{root / JAR} needs java, which is not on PATH")
        return (java, "-jar", str(JAR))
    executable = root / EXECUTABLE
    if executable.is_file():
        if not os.access(executable, os.X_OK):
            raise WorkerLaunchError(f"{executable} is not executable (chmod +x it)")
        return (str(executable),)
    raise WorkerLaunchError(
        f"no worker in {root}: expected {JAR}, an executable {EXECUTABLE}, or --worker-cmd"
    )
