"""What the kit needs to start a FengYu plugin's worker the way a host would."""

from __future__ import annotations

from pathlib import Path

from conformance.fengyu.manifest import FENGYU_V1, FengYuPlugin
from plugin_spec.fengyu_decls import call_timeout
from plugin_spec.fengyu_runtime import ARTIFACTS
from reference_host.process.bounds import DEFAULT_LIMITS, WorkerLimits
from reference_host.process.launch import EXECUTABLE, WorkerSpec, manifest_spec
from reference_host.process.timeouts import effective_timeout


def declares_worker(plugin: FengYuPlugin, override: str | None) -> bool:
    """Whether the plugin has a worker to check: declared, shipped, or given on the CLI."""
    data = plugin.data
    rpc = data.get("rpc")
    return bool(
        override
        or isinstance(data.get("backend"), dict)
        or (isinstance(rpc, dict) and rpc.get("methods"))
        or (plugin.root / EXECUTABLE).is_file()
        or any((plugin.root / artifact).is_file() for artifact in ARTIFACTS.values())
    )


def worker_spec(
    plugin: FengYuPlugin,
    override: str | None,
    data_dir: Path,
    pass_env: tuple[str, ...] = (),
    root: Path | None = None,
    hidden: tuple[Path, ...] | None = None,
    bounds: WorkerLimits = DEFAULT_LIMITS,
) -> WorkerSpec:
    """The spec a host would start, in the same sandbox (hidden: the kit's own folders, as
    the host hides its data folder) with the same environment (pass_env: the variables
    passed through) and bounds (--worker-limit), run from root (the kit's copy of the
    plugin); raises WorkerLaunchError
    when there is nothing to start (MissingArtifact when the runtime's file is missing)."""
    return manifest_spec(
        plugin.label,
        root or plugin.root,
        plugin.data,
        data_dir,
        override=override,
        scratch=data_dir.parent.parent / "runtime-bin" / data_dir.name,
        hidden=hidden,
        bounds=bounds,
        call_timeout=call_timeout(plugin.data),
        pass_env=pass_env,
    )


def seconds(value: object) -> float | None:
    """A declared timeout when it is a number (effective_timeout skips anything else)."""
    return value if isinstance(value, int | float) else None


def declared_methods(plugin: FengYuPlugin) -> dict[str, float]:
    """Each declared RPC method with the timeout a host would give it."""
    backend = plugin.data.get("backend")
    default = backend.get("callTimeoutSeconds") if isinstance(backend, dict) else None
    if plugin.profile == FENGYU_V1:
        return {
            t.method: effective_timeout(
                seconds(t.entry.get("timeoutSeconds")), None, seconds(default)
            )
            for t in plugin.tools
            if isinstance(t.method, str)
        }
    rpc = plugin.data.get("rpc")
    methods = rpc.get("methods") if isinstance(rpc, dict) else None
    if not isinstance(methods, dict):
        return {}
    return {
        name: effective_timeout(
            seconds(method.get("timeoutSeconds")) if isinstance(method, dict) else None,
            None,
            seconds(default),
        )
        for name, method in methods.items()
    }
