"""The kit on real FengYu manifests: what it reports must match what a careful reader finds.

Only the manifest suite runs (`-m manifest`): the corpus holds manifests, not workers.

Each manifest from tests/data/fengyu_realworld is run as a plugin folder of its own. FengYu's
valid fixtures pass, its illegal fixtures fail on exactly the requirement they illustrate, and
the official plugins get the findings listed (and explained) below. The code-first files
(manifest.base.json, FengYu's scaffold templates, the manifest/ sidecars) run as code-first
folders: what can be judged before the build passes, the rest is skipped with the build advice.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.fengyu.code_first import CHECKABLE
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
    "toolchain/spec/fixtures/invalid-timeout@a6285051.json": {"FY-MAN-013"},
    "toolchain/spec/test-fixtures/minimal@fb0640ae.json": set(),
    "toolchain/spec/fixtures/invalid-timeout@ce0fa378.json": {LEGACY, "FY-LEG-003", "FY-MAN-013"},
    "plugin-cli/test/fixtures/static-plugin/manifest.json": {LEGACY},
    "plugin-cli/test/fixtures/static-plugin/manifest@ddb78fa4.json": {LEGACY},
    # Official plugins. The shipped v1 manifests' scalar defaults are in the subset now (FengYu's
    # newest schema allows them), but email's `format: date-time` is not (FY-MAN-011): only
    # fengyu-file and fengyu-directory are. Excel types its FileRef parameters as objects
    # although the worker receives paths (FY-FILE-001). Email and offlinepython
    # take folders in plain words (inputDirectory, outputDirectory, projectDir: no
    # DirectoryRef, so no grant ever fills them) and email's IMAP `folder` reads like one
    # too (FY-FILE-004, a warning). Email's tools have 27 or 28 optional parameters in all,
    # more than the 24 Anthropic's strict mode takes in one request (FY-PROV-002, a warning).
    "OfficialPlugins/plugin-excel/manifest.json": {LEGACY, "FY-FILE-001"},
    "OfficialPlugins/plugin-email/manifest.json": {
        LEGACY,
        "FY-MAN-011",
        "FY-FILE-004",
        "FY-PROV-002",
    },
    # The v2 email manifest (4.0.0-beta.4) predates the newest schema: its flow-node outputs
    # carry `type`, which FengYu's schema @b2534282 refuses too (FY-MAN-003); its first node
    # edits an input "body" that email_send_batch does not take, and its second exposes an
    # output "result" that confirm_send does not return (FY-MAN-022).
    "OfficialPlugins/plugin-email/manifest@b07b480b.json": {
        "FY-MAN-003",
        "FY-MAN-022",
        "FY-FILE-004",
        "FY-PROV-002",
    },
    "OfficialPlugins/plugin-browser/manifest.json": {LEGACY},
    "OfficialPlugins/plugin-offlinepython/manifest.json": {LEGACY, "FY-FILE-004"},
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
}


# Code-first bases, each run as manifest.base.json with the sidecars listed (none: none).
BASES: dict[str, tuple[str, ...]] = {
    "OfficialPlugins/plugin-excel/manifest.base.json": (
        "OfficialPlugins/plugin-excel/manifest/flow-nodes.json",
    ),
    "OfficialPlugins/plugin-excel/manifest.base@3e715610.json": (),
    "OfficialPlugins/plugin-email/manifest.base.json": (
        "OfficialPlugins/plugin-email/manifest/flow-nodes.json",
    ),
    "OfficialPlugins/plugin-email/manifest.base@3e715610.json": (
        "OfficialPlugins/plugin-email/manifest/flow-nodes@8ef89015.json",
    ),
    "OfficialPlugins/plugin-markdown/manifest.base.json": (),
    "OfficialPlugins/plugin-markdown/manifest.base@2f6ae41a.json": (),
    "OfficialPlugins/plugin-markdown/manifest.base@9fc1019a.json": (),
    "OfficialPlugins/plugin-offlinepython/manifest.base.json": (),
}
TEMPLATES = sorted(CORPUS.glob("toolchain/cli/templates/react-*/manifest.base@b2534282.json.tpl"))
# FengYu's published schema: test data for test_fengyu_schema_agreement, not a manifest.
FENGYU_SCHEMA = "toolchain/spec/manifest.schema@b2534282.json"
# An older flow-node sidecar: inputs carry type/required/default and an output valueFrom,
# which FengYu's newest schema no longer allows (FY-MAN-003, in the sidecar file).
OLD_SIDECAR = "OfficialPlugins/plugin-excel/manifest/flow-nodes@9fc1019a.json"


def test_every_corpus_file_has_an_expectation() -> None:
    corpus = {str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.json")}
    sidecars = {s for files in BASES.values() for s in files} | {OLD_SIDECAR}
    assert corpus == set(EXPECTED) | set(BASES) | sidecars | {FENGYU_SCHEMA}
    assert len(TEMPLATES) == 3


def code_first_folder(tmp_path: Path, base_text: str, sidecars: tuple[str, ...]) -> Path:
    plugin = tmp_path / "plugin"
    (plugin / "manifest").mkdir(parents=True)
    (plugin / "manifest.base.json").write_text(base_text, encoding="utf-8")
    for sidecar in sidecars:
        shutil.copy(CORPUS / sidecar, plugin / "manifest" / "flow-nodes.json")
    return plugin


@pytest.mark.parametrize("name", sorted(BASES))
def test_official_bases_pass_as_code_first_folders(name: str, tmp_path: Path, run_kit) -> None:
    text = (CORPUS / name).read_text("utf-8")
    result = run_kit([code_first_folder(tmp_path, text, BASES[name])], "-m", "manifest")
    assert result.reported() == set()
    skipped = [r for r in result.report["results"] if r["status"] == "not-applicable"]
    unbuilt = [r for r in skipped if r["requirement"] not in CHECKABLE]
    assert unbuilt and all("fengyu build" in r["reason"] for r in unbuilt)
    assert "target/fengyu-manifest/manifest.json" in result.result.stdout.str()


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.parent.name)
def test_scaffold_templates_pass_as_code_first_folders(
    template: Path, tmp_path: Path, run_kit
) -> None:
    text = template.read_text("utf-8")
    text = text.replace("{{pluginId}}", "com.example.demo").replace("{{pluginName}}", "Demo")
    result = run_kit([code_first_folder(tmp_path, text, ())], "-m", "manifest")
    assert result.reported() == set()
    statuses = result.statuses()
    assert statuses["FY-MAN-003"] == statuses["FY-MAN-021"] == "passed"


def test_older_flow_node_sidecar_fails_the_newest_schema(tmp_path: Path, run_kit) -> None:
    base = (CORPUS / "OfficialPlugins/plugin-excel/manifest.base.json").read_text("utf-8")
    result = run_kit([code_first_folder(tmp_path, base, (OLD_SIDECAR,))], "-m", "manifest")
    assert result.reported() == {"FY-MAN-003"}
    assert {f["file"] for f in result.findings("FY-MAN-003")} == {"manifest/flow-nodes.json"}


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
    # The scalar default of aiTools[5]'s cursor is in the subset and fits its integer type.
    assert result.statuses()["FY-MAN-011"] == result.statuses()["FY-MAN-020"] == "passed"
    file_params = {f["pointer"] for f in result.findings("FY-FILE-001")}
    assert file_params == {
        "/aiTools/0/inputSchema#/properties/filePath/type",
        "/aiTools/3/inputSchema#/properties/outputDir/type",
        "/aiTools/4/inputSchema#/properties/outputDir/type",
    }


def test_v2_email_flow_node_findings_name_the_ports(tmp_path: Path, run_kit) -> None:
    plugin = tmp_path / "email"
    plugin.mkdir()
    shutil.copy(
        CORPUS / "OfficialPlugins/plugin-email/manifest@b07b480b.json", plugin / "manifest.json"
    )
    result = run_kit([plugin], "-m", "manifest")
    ports = {f["pointer"]: f["message"] for f in result.findings("FY-MAN-022")}
    assert set(ports) == {"/flowNodes/0/inputs/6/name", "/flowNodes/1/outputs/0/name"}
    assert '"body"' in ports["/flowNodes/0/inputs/6/name"]
    assert '"result"' in ports["/flowNodes/1/outputs/0/name"]
