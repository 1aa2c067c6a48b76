"""The check registries (issue 40): one per profile, together serving the whole catalog, each
refusing a requirement of another profile, and each filled again without doubles when its
check modules are imported again (pytester's in-process runs)."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conformance.catalog import load_catalog, requirement
from conformance.check_registry import CheckContext, Registry
from conformance.checks import erp_checks, fengyu_checks, mcp_checks, unchecked_requirements
from conformance.findings import Finding
from tests.conftest import REPO

Context = CheckContext[str, str]
NO_MCP = "The FengYu and ERP checks, and all they use, import nothing of MCP"


def test_every_requirement_is_served_on_every_profile_it_applies_to() -> None:
    assert unchecked_requirements() == []


def test_each_registry_serves_only_its_profiles_requirements() -> None:
    for registry in (fengyu_checks(), erp_checks(), mcp_checks()):
        for rid in registry.served():
            assert set(load_catalog()[rid].profiles) & set(registry.profiles), (registry, rid)


def test_the_upgrade_checks_serve_fengyu_and_erp_plugins_alike() -> None:
    assert "FY-UPG-001" in fengyu_checks().served()
    assert "FY-UPG-001" in erp_checks().served()


def test_a_check_naming_another_profiles_requirement_is_refused() -> None:
    registry = Registry[Context]("ERP", ("erp",))

    with pytest.raises(KeyError, match="FY-MAN-001, a requirement of fengyu"):

        @registry.check("FY-MAN-001")
        def misplaced(ctx: Context) -> Iterator[Finding]:
            yield from ()


def test_a_check_registered_again_replaces_itself() -> None:
    registry = Registry[Context]("FengYu", ("fengyu-v2", "fengyu-v1"))

    def fails(ctx: Context) -> Iterator[Finding]:
        yield ctx.finding("once", "manifest.json")

    for _ in range(2):  # as a check module imported again registers its checks again
        registry.check("FY-MAN-001")(fails)

    context = Context("plugin", requirement("FY-MAN-001"))
    assert [f.message for f in registry.run(context)] == ["once"]


def test_the_import_contract_names_every_check_module() -> None:
    """pyproject.toml's forbidden contract names each module (import-linter's wildcards stand
    for whole names only): a new FengYu or ERP check module is a source, an MCP one is
    forbidden to them."""
    settings = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    contracts: list[dict[str, Any]] = settings["tool"]["importlinter"]["contracts"]
    contract = next(c for c in contracts if c["name"] == NO_MCP)
    modules = {f"conformance.checks.{p.stem}" for p in (REPO / "conformance/checks").glob("*.py")}

    fengyu_erp = {m for m in modules if m.split(".")[-1].startswith(("fengyu", "erp"))}
    mcp = {m for m in modules if m.split(".")[-1].startswith("mcp")}
    assert fengyu_erp <= set(contract["source_modules"])
    assert mcp <= set(contract["forbidden_modules"])


@pytest.mark.parametrize("registry", [fengyu_checks, erp_checks, mcp_checks])
def test_a_registry_dropped_from_sys_modules_is_filled_again(
    monkeypatch: pytest.MonkeyPatch, registry: Callable[[], Registry[Any]]
) -> None:
    """As after a pytester in-process run: the registry and its check modules are gone from
    sys.modules, yet still attributes of conformance.checks; asking again imports them anew,
    and the fresh registry serves every check (a stale attribute used to leave it empty, and
    every item of the next run passed with nothing checked)."""
    served = registry().served()
    for name in [m for m in sys.modules if m.startswith("conformance.checks.")]:
        monkeypatch.delitem(sys.modules, name)

    assert registry().served() == served


def test_a_requirement_no_check_serves_raises_rather_than_passing() -> None:
    registry = Registry[Context]("FengYu", ("fengyu-v2", "fengyu-v1"))

    with pytest.raises(LookupError, match="no check for FY-MAN-001: a kit defect"):
        registry.run(Context("plugin", requirement("FY-MAN-001")))
