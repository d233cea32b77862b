"""Link extraction from SVG documents and XML pages: an SVG document read as a page is, what
styles it (xml-stylesheet instructions, presentation attributes), SVG inside a page."""

import pytest
from conftest import in_linear_time
from link_cases import BASE, links_of, past_streaming, svg_links

from archiver.findings import extract
from archiver.links import LINK, REQUISITE

SVG_DOCUMENT = b"""<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">
  <style>rect{fill:url(pattern.svg#p)} @import "s.css";</style>
  <style><![CDATA[ circle{background:url(cdata.png)} a > b {} ]]></style>
  <image href="pic.png"/><image xlink:href="/old.png"/>
  <use href="sprite.svg#icon"/><use xlink:href="#local"/>
  <a href="page.html"><text>go</text></a><a xlink:href="other.html">o</a>
  <filter id="f"><feImage href="fe.png"/></filter>
  <rect style="fill:url('bg.png')"/>
  <script href="s.js"/>
  <!-- <image href="commented.png"/> -->
</svg>"""


SVG_LINKS = {
    "http://h/img/pattern.svg": REQUISITE,
    "http://h/img/s.css": REQUISITE,
    "http://h/img/cdata.png": REQUISITE,
    "http://h/img/pic.png": REQUISITE,
    "http://h/old.png": REQUISITE,
    "http://h/img/sprite.svg": REQUISITE,
    "http://h/img/page.html": LINK,
    "http://h/img/other.html": LINK,
    "http://h/img/fe.png": REQUISITE,
    "http://h/img/bg.png": REQUISITE,
    "http://h/img/s.js": REQUISITE,
}


def test_an_svg_document_is_read_for_links_as_an_html_page_is():
    # The image needs what it draws and styles with (requisites); its <a> leads elsewhere (a link).
    assert svg_links(SVG_DOCUMENT) == SVG_LINKS


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (  # the SVG namespace under a prefix, xlink under another
            b'<s:svg xmlns:s="http://www.w3.org/2000/svg" xmlns:x="http://www.w3.org/1999/xlink">'
            b'<s:image x:href="p.png"/></s:svg>',
            {"http://h/img/p.png": REQUISITE},
        ),
        (  # Adobe Illustrator names its namespaces by entities of its own DTD
            b'<!DOCTYPE svg [<!ENTITY ns_svg "http://www.w3.org/2000/svg">]>'
            b'<svg xmlns="&ns_svg;"><image href="p.png"/></svg>',
            {"http://h/img/p.png": REQUISITE},
        ),
        (
            b'<svg xmlns="http://www.w3.org/2000/svg"><image href="p.png"/><broken',
            {"http://h/img/p.png": REQUISITE},
        ),
        (b"not xml at all", {}),
        (b"", {}),
    ],
)
def test_an_svg_document_is_read_however_it_is_written(body, expected):
    assert svg_links(body) == expected


def test_an_svg_document_writes_its_queries_in_its_encoding_but_in_css():
    body = (
        b'<?xml version="1.0" encoding="windows-1252"?><svg xmlns="http://www.w3.org/2000/svg">'
        b'<a href="/s?q=caf\xe9"/><rect style="fill:url(/b.png?\xe9)"/></svg>'
    )
    assert svg_links(body) == {"http://h/s?q=caf%E9": LINK, "http://h/b.png?%C3%A9": REQUISITE}
    assert svg_links(body.replace(b"windows-1252", b"utf-8"), "image/svg+xml; charset=windows-1252") == {
        "http://h/s?q=caf%E9": LINK,
        "http://h/b.png?%C3%A9": REQUISITE,
    }


def test_svg_inside_an_html_page_is_read_with_the_same_rules():
    page = '<svg><filter><feImage href="fe.png"/></filter><a xlink:href="x.html">x</a>'
    page += '<script href="s.js"/></svg>'
    assert links_of(page) == {
        "http://h/dir/fe.png": REQUISITE,
        "http://h/dir/x.html": LINK,
        "http://h/dir/s.js": REQUISITE,
    }


