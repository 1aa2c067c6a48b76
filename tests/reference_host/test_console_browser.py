"""The dev console (`GET /`) in a real headless Chromium, driven by Playwright, against a real
host on loopback with the sample plugins, approval `ask` and the scripted model's `/call`.

Debian's Chromium at /usr/bin/chromium is the browser (Playwright's own downloads are not
used). Without it the tests skip, unless REQUIRE_BROWSER=1 (as .ci/run sets), where they fail.
The browser may reach 127.0.0.1 only: any other request is aborted and fails the test.
Every check waits with Playwright's `expect` (retried until it holds, up to EXPECT_TIMEOUT),
never for a fixed time.

CONSOLE_SCREENSHOT=docs/console.png saves a screenshot of the page after the approved call.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.install_validation import kit_validator
from reference_host.__main__ import scripted_factory
from reference_host.agent.approval import ApprovalPolicy
from reference_host.host import Host, HostConfig
from reference_host.http.app import create_app
from reference_host.support.loopback import serve_on_loopback
from tests.conftest import REPO

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EXPECT_TIMEOUT = 30_000  # ms: an upper bound for a worker's start and a split, not a pace
MARKDOWN = REPO / "sample_plugins" / "fan.summer.markdown"
EXCEL = REPO / "sample_plugins" / "fan.summer.excel"
SALES = EXCEL / "conformance" / "examples" / "excel_analyze" / "sales.xlsx"
TOKEN = "console-test-token-0123456789"


def _browser_missing(reason: str) -> None:
    if os.environ.get("REQUIRE_BROWSER") == "1":
        pytest.fail(f"REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, with a fresh profile for the module."""
    if not CHROMIUM.exists():
        _browser_missing(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _browser_missing("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Console:
    """A page of the console and what happened in it."""

    page: Any
    url: str
    foreign: list[str] = field(default_factory=list)  # requests to anything but the host
    problems: list[str] = field(default_factory=list)  # script errors, CSP violations

    def expect(self, target: Any) -> Any:
        from playwright.sync_api import expect

        return expect(target)

    def assert_clean(self) -> None:
        assert not self.foreign, f"the page reached out: {self.foreign}"
        assert not self.problems, f"the page had problems: {self.problems}"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The host's allowed root: the sales workbook and an empty output folder."""
    root = tmp_path / "files"
    (root / "out").mkdir(parents=True)
    shutil.copy(SALES, root / "sales.xlsx")
    return root


@contextlib.contextmanager
def host_on_loopback(tmp_path: Path, files: Path, token: str | None = None) -> Iterator[str]:
    """The reference host with the markdown sample installed, approval ask, and the scripted
    model of `python -m reference_host serve` (it runs `/call <tool> <json>` lines); stopped
    (and its workers with it) at the end."""

    @contextlib.asynccontextmanager
    async def app() -> AsyncIterator[Any]:
        config = HostConfig(
            data_dir=tmp_path / "host",
            allowed_roots=(files,),
            approval=ApprovalPolicy(timeout=120),
            token=token,
        )
        host = Host(config, validator=kit_validator)
        try:
            await host.install(MARKDOWN)
            yield create_app(host, scripted_factory())
        finally:
            await host.close()

    with serve_on_loopback(make_app=app, lifespan="on", name="console host") as url:
        yield url


@contextlib.contextmanager
def console(browser: Any, url: str, fragment: str = "") -> Iterator[Console]:
    """A new browser context on the console at url (+ fragment), held to the host's origin."""
    from playwright.sync_api import expect

    expect.set_options(timeout=EXPECT_TIMEOUT)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        opened = Console(page, url)

        def route(route: Any) -> None:
            if route.request.url.startswith(url + "/"):
                route.continue_()
            else:
                opened.foreign.append(route.request.url)
                route.abort()

        context.route("**/*", route)
        page.on("pageerror", lambda error: opened.problems.append(f"page error: {error}"))
        page.on(
            "console",
            lambda message: (
                opened.problems.append(message.text)
                if "Content Security Policy" in message.text
                else None
            ),
        )
        response = page.goto(url + "/" + fragment)
        assert response is not None and response.status == 200
        policy = response.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "unsafe-inline" not in policy
        yield opened
    finally:
        context.close()


# The URL of a host_on_loopback host and a console page open on it.
ServedConsole = tuple[str, Console]


@pytest.fixture
def served_console(browser: Any, tmp_path: Path, files: Path) -> Iterator[ServedConsole]:
    """host_on_loopback's host and a console on it, for the length of a test."""
    with host_on_loopback(tmp_path, files) as url, console(browser, url) as opened:
        yield url, opened


def send(console: Console, message: str) -> Any:
    """Send a chat message; the assistant's answer element of this exchange."""
    page = console.page
    answers = page.locator(".message.assistant")
    before = answers.count()
    page.locator("#message").fill(message)
    page.get_by_role("button", name="Send").click()
    console.expect(answers).to_have_count(before + 1)
    return answers.nth(before)


def grant(console: Console, plugin: str, path: Path, access: str) -> None:
    page = console.page
    page.locator("#grant-plugin").select_option(plugin)
    page.locator("#grant-path").fill(str(path))
    page.locator("#grant-access").select_option(access)
    page.get_by_role("button", name="Grant").click()
    console.expect(page.locator("#grants .grant").filter(has_text=str(path))).to_have_count(1)


def test_plugins_grants_and_an_approved_and_a_denied_write_call(
    served_console: ServedConsole, tmp_path: Path, files: Path
) -> None:
    """Install excel from the page, disable and enable markdown, grant the workbook and the
    output folder, analyze and configure, then excel_execute: the approval shows the folder
    the host injected, Approve runs it (the files are on disk), a second one is denied."""
    _, opened = served_console
    page, expect = opened.page, opened.expect
    plugins = page.locator("#plugins")
    markdown = plugins.locator('[data-plugin-id="fan.summer.markdown"]')
    expect(markdown).to_contain_text("enabled")
    expect(page.locator('#tools [data-tool="markdown_render"]')).to_be_visible()
    conversation = page.locator("#conversation-id").inner_text()
    assert re.fullmatch(r"conv_[0-9a-f]{32}", conversation)

    # An install the host refuses: its error and problems, readable.
    page.locator("#install-path").fill(str(tmp_path / "no-such-plugin"))
    page.get_by_role("button", name="Install").click()
    expect(page.locator("#plugins-error")).to_contain_text("400")

    page.locator("#install-path").fill(str(EXCEL))
    page.get_by_role("button", name="Install").click()
    excel = plugins.locator('[data-plugin-id="fan.summer.excel"]')
    expect(excel).to_contain_text("enabled")
    expect(excel).to_contain_text("excel_execute")
    expect(page.locator("#plugins-error")).to_be_hidden()
    expect(page.locator('#tools [data-tool="excel_execute"]')).to_contain_text("write")

    markdown.get_by_role("button", name="Disable").click()
    expect(markdown).to_contain_text("disabled")
    expect(page.locator('#tools [data-tool="markdown_render"]')).to_have_count(0)
    markdown.get_by_role("button", name="Enable").click()
    expect(markdown.get_by_role("button", name="Disable")).to_be_visible()
    expect(page.locator('#tools [data-tool="markdown_render"]')).to_be_visible()

    grant(opened, "fan.summer.excel", files / "sales.xlsx", "read")
    grant(opened, "fan.summer.excel", files / "out", "write")

    analyzed = send(opened, "/call excel_analyze {}")
    expect(analyzed.locator(".outcome")).to_have_text(re.compile("^done"))
    expect(analyzed.locator(".tool .output")).to_contain_text("sales.xlsx")
    configured = send(opened, '/call excel_configure {"mode": "BY_SHEET"}')
    expect(configured.locator(".outcome")).to_have_text(re.compile("^done"))

    approved = send(opened, '/call excel_execute {"filePrefix": "part_"}')
    card = approved.locator(".tool")
    expect(card.locator(".arguments").first).to_contain_text('"filePrefix": "part_"')
    approval = card.locator(".approval")
    expect(approval).to_contain_text("Approve excel_execute?")
    # As sent to the worker: the folder's FileRef in outputDir, which the model left out.
    expect(approval.locator(".arguments")).to_contain_text('"outputDir": {')
    _expect_injected_row(opened, approval, files / "out")
    expect(card.locator(".state")).to_have_text("waiting for approval")
    approval.get_by_role("button", name="Approve").click()
    expect(approval).to_contain_text("Approved")
    expect(card.locator(".output")).to_contain_text("part_")
    expect(card.locator(".state")).to_have_text("succeeded")
    expect(approved.locator(".outcome")).to_have_text(re.compile("^done"))
    written = sorted(p.name for p in (files / "out").iterdir())
    assert written and all(name.startswith("part_") for name in written), written
    output = json.loads(card.locator(".output").inner_text())
    assert sorted(output["files"]["names"]) == written
    if path := os.environ.get("CONSOLE_SCREENSHOT"):
        page.screenshot(path=path)

    denied = send(opened, '/call excel_execute {"filePrefix": "again_"}')
    card = denied.locator(".tool")
    denied.get_by_role("button", name="Deny").click()
    expect(card.locator(".approval")).to_contain_text("Denied")
    expect(card.locator(".state")).to_have_text("failed")
    expect(card.locator(".output")).to_contain_text("not approved")
    expect(denied.locator(".outcome")).to_have_text(re.compile("^done"))
    assert not any(p.name.startswith("again_") for p in (files / "out").iterdir())

    page.get_by_role("button", name="New conversation").click()
    expect(page.locator("#conversation-id")).not_to_have_text(conversation)
    expect(page.locator("#grants")).to_contain_text("nothing granted")
    expect(page.locator("#transcript .message")).to_have_count(0)
    opened.assert_clean()


def _expect_injected_row(console: Console, approval: Any, folder: Path) -> None:
    """The files table of the approval: outputDir, the folder's resolved path, filled in by
    the host."""
    row = approval.locator('.files tr[data-parameter="outputDir"]')
    console.expect(row).to_contain_text(str(folder.resolve()))
    console.expect(row).to_contain_text("the host")


def test_tool_output_is_text_not_markup(served_console: ServedConsole) -> None:
    """Markup in a tool's arguments and output is shown as text: no element, no script."""
    hostile = '<img src="/x" onerror="document.title=\'pwned\'"><b id="bold">b</b>'
    _, opened = served_console
    page, expect = opened.page, opened.expect
    answer = send(opened, f"/call markdown_render {json.dumps({'markdown': hostile})}")
    expect(answer.locator(".outcome")).to_have_text(re.compile("^done"))
    expect(answer.locator(".tool .arguments").first).to_contain_text('<b id=\\"bold\\">')
    expect(answer.locator(".tool .state")).to_have_text("succeeded")
    expect(page.locator("#transcript img, #transcript #bold")).to_have_count(0)
    assert page.title() != "pwned"
    opened.assert_clean()


def test_calls_of_one_message_are_matched_with_their_results_by_id(
    served_console: ServedConsole,
) -> None:
    """Two `/call` lines: one card per call id, each with its own arguments and output."""
    _, opened = served_console
    expect = opened.expect
    answer = send(
        opened,
        '/call markdown_render {"markdown": "# Alpha"}\n'
        '/call markdown_render {"markdown": "# Beta"}',
    )
    expect(answer.locator(".outcome")).to_have_text(re.compile("^done"))
    cards = answer.locator(".tool")
    expect(cards).to_have_count(2)
    for index, (word, other) in enumerate([("Alpha", "Beta"), ("Beta", "Alpha")]):
        card = cards.nth(index)
        expect(card.locator(".state")).to_have_text("succeeded")
        expect(card.locator(".arguments")).to_contain_text(word)
        expect(card.locator(".output")).to_contain_text(word)
        expect(card.locator(".output")).not_to_contain_text(other)
    ids = {cards.nth(i).get_attribute("data-call-id") for i in range(2)}
    assert len(ids) == 2
    opened.assert_clean()


def test_the_console_opens_a_conversation_by_id_and_follows_turns_posted_elsewhere(
    browser: Any, tmp_path: Path, files: Path
) -> None:
    """`?conversation=ID` opens the conversation that curl posts to: its grants and the turns
    posted before the page opened show, a turn posted while it is open shows as it happens,
    and the page's own turn is shown once (its chat stream, not the follower too)."""
    markdown_call = '/call markdown_render {"markdown": "# Elsewhere"}'
    with host_on_loopback(tmp_path, files) as url:
        posted = httpx.post(
            f"{url}/api/conversations/c-curl/grants",
            json={
                "pluginId": "fan.summer.markdown",
                "path": str(files / "sales.xlsx"),
                "access": "read",
            },
        )
        assert posted.status_code == 201, posted.text
        before = httpx.post(
            f"{url}/api/chat", json={"message": "asked before", "conversationId": "c-curl"}
        )
        assert before.status_code == 200
        with console(browser, url, "?conversation=c-curl") as opened:
            page, expect = opened.page, opened.expect
            expect(page.locator("#conversation-id")).to_have_text("c-curl")
            expect(page.locator("#grants .grant")).to_have_count(1)
            followed = page.locator(".message.user.followed")
            expect(followed).to_have_text(["asked before"])
            during = httpx.post(
                f"{url}/api/chat", json={"message": markdown_call, "conversationId": "c-curl"}
            )
            assert during.status_code == 200
            expect(followed).to_have_text(["asked before", markdown_call])
            card = page.locator(".message.assistant").nth(1).locator(".tool")
            expect(card.locator(".state")).to_have_text("succeeded")
            mine = send(opened, "asked here")
            expect(mine.locator(".outcome")).to_have_text(re.compile("^done"))
            expect(page.locator(".message.user")).to_have_count(3)
            expect(followed).to_have_count(2)
            assert "conversation=c-curl" in page.url
            page.locator("#open-conversation").fill("c-other")
            page.get_by_role("button", name="Open", exact=True).click()
            expect(page.locator("#conversation-id")).to_have_text("c-other")
            expect(page.locator(".message.user")).to_have_count(0)
            expect(page.locator("#grants .grant")).to_have_count(0)
            opened.assert_clean()


def test_the_token_field_unlocks_the_api(browser: Any, tmp_path: Path, files: Path) -> None:
    """With --token the page still loads; the API answers 401 until the token is given."""
    with host_on_loopback(tmp_path, files, token=TOKEN) as url, console(browser, url) as opened:
        page, expect = opened.page, opened.expect
        expect(page.locator("#plugins-error")).to_contain_text("401")
        page.locator("#token").fill(TOKEN)
        page.get_by_role("button", name="Use").click()
        expect(page.locator('#plugins [data-plugin-id="fan.summer.markdown"]')).to_be_visible()
        expect(page.locator("#plugins-error")).to_be_hidden()
        answer = send(opened, "hello")
        expect(answer.locator(".outcome")).to_have_text(re.compile("^done"))
        expect(answer.locator(".assistant-text")).not_to_be_empty()
        opened.assert_clean()


def test_the_token_in_the_url_the_host_printed_unlocks_the_api(
    browser: Any, tmp_path: Path, files: Path
) -> None:
    """`/#token=...` (as `serve` prints it): the page keeps the token for the tab, sends it,
    and takes it out of the address bar; a reload still has it."""
    with (
        host_on_loopback(tmp_path, files, token=TOKEN) as url,
        console(browser, url, f"#token={TOKEN}") as opened,
    ):
        page, expect = opened.page, opened.expect
        expect(page.locator('#plugins [data-plugin-id="fan.summer.markdown"]')).to_be_visible()
        expect(page.locator("#plugins-error")).to_be_hidden()
        assert TOKEN not in page.url  # the address keeps the conversation only
        assert page.url.startswith(url + "/?conversation=conv_")
        assert page.evaluate("sessionStorage.getItem('reference-host.token')") == TOKEN
        answer = send(opened, "hello")
        expect(answer.locator(".outcome")).to_have_text(re.compile("^done"))
        page.reload()
        expect(page.locator('#plugins [data-plugin-id="fan.summer.markdown"]')).to_be_visible()
        opened.assert_clean()


def attack_page(target: str) -> Any:
    """An ASGI app whose page, once loaded, POSTs to target from its own origin (a simple
    request: no preflight) and then says so in its title."""
    page = f"""<!doctype html><title>loading</title><script>
fetch({json.dumps(target)}, {{method: "POST", mode: "no-cors"}})
  .then(() => {{ document.title = "sent"; }}, () => {{ document.title = "failed"; }});
</script>""".encode()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/html; charset=utf-8")],
            }
        )
        await send({"type": "http.response.body", "body": page})

    return app


