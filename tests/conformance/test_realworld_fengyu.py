"""The kit on real FengYu manifests: what it reports must match what a careful reader finds.

Only the manifest suite runs (`-m manifest`): the corpus holds manifests, not workers.

Each manifest from tests/data/fengyu_realworld is run as a plugin folder of its own. FengYu's
valid fixtures pass, its illegal fixtures fail on exactly the requirement they illustrate, and
the official plugins get the findings listed (and explained) below.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import TESTS

CORPUS = TESTS / "data" / "fengyu_realworld"
LEGACY = "FY-LEG-001"

EXPECTED: dict[str, set[str]] = {
    # FengYu's v2 schema fixtures: legal ones pass, each illegal one fails on its own defect.
    "toolchain/spec/test-fixtures/complete.json": set(),
    "toolchain/spec/test-fixtures/minimal.json": set(),
    "toolchain/spec/test-fixtures/valid-full.json": set(),
    "toolchain/spec/test-fixtures/illegal-dangling-ai-method.json": {"FY-MAN-004"},
    "toolchain/spec/test-fixtures/illegal-duplicate-method.json": {"FY-MAN-002"},
    "toolchain/spec/test-fixtures/illegal-extra-field.json": {"FY-MAN-003"},
    "toolchain/spec/test-fixtures/illegal-i18n-key.json": {"FY-MAN-015"},
    "toolchain/spec/test-fixtures/illegal-schema-string.json": {"FY-MAN-010"},
    # The older mixed fixtures; v1 ones are legacy, and v1 tools without effect warn.
    "toolchain/spec/fixtures/valid-full.json": {LEGACY, "FY-LEG-003"},
    "toolchain/spec/fixtures/valid-ui-only.json": {LEGACY},
    "toolchain/spec/fixtures/invalid-ai-schema.json": {LEGACY, "FY-LEG-003", "FY-MAN-010"},
    "toolchain/spec/fixtures/invalid-permission.json": {LEGACY, "FY-MAN-014"},
    "toolchain/spec/fixtures/invalid-permission@4ca24fdd.json": {"FY-MAN-014"},
    "toolchain/spec/fixtures/invalid-timeout.json": {"FY-MAN-013"},
    "toolchain/spec/fixtures/invalid-timeout@ce0fa378.json": {LEGACY, "FY-LEG-003", "FY-MAN-013"},
    "plugin-cli/test/fixtures/static-plugin/manifest.json": {LEGACY},
    "plugin-cli/test/fixtures/static-plugin/manifest@ddb78fa4.json": {LEGACY},
    # Official plugins. The shipped v1 manifests use `default` and `format` in tool schemas,
    # outside the subset hosts support (FY-MAN-011); excel types its FileRef parameters as
    # objects although the worker receives paths (FY-FILE-001). Email and offlinepython
    # take folders in plain words (inputDirectory, outputDirectory, projectDir: no
    # DirectoryRef, so no grant ever fills them) and email's IMAP `folder` reads like one
    # too (FY-FILE-004, a warning). Email's tools have 27 or 28 optional parameters in all,
    # more than the 24 Anthropic's strict mode takes in one request (FY-PROV-002, a warning).
    "OfficialPlugins/plugin-excel/manifest.json": {LEGACY, "FY-MAN-011", "FY-FILE-001"},
    "OfficialPlugins/plugin-email/manifest.json": {
        LEGACY,
        "FY-MAN-011",
        "FY-FILE-004",
        "FY-PROV-002",
    },
    "OfficialPlugins/plugin-email/manifest@b07b480b.json": {"FY-FILE-004", "FY-PROV-002"},
    "OfficialPlugins/plugin-browser/manifest.json": {LEGACY, "FY-MAN-011"},
    "OfficialPlugins/plugin-offlinepython/manifest.json": {LEGACY, "FY-MAN-011", "FY-FILE-004"},
    "OfficialPlugins/plugin-offlinepython/manifest@dd7a7b98.json": {
        LEGACY,
        "FY-LEG-003",
        "FY-FILE-001",
        "FY-FILE-004",
    },
    "OfficialPlugins/plugin-markdown/manifest.json": {LEGACY},
    "OfficialPlugins/plugin-markdown/manifest@6c4f24af.json": {LEGACY},
    "OfficialPlugins/plugin-markdown/manifest@e9043fed.json": {LEGACY},
    "OfficialPlugins/packages/email/manifest.json": {
        LEGACY,
        "FY-LEG-003",
        "FY-MAN-011",
        "FY-FILE-004",
        "FY-PROV-002",
    },
    # manifest.base.json is build input, not a manifest: engines and backend.runtime /
    # protocolVersion are unknown to v2 (FY-MAN-003), as FengYu's own schema says too.
    "OfficialPlugins/plugin-excel/manifest.base.json": {"FY-MAN-003"},
    "OfficialPlugins/plugin-excel/manifest.base@3e715610.json": {"FY-MAN-003"},
    "OfficialPlugins/plugin-email/manifest.base.json": {"FY-MAN-003"},
    "OfficialPlugins/plugin-email/manifest.base@3e715610.json": {"FY-MAN-003"},
    "OfficialPlugins/plugin-markdown/manifest.base.json": {"FY-MAN-003"},
    "OfficialPlugins/plugin-markdown/manifest.base@9fc1019a.json": {"FY-MAN-003"},
    "OfficialPlugins/plugin-offlinepython/manifest.base.json": {"FY-MAN-003"},
}


def test_every_corpus_file_has_an_expectation() -> None:
    corpus = {str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.json")}
    assert corpus == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_kit_findings_on_real_manifest(name: str, tmp_path: Path, run_kit) -> None:
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    shutil.copy(CORPUS / name, plugin / "manifest.json")
    result = run_kit([plugin], "-m", "manifest")
    assert result.reported() == EXPECTED[name]


def test_official_excel_findings_point_at_the_values(tmp_path: Path, run_kit) -> None:
    plugin = tmp_path / "excel"
    plugin.mkdir()
    shutil.copy(CORPUS / "OfficialPlugins/plugin-excel/manifest.json", plugin / "manifest.json")
    result = run_kit([plugin], "-m", "manifest")
    subset = result.findings("FY-MAN-011")
    assert [f["pointer"] for f in subset] == ["/aiTools/5/inputSchema#/properties/cursor/default"]
    assert subset[0]["line"] == 21
    file_params = {f["pointer"] for f in result.findings("FY-FILE-001")}
    assert file_params == {
        "/aiTools/0/inputSchema#/properties/filePath/type",
        "/aiTools/3/inputSchema#/properties/outputDir/type",
        "/aiTools/4/inputSchema#/properties/outputDir/type",
    }