@pytest.mark.parametrize(
    "body",
    [
        b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa">'
        + b"".join(b'<!ENTITY %c "%s">' % (98 + n, (b"&%c;" % (97 + n)) * 10) for n in range(9))
        + b']><svg xmlns="http://www.w3.org/2000/svg"><text>&j;</text><image href="p.png"/></svg>',
        b'<svg xmlns="http://www.w3.org/2000/svg">' + b"<g>" * 200_000 + b'<image href="p.png"/>',
        b'<svg xmlns="http://www.w3.org/2000/svg"><image href="' + b"x" * 10_000_000 + b'"/></svg>',
        b'<svg xmlns="http://www.w3.org/2000/svg">' + b'<image href="p.png"/>' * 200_000 + b"</svg>",
        b'<svg xmlns="http://www.w3.org/2000/svg"><style>' + b"url(" * 1_000_000 + b"</style></svg>",
    ],
    ids=["a billion laughs", "nested 200,000 deep", "an href of 10 MB", "200,000 images", "a hostile style"],
)
def test_hostile_svg_documents_are_read_in_linear_time(body):
    with in_linear_time():
        found = svg_links(body)
    assert len(found) <= 1


SVG_STYLED_DOCUMENT = b"""<?xml version="1.0" encoding="UTF-8"?>
<!-- <?xml-stylesheet href="commented.css"?> -->
<?xml-stylesheet type="text/css" href="look.css?a=1&amp;b=2"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:h="http://www.w3.org/1999/xhtml">
  <?xml-stylesheet href="too-late.css"?>
  <rect fill="url(paint.svg#g)" stroke="url('edge.svg#s')" filter="url(#local)" mask="url(m.svg#m)"/>
  <g clip-path="url(clip.svg#c)" style="background:url(bg.png)"><circle marker-start="url(mk.svg#a)"/></g>
  <style>@import "imported.css"; rect{fill:url(styled.png)}</style>
  <foreignObject width="10" height="10">
    <div xmlns="http://www.w3.org/1999/xhtml" style="background:url(div-bg.png)">
      <img src="fo.png" srcset="fo-2x.png 2x"/><link rel="stylesheet" href="fo.css"/>
      <video poster="poster.png" src="clip.webm"/><a href="fo-page.html">more</a>
    </div>
    <h:img src="prefixed.png"/>
    <img src="no-xhtml.png"/>
  </foreignObject>
</svg>"""


SVG_STYLED_LINKS = {
    "http://h/img/look.css?a=1&b=2": REQUISITE,
    "http://h/img/paint.svg": REQUISITE,
    "http://h/img/edge.svg": REQUISITE,
    "http://h/img/m.svg": REQUISITE,
    "http://h/img/clip.svg": REQUISITE,
    "http://h/img/bg.png": REQUISITE,
    "http://h/img/mk.svg": REQUISITE,
    "http://h/img/imported.css": REQUISITE,
    "http://h/img/styled.png": REQUISITE,
    "http://h/img/div-bg.png": REQUISITE,
    "http://h/img/fo.png": REQUISITE,
    "http://h/img/fo-2x.png": REQUISITE,
    "http://h/img/fo.css": REQUISITE,
    "http://h/img/poster.png": REQUISITE,
    "http://h/img/clip.webm": REQUISITE,
    "http://h/img/fo-page.html": LINK,
    "http://h/img/prefixed.png": REQUISITE,
}


def test_an_svg_document_is_read_for_what_styles_it_and_the_html_it_holds():
    # Presentation attributes' url(), the stylesheets of <?xml-stylesheet?> before the root (those
    # after it, or in a comment, apply to nothing), and the XHTML of a <foreignObject> by HTML's
    # table (an <img> outside the XHTML namespace is no HTML image).
    assert svg_links(SVG_STYLED_DOCUMENT) == SVG_STYLED_LINKS


