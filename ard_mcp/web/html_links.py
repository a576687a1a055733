"""`<link rel="ai-catalog" href="...">` in an HTML page (ARD §6.1), read with the standard library's parser.

`rel` is a space-separated list of tokens compared case-insensitively (HTML §4.6.7), so `rel="alternate
ai-catalog"` counts; a `<base href>` changes what relative links resolve against. Links are collected
anywhere in the document: pages put them in `<head>`, but a lenient reader costs nothing here.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin

REL = "ai-catalog"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): value or "" for name, value in attrs}
        if tag == "base" and self.base is None and values.get("href"):
            self.base = values["href"]
        elif tag == "link" and REL in values.get("rel", "").lower().split() and values.get("href"):
            self.hrefs.append(values["href"].strip())


def catalog_links(html: str, page_url: str) -> list[str]:
    """Absolute URLs of the page's ai-catalog links, in document order, without repeats."""
    parser = _Links()
    parser.feed(html)
    parser.close()
    base = urljoin(page_url, parser.base) if parser.base else page_url
    return list(dict.fromkeys(urljoin(base, href) for href in parser.hrefs))
