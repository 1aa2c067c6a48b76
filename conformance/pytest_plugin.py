"""The pytest plugin: `pytest --plugin-dir DIR` checks DIR against the requirement catalog.

Installed, it is loaded by every pytest run, so it declares its options and nothing more until
asked: the kit proper (pytest_session.py: its checks, the host's process control, hypothesis,
httpx, hundreds of modules) is imported only when --plugin-dir is given, and the catalog only
for --list-requirements or --conformance-explain, as pytest's own cacheprovider and junitxml
defer their work to the runs that use them.
"""

from __future__ import annotations

import pytest

from conformance.options import add_options

# Registered names of pytest plugins a kit run leaves out: the kit drives hypothesis itself,
# and hypothesis's plugin imports all of hypothesis (half a second) in every run's summary,
# also a `-m manifest` run that never needs it.
UNUSED_PLUGINS = ("asyncio", "hypothesispytest")


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser.getgroup("conformance", "plugin conformance kit"), parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """A kit run is the kit's, not the repo's: the plugin repo's conftest.py files stay out,
    and so do pytest plugins the kit does not use, whose warnings about their own settings
    (pytest-asyncio's unset loop scope) would be noise in a plugin's run."""
    if _is_kit_run(early_config.known_args_namespace):
        early_config.known_args_namespace.noconftest = True
        for name in UNUSED_PLUGINS:
            plugin = early_config.pluginmanager.get_plugin(name)
            if plugin is not None:
                early_config.pluginmanager.unregister(plugin)
                if name == "hypothesispytest":
                    _end_hypothesis_initialization()


def _is_kit_run(option: object) -> bool:
    """Whether a plugin folder or an MCP server was given: the run is the kit's."""
    return any(getattr(option, name, None) for name in ("plugin_dir", "mcp_command", "mcp_config"))


def _end_hypothesis_initialization() -> None:
    """Close the count hypothesis's plugin opened when it was loaded and closes when the
    session starts (_hypothesis_globals.in_initialization); left open, hypothesis would take
    the kit's first use of it for slow work in a plugin's start-up and warn."""
    import _hypothesis_globals

    _hypothesis_globals.in_initialization -= 1


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if config.option.list_requirements:
        from conformance.catalog import format_catalog

        print(format_catalog())
        return 0
    if config.option.conformance_explain:
        from conformance.explain import UnknownRequirement, explain

        try:
            print(explain(config.option.conformance_explain))
        except UnknownRequirement as exc:
            raise pytest.UsageError(str(exc)) from None
        return 0
    return None


def pytest_configure(config: pytest.Config) -> None:
    if _is_kit_run(config.option):
        from conformance.pytest_session import start

        start(config)
