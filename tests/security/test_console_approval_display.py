"""The console's approval card shows the numbers that will be sent, digit for digit.

Why: the card re-indents the plan's JSON in the browser, and JavaScript numbers are doubles
while the host (Python) keeps integers exact: 12345678901234567891 was shown as
12345678901234567000 and sent as it was written, so the user approved a number that is not
the one that ran. JSON whose numbers a double cannot hold is now shown as it came.
"""

from __future__ import annotations

import re

import httpx

from tests.reference_host.test_console_browser import (
    EXCEL,
    ServedConsole,
    browser,  # noqa: F401  (the fixture)
    files,  # noqa: F401  (the fixture)
    send,
    served_console,  # noqa: F401  (the fixture)
)

BIG = "12345678901234567891"


def test_the_approval_shows_big_integers_exactly(
    served_console: ServedConsole,  # noqa: F811
) -> None:
    url, opened = served_console
    installed = httpx.post(f"{url}/api/plugins", json={"path": str(EXCEL)}, timeout=60)
    assert installed.status_code in (200, 201), installed.text
    answer = send(opened, f'/call excel_execute {{"filePrefix": "p_", "rows": {BIG}}}')
    approval = answer.locator(".tool .approval")
    opened.expect(approval).to_contain_text("Approve excel_execute?")
    opened.expect(approval.locator(".arguments")).to_contain_text(BIG)
    approval.get_by_role("button", name="Deny").click()
    opened.expect(answer.locator(".outcome")).to_have_text(re.compile("^done"))
    opened.assert_clean()


def test_exact_json_is_still_indented(
    served_console: ServedConsole,  # noqa: F811
) -> None:
    _, opened = served_console
    answer = send(opened, '/call markdown_render {"markdown": "x", "n": 9007199254740991}')
    arguments = answer.locator(".tool .arguments").first
    opened.expect(arguments).to_contain_text('"n": 9007199254740991')
    opened.expect(answer.locator(".outcome")).to_have_text(re.compile("^done"))
    opened.assert_clean()
