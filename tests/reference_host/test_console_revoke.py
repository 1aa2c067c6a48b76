"""The dev console's Revoke button (spec: host.md#fileref-grants), in headless Chromium against
a real host on loopback, with test_console_browser's browser, host and page helpers: a click
sends `DELETE /api/conversations/{cid}/grants/{refId}`, the card goes, and the host no longer
holds the grant; a revoke the host refuses shows its error, and the list as the host has it.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.reference_host.test_console_browser import (  # noqa: F401 (fixtures)
    ServedConsole,
    browser,
    files,
    grant,
    served_console,
)


def test_revoke_deletes_the_grant_through_the_api(
    served_console: ServedConsole,  # noqa: F811
    files: Path,  # noqa: F811
) -> None:
    url, opened = served_console
    page, expect = opened.page, opened.expect
    deletes: list[str] = []
    page.on(
        "request",
        lambda request: deletes.append(request.url) if request.method == "DELETE" else None,
    )
    conversation = page.locator("#conversation-id").inner_text()
    grants_url = f"{url}/api/conversations/{conversation}/grants"
    grant(opened, "fan.summer.markdown", files / "sales.xlsx", "read")
    grant(opened, "fan.summer.markdown", files / "out", "write")
    (listed,) = [g for g in httpx.get(grants_url).json() if g["ref"]["name"] == "sales.xlsx"]
    ref_id = listed["ref"]["id"]

    card = page.locator(f'#grants .grant[data-ref-id="{ref_id}"]')
    card.get_by_role("button", name="Revoke").click()

    expect(card).to_have_count(0)
    expect(page.locator("#grants .grant")).to_have_count(1)
    assert deletes == [f"{grants_url}/{ref_id}"]
    assert [g["ref"]["name"] for g in httpx.get(grants_url).json()] == ["out"]
    expect(page.locator("#grants-error")).to_be_hidden()

    # a card that is out of date (revoked elsewhere): the host's 404 is shown
    (other,) = httpx.get(grants_url).json()
    assert httpx.delete(f"{grants_url}/{other['ref']['id']}").status_code == 204
    page.locator("#grants .grant").get_by_role("button", name="Revoke").click()
    expect(page.locator("#grants-error")).to_contain_text("404")
    expect(page.locator("#grants-error")).to_contain_text("no grant")
    expect(page.locator("#grants")).to_contain_text("nothing granted")
    opened.assert_clean()
