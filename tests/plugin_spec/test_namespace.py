"""The ERP namespace rule (spec: erp.md#the-namespace-rule): decided on the normalised path,
bypasses refused."""

from __future__ import annotations

import posixpath
from urllib.parse import quote, unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plugin_spec.namespace import ALLOWED_PREFIXES, namespace_problem


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/plugins/hello-plugin/greeting",
        "/api/v1/plugins/hcm-employee/employees/{employeeId}",
        "/api/v1/entities/employee",
        "/api/v1/plugins/hello-plugin/greeting/",
    ],
)
def test_allowed(path: str) -> None:
    assert namespace_problem(path) is None


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/api/v1/admin/users", "is not under"),
        ("/api/v1/plugins/", "is not under"),
        ("/api/v1/pluginsx/a", "is not under"),
        ("/api/v1/plugins/a/../../admin", "'..'"),
        ("/api/v1/plugins/%2e%2e/admin", "'..'"),
        ("/api/v1/plugins/%2E%2E/admin", "'..'"),
        ("/api/v1/plugins/%252e%252e/admin", "'..'"),
        ("/api/v1/plugins/./a", "'.'"),
        ("/api/v1/plugins/a/..;/admin", "'..'"),
        ("/api/v1/plugins/a/..;x=1/admin", "'..'"),
        ("/api/v1/plugins/a/%2e%2e;/admin", "'..'"),
        ("/api/v1/plugins/\uff0e\uff0e/admin", "'..'"),
        ("/api/v1/plugins/%EF%BC%8E%EF%BC%8E/admin", "'..'"),
        ("/api/v1/plugins/\u2025/admin", "'..'"),
        ("/api/v1/plugins/a\uff0f..\uff0fadmin", "separator"),
        ("/api/v1/plugins/a%2f..%2fadmin", "separator"),
        ("/api/v1/plugins/a%5cadmin", "separator"),
        ("/api/v1/plugins\\..\\admin", "backslash"),
        ("//evil.example/api/v1/plugins/a", "absolute URL"),
        ("https://evil.example/api/v1/plugins/a", "absolute URL"),
        ("/api/v1/plugins//a", "empty segment"),
        ("/api/v1/plugins/a?x=/api/v1/admin", "query"),
        ("/api/v1/plugins/a#frag", "query or fragment"),
        ("api/v1/plugins/a", "does not start with /"),
    ],
)
def test_refused(path: str, problem: str) -> None:
    assert problem in (namespace_problem(path) or "")


segment = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6)


@given(st.lists(segment, min_size=1, max_size=5), st.sampled_from(ALLOWED_PREFIXES))
def test_accepted_paths_stay_inside_the_namespace(segments: list[str], prefix: str) -> None:
    """Whatever a path looks like, if it is accepted, every decoding of it stays inside."""
    path = prefix + "/".join(quote(s, safe="") if i % 2 else s for i, s in enumerate(segments))
    if namespace_problem(path) is None:
        for decoded in (path, unquote(path), unquote(unquote(path))):
            normal = posixpath.normpath(decoded.replace("\\", "/"))
            assert any(normal.startswith(p.rstrip("/")) for p in ALLOWED_PREFIXES), path