def test_a_page_on_another_loopback_port_cannot_disable_a_plugin(
    browser: Any, tmp_path: Path, files: Path
) -> None:
    """Issue 35 item 7, in a real browser: a page served on another port of 127.0.0.1 POSTs
    to the host's disable route (no token set: the Origin check alone stands). The browser
    sends it with the page's Origin; the host refuses it and the plugin stays enabled."""
    from playwright.sync_api import expect

    with host_on_loopback(tmp_path, files) as url:
        target = url + "/api/plugins/fan.summer.markdown/disable"
        with serve_on_loopback(attack_page(target), name="other local server") as other:
            assert other.rsplit(":", 1)[1] != url.rsplit(":", 1)[1]
            context = browser.new_context()
            try:
                page = context.new_page()
                seen: list[int] = []  # a 403 can only be the Origin check: no token is set
                page.on("response", lambda r: seen.append(r.status) if r.url == target else None)
                page.goto(other + "/")
                expect(page).to_have_title("sent", timeout=EXPECT_TIMEOUT)
            finally:
                context.close()
        assert seen == [403]
        listed = httpx.get(url + "/api/plugins", timeout=30).json()
        assert [(p["id"], p["enabled"]) for p in listed] == [("fan.summer.markdown", True)]


def test_the_event_stream_parser_follows_the_spec(served_console: ServedConsole) -> None:
    """The page's SSE parser: BOM, CRLF/LF/CR line ends split across chunks, comments,
    multi-line data, default type, an event without data, an unterminated last event."""
    chunks = [
        "\ufeff: connected\r",
        "\nevent: token\rdata: a\r\ndata:b\n\n",
        "data: plain\n\nevent: empty\n\n",
        'event: done\ndata: {"text":"x"}\r',
        "\r",
        "event: lost\ndata: never dispatched",
    ]
    script = """async (chunks) => {
        const { SSEParser } = await import("/console/console.js");
        const seen = [];
        const parser = new SSEParser(
            (event) => seen.push([event.type, event.data]),
            (comment) => seen.push([":", comment]),
        );
        const encoder = new TextEncoder();
        for (const chunk of chunks) parser.feed(encoder.encode(chunk));
        parser.close();
        return seen;
    }"""
    _, opened = served_console
    seen = opened.page.evaluate(script, chunks)
    assert seen == [
        [":", "connected"],
        ["token", "a\nb"],
        ["message", "plain"],
        ["done", '{"text":"x"}'],
    ]
    opened.assert_clean()


@pytest.mark.parametrize("required", ["1", ""])
def test_a_missing_browser_skips_unless_it_is_required(
    required: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REQUIRE_BROWSER", required)
    outcome = pytest.fail.Exception if required else pytest.skip.Exception
    with pytest.raises(outcome, match="chromium is missing"):
        _browser_missing("chromium is missing")
