"""Malformed plugins never break the kit: findings, never an exception, never a hang.

About 2,000 generated plugin folders in total: random JSON, mutated real v1 and v2
manifests and ERP tool files (values replaced, removed, added, stringified, wrapped),
damaged JSON text, random bytes (invalid UTF-8, BOMs, UTF-16), nesting and big strings.
Each folder is loaded with `KitRun.load`, summarised as the reports do, and every target of
the static (manifest) suite is judged; every finding must name its requirement, a file and a
message.

tests/conformance/test_robustness.py mutates FengYu manifests lightly; this goes wider
(ERP files, bytes, text damage, structure) and guards each example against a hang.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.catalog import load_catalog
from conformance.kit import KitRun, Status
from conformance.options import KitOptions
from plugin_spec.json_files import MAX_FILE_BYTES
from tests.conftest import REPO, TESTS

# A hang guard, not a speed bound: one plugin takes well under a second, so only a runaway
# (a parse or a walk that does not end in practice) reaches it, even on a loaded machine.
HANG_GUARD = 60.0
REALWORLD = TESTS / "data" / "fengyu_realworld"
SAMPLES = REPO / "sample_plugins"


def _load(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


V2_BASES = [
    _load(SAMPLES / "fan.summer.markdown" / "manifest.json"),
    _load(SAMPLES / "fan.summer.excel" / "manifest.json"),
    _load(REALWORLD / "toolchain/spec/test-fixtures/complete.json"),
    _load(REALWORLD / "toolchain/spec/test-fixtures/valid-full.json"),
]
V1_BASES = [
    _load(REALWORLD / "OfficialPlugins/plugin-excel/manifest.json"),
    _load(REALWORLD / "OfficialPlugins/plugin-browser/manifest.json"),
    _load(REALWORLD / "OfficialPlugins/plugin-email/manifest.json"),
    _load(REALWORLD / "toolchain/spec/fixtures/valid-full.json"),
]
ERP_BASES = [
    _load(path)
    for plugin in ("hello-plugin", "hcm-employee", "hcm-ai-intelligence")
    for path in sorted((SAMPLES / plugin / "metadata" / "tool").glob("*.json"))
]
KEYS = sorted(
    {
        key
        for base in [*V2_BASES, *V1_BASES, *ERP_BASES]
        for key in json.dumps(base).split('"')[1::2]
        if key.isidentifier()
    }
)[:200]
MANIFEST_SUITE = {rid for rid, r in load_catalog().items() if r.suite == "manifest"}


def fuzz(examples: int) -> settings:
    """Bounded: a fixed number of examples, no per-example deadline (the oracle has its
    own generous time guard), no example database in the repository."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


# --------------------------------------------------------------------------- the oracle


