"""What the link extraction tests share: a page's URL, the links found in a page or an SVG
document, a page long enough to be parsed as a stream, a srcdoc iframe."""

import html

from archiver.findings import STREAMED_BYTES, extract, extract_html

BASE = "http://h/dir/page.html"


def links_of(html: str, url: str = BASE) -> dict[str, str]:
    return {link.url: link.kind for link in extract_html(html.encode(), url).links}


def past_streaming(html: str, encoding: str, ending: str = "") -> bytes:
    """``html`` made long enough to be parsed as a stream, by text after its links."""
    padding = "<p>" + "padding text " * (STREAMED_BYTES // 13 + 100) + "</p>"
    return (html + padding + ending).encode(encoding, errors="xmlcharrefreplace")


def srcdoc(document: str) -> str:
    """An iframe holding ``document`` in its srcdoc attribute, escaped as a page writes it."""
    return f'<iframe srcdoc="{html.escape(document)}"></iframe>'


def svg_links(body: bytes, content_type: str = "image/svg+xml") -> dict[str, str]:
    return {
        link.url: link.kind
        for link in extract(body, "http://h/img/a.svg", "image/svg+xml", content_type).links
    }


XHTML = "application/xhtml+xml"
