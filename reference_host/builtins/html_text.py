"""Readable text from HTML with the standard library's parser: no scripts, no markup."""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Elements whose content is never readable text.
_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object"})

# Elements that start a new line of text (block-level and line-breaking ones).
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2",
        "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
        "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip

_SPACES = re.compile(r"\s+")


def collapse(text: str) -> str:
    """Runs of whitespace as one space, ends trimmed."""
    return _SPACES.sub(" ", text).strip()


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title_parts: list[str] = []
        self.lines: list[str] = []
        self._current: list[str] = []
        self._skip_depth = 0
        self._in_title = False
        self._title_done = False

    def _break(self) -> None:
        line = collapse("".join(self._current))
        if line:
            self.lines.append(line)
        self._current = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skip_depth += 1
        elif tag == "title":
            self._in_title = True
        elif tag in _BLOCKS:
            self._break()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <hr/>, <script/>: nothing opens, a block still breaks the line.
        if tag in _BLOCKS and not self._skip_depth:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag == "title":
            if self._in_title and self.title_parts:
                self._title_done = True
            self._in_title = False
        elif tag in _BLOCKS:
            self._break()

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._in_title:
            if not self._title_done:
                self.title_parts.append(data)
        else:
            self._current.append(data)

    def close(self) -> None:
        super().close()
        self._break()


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document: one line per block, whitespace collapsed.

    script, style, noscript (and other non-text elements) are dropped; the first <title>
    becomes the title and is not repeated in the text.
    """
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    return collapse("".join(parser.title_parts)), "\n".join(parser.lines)