def judge_folder(files: dict[str, bytes]) -> list[tuple[str, Status]]:
    """Write files into a fresh folder, judge every static target, check every finding."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as folder:
        root = Path(folder)
        for relative, content in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        started = time.monotonic()
        run = KitRun.load(KitOptions(plugin_dirs=(folder,)), base=root)
        outcomes = []
        try:
            (plugin,) = run.plugins
            assert isinstance(run.label(plugin), str)
            json.dumps(run.summaries())  # what the reports write about the plugin
            for target in run.targets(plugin):
                if target.requirement.suite != "manifest":
                    continue
                verdict = run.judge(target)
                assert verdict.status in Status
                for finding in verdict.findings:
                    assert finding.requirement == target.requirement.id
                    assert finding.requirement in MANIFEST_SUITE
                    assert isinstance(finding.file, str) and finding.file.strip()
                    assert isinstance(finding.message, str) and finding.message.strip()
                    assert isinstance(finding.pointer, str)
                    assert finding.line is None or (
                        isinstance(finding.line, int) and finding.line >= 1
                    )
                    assert finding.location
                outcomes.append((target.requirement.id, verdict.status))
        finally:
            run.close()
        elapsed = time.monotonic() - started
        assert elapsed < HANG_GUARD, f"{elapsed:.1f} s for one plugin: a runaway"
        return outcomes


def manifest(value: bytes) -> dict[str, bytes]:
    return {"manifest.json": value}


def erp(files: dict[str, bytes]) -> dict[str, bytes]:
    return {f"metadata/tool/{name}": content for name, content in files.items()}


# --------------------------------------------------------------------------- strategies

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["", " ", "read", "REST", "GET", "object", "ref_x", "/api/v1/plugins/x"])
)
keys = st.sampled_from(KEYS) | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def containers(node: Any) -> list[Any]:
    found = [node] if isinstance(node, dict | list) else []
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        found += containers(child)
    return found


@st.composite
def mutated(draw: st.DrawFn, bases: list[Any]) -> Any:
    """A base document with 1-5 random edits at random places."""
    doc = copy.deepcopy(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(1, 5))):
        target = draw(st.sampled_from(containers(doc)))
        if isinstance(target, dict):
            key = draw(st.sampled_from(sorted(target)) if target else keys)
        elif target:
            key = draw(st.integers(0, len(target) - 1))
        else:
            target.append(draw(json_values))
            continue
        action = draw(st.sampled_from(["replace", "delete", "add", "stringify", "wrap"]))
        present = isinstance(target, list) or key in target
        if action == "delete" and present:
            del target[key]
        elif action == "add" and isinstance(target, dict):
            target[draw(keys)] = draw(json_values)
        elif action == "stringify" and present:
            target[key] = json.dumps(target[key])
        elif action == "wrap" and present:
            target[key] = [target[key]]
        else:
            target[key] = draw(json_values)
    return doc


@st.composite
def damaged_text(draw: st.DrawFn, text: bytes) -> bytes:
    """JSON text cut, spliced with structural characters, or with a slice deleted."""
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["cut", "insert", "delete", "duplicate"]))
        if action == "cut":
            text = text[:at]
        elif action == "insert":
            noise = draw(st.lists(st.sampled_from([*b'{}[]",:\\\x00\n', 0xC3]), max_size=4))
            text = text[:at] + bytes(noise) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        else:  # a repeated key: "k": v, "k": v
            brace = text.find(b"{", at)
            if brace >= 0:
                text = text[: brace + 1] + b'"id": 1, "id": 2, ' + text[brace + 1 :]
    return text


encodings = st.sampled_from(
    [
        lambda b: b,
        lambda b: b"\xef\xbb\xbf" + b,
        lambda b: b.decode("utf-8", "replace").encode("utf-16"),
        lambda b: b.decode("utf-8", "replace").encode("latin-1", "replace"),
        lambda b: b[: len(b) // 2] + b"\xff\xfe\xc0\xaf" + b[len(b) // 2 :],
    ]
)
tool_names = st.sampled_from(
    ["a.json", "b.json", "x y.json", "工具.json", ".hidden.json", "A.JSON"]
)


# --------------------------------------------------------------------------- the tests


@fuzz(250)
@given(json_values)
def test_random_json_as_manifest(value: Any) -> None:
    judge_folder(manifest(dumps(value)))


@fuzz(200)
@given(st.dictionaries(tool_names, json_values, min_size=1, max_size=3))
def test_random_json_as_erp_tool_files(files: dict[str, Any]) -> None:
    judge_folder(erp({name: dumps(value) for name, value in files.items()}))


@fuzz(350)
@given(mutated(V2_BASES))
def test_mutated_v2_manifests(doc: Any) -> None:
    judge_folder(manifest(dumps(doc)))


@fuzz(250)
@given(mutated(V1_BASES))
def test_mutated_v1_manifests(doc: Any) -> None:
    judge_folder(manifest(dumps(doc)))


@fuzz(350)
@given(st.lists(mutated(ERP_BASES), min_size=1, max_size=3), st.booleans())
def test_mutated_erp_tool_files(tools: list[Any], same_name: bool) -> None:
    names = ["t.json"] * len(tools) if same_name else [f"t{i}.json" for i in range(len(tools))]
    judge_folder(erp({name: dumps(tool) for name, tool in zip(names, tools, strict=True)}))


@fuzz(250)
@given(
    st.sampled_from([*V2_BASES, *V1_BASES, *ERP_BASES]).flatmap(
        lambda base: damaged_text(dumps(base)).map(lambda text: (base, text))
    ),
    encodings,
)
def test_damaged_json_text(pair: tuple[Any, bytes], encode: Any) -> None:
    base, text = pair
    is_erp = "toolCode" in base
    judge_folder(erp({"a.json": encode(text)}) if is_erp else manifest(encode(text)))


@fuzz(250)
@given(st.binary(max_size=300), st.booleans())
def test_random_bytes(data: bytes, as_erp: bool) -> None:
    judge_folder(erp({"a.json": data}) if as_erp else manifest(data))


@st.composite
def nested(draw: st.DrawFn) -> Any:
    depth = draw(st.integers(1, 60))
    leaf: Any = draw(scalars)
    for _ in range(depth):
        leaf = draw(st.sampled_from([lambda v: [v], lambda v: {"type": v}, lambda v: {"x": v}]))(
            leaf
        )
    return leaf


@fuzz(100)
@given(nested(), st.sampled_from(["manifest", "schema", "erp", "erp-schema"]))
def test_nesting(value: Any, where: str) -> None:
    """Nesting up to 60 levels at the root, inside a method schema and in an ERP file."""
    if where == "manifest":
        judge_folder(manifest(dumps(value)))
    elif where == "schema":
        doc = copy.deepcopy(V2_BASES[0])
        doc["rpc"]["methods"]["render"]["inputSchema"]["properties"]["markdown"] = value
        judge_folder(manifest(dumps(doc)))
    elif where == "erp":
        judge_folder(erp({"a.json": dumps(value)}))
    else:
        tool = copy.deepcopy(ERP_BASES[0])
        tool["inputSchema"] = {"type": "object", "properties": {"x": value}}
        judge_folder(erp({"a.json": dumps(tool)}))


@fuzz(40)
@given(
    st.integers(10_000, 2_000_000),
    st.sampled_from(["id", "description", "version", "path", "key", "array"]),
)
def test_huge_strings(size: int, where: str) -> None:
    big = "x" * size
    doc = copy.deepcopy(V2_BASES[0])
    tool = copy.deepcopy(ERP_BASES[0])
    if where == "path":
        tool["handlerConfig"]["path"] = "/api/v1/plugins/" + big
        judge_folder(erp({"a.json": dumps(tool)}))
        return
    if where == "key":
        doc[big] = 1
    elif where == "array":
        doc["aiTools"] = [copy.deepcopy(doc["aiTools"][0]) for _ in range(size // 10_000)]
    else:
        doc[where] = big
    judge_folder(manifest(dumps(doc)))


# --------------------------------------------------------------------------- found breaks

DEEP = 1_000


def bare_erp(files: dict[str, bytes]) -> dict[str, bytes]:
    return {f"metadata/tool/{name}": content for name, content in files.items()}


@pytest.mark.parametrize(
    "files",
    [
        manifest(b"[" * DEEP + b"]" * DEEP),
        manifest(b'{"schemaVersion": 2, "rpc": ' + b'{"a": ' * DEEP + b"1" + b"}" * DEEP + b"}"),
        manifest(b"[" * 100_000 + b"]" * 100_000),
        bare_erp({"a.json": b'{"toolCode": "a.b.c", "x": ' + b"[" * DEEP + b"]" * DEEP + b"}"}),
        bare_erp(
            {
                "a.json": dumps(
                    {
                        **ERP_BASES[0],
                        "inputSchema": json.loads('{"items": ' * 300 + "{}" + "}" * 300),
                    }
                )
            }
        ),
    ],
    ids=["v2-array", "v2-object", "v2-100k", "erp-array", "erp-schema-300"],
)
def test_deep_nesting_is_a_finding(files: dict[str, bytes]) -> None:
    load = "ERP-TOOL-001" if "manifest.json" not in files else "FY-MAN-001"
    assert (load, Status.FAILED) in judge_folder(files)


@pytest.mark.parametrize(
    "files",
    [
        manifest(b'{"schemaVersion": 2, "version": ' + b"9" * 5_000 + b"}"),
        bare_erp({"a.json": b'{"toolCode": "a.b.c", "x": -' + b"1" * 5_000 + b"}"}),
    ],
    ids=["manifest", "erp"],
)
def test_a_number_python_cannot_read_is_a_finding(files: dict[str, bytes]) -> None:
    """json.loads raises a plain ValueError (not JSONDecodeError) past 4,300 digits."""
    load = "ERP-TOOL-001" if "manifest.json" not in files else "FY-MAN-001"
    assert (load, Status.FAILED) in judge_folder(files)


def test_a_fifo_manifest_does_not_hang_the_kit(tmp_path: Path) -> None:
    fifo = tmp_path / "manifest.json"
    os.mkfifo(fifo)
    outcome: list[Any] = []
    worker = threading.Thread(
        target=lambda: outcome.append(
            KitRun.load(KitOptions(plugin_dirs=(str(tmp_path),)), base=tmp_path)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(HANG_GUARD)  # a guard: a load that opens the FIFO waits for a writer
    hung = worker.is_alive()
    if hung:  # release the reader: a writer that closes at once means EOF
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(HANG_GUARD)
    assert not hung, "KitRun.load blocked on a FIFO manifest.json"
    assert "not a regular file" in outcome[0].plugins[0].load_error.message


def test_an_endless_manifest_is_refused_with_a_finding(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").symlink_to("/dev/zero")
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))\n"
        "from pathlib import Path\n"
        "from conformance.kit import KitRun\n"
        "from conformance.options import KitOptions\n"
        "run = KitRun.load(KitOptions(plugin_dirs=(sys.argv[1],)), base=Path(sys.argv[1]))\n"
        "print(run.plugins[0].load_error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert "manifest.json" in done.stdout


def test_an_oversized_manifest_is_refused_with_a_finding() -> None:
    """A regular file past the kit's read cap: refused by its size, before parsing."""
    padding = b" " * (MAX_FILE_BYTES + 1)
    outcomes = judge_folder(manifest(b'{"schemaVersion": 2}' + padding))
    assert ("FY-MAN-001", Status.FAILED) in outcomes


@pytest.mark.parametrize("code", [["hello-plugin"], {"a": 1}])
def test_an_unhashable_application_code_is_a_finding(code: Any) -> None:
    judge_folder(bare_erp({"a.json": dumps({**ERP_BASES[0], "applicationCode": code})}))


@pytest.mark.parametrize(
    "tools",
    [["not an object"], [{"name": "a", "method": ["m"], "effect": "read"}]],
    ids=["string-entry", "list-method"],
)
def test_reports_survive_a_malformed_v1_manifest(tmp_path: Path, tools: list[Any]) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({**V1_BASES[0], "aiTools": tools}))
    run = KitRun.load(KitOptions(plugin_dirs=(str(tmp_path),)), base=tmp_path)
    try:
        assert isinstance(run.summaries(), list)
    finally:
        run.close()
