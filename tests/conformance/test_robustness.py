"""Whatever a manifest holds, the kit answers with findings, never with an exception.

Manifests are made by mutating valid v1 and v2 manifests at random places (replacing or
deleting values), so that the checks meet every wrong type in every position.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.kit import KitRun, Status
from conformance.options import KitOptions
from tests.conftest import REPO, TESTS

BASES = [
    json.loads((REPO / "sample_plugins/fan.summer.markdown/manifest.json").read_text("utf-8")),
    json.loads(
        (TESTS / "data/fengyu_realworld/OfficialPlugins/plugin-excel/manifest.json").read_text(
            "utf-8"
        )
    ),
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "properties", "items", "description", "x"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)


def containers(node: Any) -> list[Any]:
    found = [node] if isinstance(node, dict | list) else []
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    for child in children:
        found += containers(child)
    return found


@st.composite
def mutated_manifests(draw: st.DrawFn) -> Any:
    manifest = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        target = draw(st.sampled_from(containers(manifest)))
        if not target:
            continue
        key = draw(
            st.sampled_from(list(target) if isinstance(target, dict) else list(range(len(target))))
        )
        if draw(st.booleans()):
            target[key] = draw(json_values)
        else:
            del target[key]
    return manifest


def judge_all(manifest_text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "manifest.json").write_text(manifest_text, encoding="utf-8")
        run = KitRun.load(KitOptions(plugin_dirs=(folder,)), base=Path(folder))
        plugin = run.plugins[0]
        for target in run.targets(plugin):
            if target.requirement.suite != "manifest":
                continue
            requirement = target.requirement
            verdict = run.judge(target)
            assert verdict.status in Status
            for finding in verdict.findings:
                assert finding.requirement == requirement.id
                assert isinstance(finding.message, str) and finding.message
                assert finding.pointer == "" or finding.pointer.startswith("/")


@settings(max_examples=300, deadline=None)
@given(mutated_manifests())
def test_mutated_manifests_get_findings_not_exceptions(manifest: Any) -> None:
    judge_all(json.dumps(manifest))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40) | json_values.map(json.dumps))
def test_arbitrary_text_gets_findings_not_exceptions(text: str) -> None:
    judge_all(text)
