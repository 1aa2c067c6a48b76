"""FY-MAN-008 between two plugins names the other plugin's file and where in it the name is,
and its fix does not ask for a prefix both names already have."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import REPO, plugin_with_manifest

SAMPLE = REPO / "sample_plugins" / "fan.summer.markdown" / "manifest.json"


def test_a_clash_with_another_plugin_names_it_and_asks_for_no_prefix(
    run_kit, tmp_path: Path
) -> None:
    folders = []
    for n in (1, 2):
        manifest = json.loads(SAMPLE.read_text("utf-8"))
        manifest["id"] = f"com.example.copy{n}"
        folders.append(plugin_with_manifest(tmp_path, manifest, f"copy{n}"))
    name = manifest["aiTools"][0]["name"]
    prefix = name.split("_")[0] + "_"

    result = run_kit(folders, "-m", "manifest", "-k", "FY-MAN-008")

    findings = [f for f in result.findings("FY-MAN-008") if f"'{name}'" in f["message"]]
    assert len(findings) == 2
    for finding in findings:
        other = folders[1] if str(folders[0]) not in finding["message"] else folders[0]
        assert f"in {other / 'manifest.json'} at /aiTools/0/name" in finding["message"]
        assert f"plugin com.example.copy{other.name[-1]}" in finding["fix"]
        assert f"both names already start with {prefix!r}" in finding["fix"]
        assert "Prefix the tool name" not in finding["fix"]