XHTML_STYLED_PAGE = b"""<?xml version="1.0" encoding="UTF-8"?>
<!-- <?xml-stylesheet href="commented.css"?> -->
<?xml-stylesheet type="text/css" href="look.css?a=1&amp;b=2"?>
<!DOCTYPE html [ <!ENTITY e "<?xml-stylesheet href='in-subset.css'?>"> ]>
<?xml-stylesheet href='/after-doctype.css'?>
<html xmlns="http://www.w3.org/1999/xhtml"><?xml-stylesheet href="too-late.css"?>
<head><base href="/b/"/></head><body><a href="p.html">p</a></body></html>"""


def test_an_xhtml_page_is_styled_by_its_xml_stylesheet_instructions():
    # As an SVG image is: those before its root element, resolved against its base URL.
    page = extract(XHTML_STYLED_PAGE, BASE, "application/xhtml+xml", "application/xhtml+xml")
    assert {link.url: link.kind for link in page.links} == {
        "http://h/b/look.css?a=1&b=2": REQUISITE,
        "http://h/after-doctype.css": REQUISITE,
        "http://h/b/p.html": LINK,
    }
    # An HTML page has no such instructions: its parser reads them as bogus comments.
    assert links_of(XHTML_STYLED_PAGE.decode()) == {"http://h/b/p.html": LINK}


def test_presentation_attributes_of_svg_inside_a_page_are_read():
    page = '<svg><rect fill="url(/p.svg#g)" stroke="url(#local)"/><use filter="url(f.svg#f)"/></svg>'
    assert links_of(page) == {"http://h/p.svg": REQUISITE, "http://h/dir/f.svg": REQUISITE}
    # Outside an <svg> such an attribute is nothing to a browser.
    assert links_of('<div fill="url(/no.png)"></div><svg></svg><p mask="url(/no.svg)">') == {}


_MARKUP_STYLES = (
    "<style>.a { background: url(/raw.png?a=1&amp;b=2) }</style>"
    "<svg><style>.b { background: url(/svg.png?a=1&amp;b=2) }"
    " <![CDATA[ .c { background: url(/cdata.png?a=1&amp;b=2) } ]]></style>"
    "<foreignObject><style>.d { background: url(/html.png?a=1&amp;b=2) }</style></foreignObject></svg>"
    "<math><style>.e { background: url(/math.png?a=1&#38;b=2) }</style></math>"
)


@pytest.mark.parametrize("streamed", [False, True], ids=["tree", "stream"])
@pytest.mark.parametrize(
    ("mime", "decoded"),
    [("text/html", {"svg", "math"}), ("application/xhtml+xml", {"raw", "svg", "html", "math"})],
)
def test_a_style_whose_text_is_markup_is_read_as_the_browser_reads_it(
    mime: str, decoded: set[str], streamed: bool
) -> None:
    """A <style> inside <svg> or <math> in an HTML page (foreign content) and any <style> of an
    XHTML page (XML) is markup to the browser: Chromium asks for url(/svg.png?a=1&amp;b=2) as
    /svg.png?a=1&b=2. Its text was read raw, as libxml2 keeps it, so the crawl fetched another
    URL (?a=1&amp;b=2) than the page's, and verify and the mirror's rebuild read it alike. Now
    it is read as the browser reads it: references decoded, a CDATA section's content kept as
    written; an HTML <style> (and one in a <foreignObject>, HTML again) stays raw text."""
    body = past_streaming(_MARKUP_STYLES, "utf-8") if streamed else _MARKUP_STYLES.encode()
    found = {link.url for link in extract(body, BASE, mime, mime).links}
    expected = {f"http://h/{name}.png?a=1&b=2" for name in decoded}
    expected |= {f"http://h/{name}.png?a=1&amp;b=2" for name in {"raw", "svg", "html", "math"} - decoded}
    expected.add("http://h/cdata.png?a=1&amp;b=2")
    assert found == expected
