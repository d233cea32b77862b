"""A page rewritten for the mirror keeps its encoding: bytes outside links kept exactly, the
charset said where a browser reading the file looks, queries written as the crawl fetched them."""

from __future__ import annotations

import codecs
import html

import lxml.etree
import lxml.html
import pytest
from rewrite_cases import HERE, PAGE, QUERIES, SVG_PATH, SVG_URL, resolve

from archiver.encodings import web_codec
from archiver.findings import extract_html
from archiver.mirror.linker import Memo
from archiver.mirror.rewrite import rewrite_html, rewrite_svg
from archiver.mirror.stylesheets import rewrite_css_bytes


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("shift_jis", "日本語のページ"),
        ("euc-jp", "日本語のページ"),
        ("gbk", "中文页面"),
        ("big5", "中文頁面"),
        ("windows-1252", "café naïve €"),
        ("iso-8859-1", "café"),
        ("koi8-r", "Привет"),
        ("utf-8", "日本語 café"),
    ],
)
def test_page_encoding_is_kept(encoding: str, text: str) -> None:
    markup = (
        f"<html><head><title>{text}</title></head><body><p>{text}</p>"
        f'<a href="/%E6%97%A5%E6%9C%AC.html">{text}</a><img alt="{text}" src="/img/a.png">'
    )
    body = markup.encode(encoding)
    out = rewrite_html(body, PAGE, encoding, resolve)
    decoded = out.decode(encoding)
    assert text in decoded and f'alt="{text}"' in decoded
    assert 'href="../%E6%97%A5%E6%9C%AC.html"' in decoded
    assert 'src="../img/a.png"' in decoded
    assert decoded.startswith(f'<meta charset="{encoding}">')  # header-only charset made explicit
    assert lxml.html.document_fromstring(out).findtext(".//title") == text


def test_an_iso_2022_jp_page_is_written_back_as_it_was_read() -> None:
    # Read as browsers read it (half-width katakana, NEC's ①), written back byte for byte: the
    # standard's writer would make the katakana full-width.
    text = b"\x1b$BF|K\\-!\x1b(B \x1b(I1\x1b(B"
    body = b'<meta charset="iso-2022-jp"><p>' + text + b'</p><a href="/%E6%97%A5%E6%9C%AC.html">x</a>'
    out = rewrite_html(body, PAGE, web_codec("iso-2022-jp") or "", resolve)
    assert text in out and b'href="../%E6%97%A5%E6%9C%AC.html"' in out


def test_shift_jis_bytes_outside_links_are_kept_exactly() -> None:
    body = (
        '<!DOCTYPE html><html><head><meta charset="shift_jis"><title>表示</title></head>'
        '<body><p>ソフト\\ウェア</p><a href="/target">リンク</a></body></html>'
    ).encode("shift_jis")
    out = rewrite_html(body, PAGE, "shift_jis", resolve)
    assert out == body.replace(b'href="/target"', b'href="../target.html"')


def test_non_ascii_url_in_a_shift_jis_page_is_resolved() -> None:
    body = '<meta charset="shift_jis"><a href="/日本.html">x</a>'.encode("shift_jis")
    out = rewrite_html(body, PAGE, None, resolve)
    assert b'href="../%E6%97%A5%E6%9C%AC.html"' in out


@pytest.mark.parametrize("encoding", ["utf-8", "shift_jis", "windows-1252"])
def test_character_references_are_read_after_the_page_is_decoded(encoding: str) -> None:
    """A reference to a character the page's encoding cannot hold (&mdash;, &#8217;) in a tag
    with a link once made the page's rewrite fail; one to a non-ASCII character in a URL
    must name that character, whatever bytes the page is written in."""
    body = (
        '<a href="/target" title="A &mdash; B &#8217;s">t</a>'
        '<img src="/%E6%97%A5%E6%9C%AC.html" alt="&#26085;">'
        '<a href="caf&#233;.html">c</a>'
    ).encode(encoding)
    out = rewrite_html(body, PAGE, encoding, resolve).decode(encoding)
    assert 'href="../target.html" title="A &mdash; B &#8217;s"' in out
    assert 'src="../%E6%97%A5%E6%9C%AC.html" alt="&#26085;"' in out
    last_href = html.unescape(out.rpartition('href="')[2].partition('"')[0])
    assert last_href == "http://site.test/dir/caf%C3%A9.html"  # made absolute as a browser resolves it
    assert extract_html(body, PAGE, encoding).links[-1].url == "http://site.test/dir/caf%C3%A9.html"


def test_header_charset_that_the_page_contradicts_wins() -> None:
    body = '<meta charset="utf-8"><p>日本</p>'.encode("shift_jis")
    out = rewrite_html(body, PAGE, "shift_jis", resolve)
    assert out.startswith(b'<meta charset="shift_jis"><meta charset="utf-8">')


def test_declared_charset_is_not_repeated() -> None:
    body = b'<!DOCTYPE html><meta charset="UTF-8"><a href="/target">'
    assert rewrite_html(body, PAGE, "utf-8", resolve) == body.replace(b"/target", b"../target.html")


def test_a_charset_said_only_in_a_comment_is_said_again() -> None:
    # A browser's prescan skips comments: from disk, the page would be read in its guess.
    body = b'<!-- <meta charset="windows-1251"> --><p>\xe4\xe0</p>'
    out = rewrite_html(body, PAGE, "windows-1251", resolve)
    assert out == b'<meta charset="windows-1251">' + body


def test_doctype_stays_first() -> None:
    out = rewrite_html(b"<!DOCTYPE html>\n<p>x", PAGE, "windows-1252", resolve)
    assert out == b'<!DOCTYPE html><meta charset="windows-1252">\n<p>x'


def test_utf16_page() -> None:
    body = '<a href="/target">日本</a>'.encode("utf-16")
    out = rewrite_html(body, PAGE, None, resolve)
    assert out.decode("utf-16") == '<a href="../target.html">日本</a>'


def test_undecodable_bytes_survive() -> None:
    body = b'<p>\xff\xfe broken \x80 utf-8</p><a href="/target">'
    out = rewrite_html(body, PAGE, None, resolve)
    assert out == body.replace(b"/target", b"../target.html")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b"<!-- made by hand -->\n<!DOCTYPE html><p>x",
            b'<!-- made by hand -->\n<!DOCTYPE html><meta charset="latin1"><p>x',
        ),
        (
            b'<?xml version="1.0"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" "s.dtd">\n<html>',
            b'<?xml version="1.0"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" "s.dtd">'
            b'<meta charset="latin1">\n<html>',
        ),
        (b"<html><!DOCTYPE html>", b'<meta charset="latin1"><html><!DOCTYPE html>'),
    ],
)
def test_the_charset_added_comes_after_the_doctype_so_the_page_keeps_its_mode(
    body: bytes, expected: bytes
) -> None:
    # Before the doctype, it would put the page in quirks mode: another layout.
    assert rewrite_html(body, PAGE, "latin1", resolve) == expected


XHTML = b'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>caf\xe9</p></body></html>'


@pytest.mark.parametrize(
    ("body", "charset", "expected"),
    [
        (XHTML.replace(b"\xe9", b"\xc3\xa9"), "utf-8", XHTML.replace(b"\xe9", b"\xc3\xa9")),
        (XHTML, "ISO-8859-1", b'<?xml version="1.0" encoding="ISO-8859-1"?>' + XHTML),
        (
            b'<?xml version="1.0" encoding="utf-8"?>' + XHTML,
            "ISO-8859-1",
            b'<?xml version="1.0" encoding="ISO-8859-1"?>' + XHTML,
        ),
        (
            b"<?xml version='1.0' encoding='latin1'?>" + XHTML,
            "ISO-8859-1",
            b"<?xml version='1.0' encoding='latin1'?>" + XHTML,
        ),
    ],
)
def test_an_xhtml_document_says_its_charset_in_its_xml_declaration(
    body: bytes, charset: str, expected: bytes
) -> None:
    # An HTML <meta> before the root element is not XML: the page would show only a parse error.
    assert rewrite_html(body, PAGE, charset, resolve, xml=True) == expected


def test_a_bare_url_whose_utf8_holds_the_byte_of_a_no_break_space_is_made_local() -> None:
    # "à" is C3 A0 in UTF-8; A0, read one byte a character, is a no-break space: not CSS's white space.
    body = "a{b:url(voilà.png)}".encode()
    archived = {"http://site.test/voil%C3%A0.png": "site.test/v.png"}
    out = rewrite_css_bytes(body, "http://site.test/s.css", "utf-8", archived.get, "site.test/s.css")
    assert out == b"a{b:url(v.png)}"


def test_a_query_is_encoded_in_the_pages_encoding_as_the_crawl_fetched_it() -> None:
    body = (
        b'<a href="/s?q=caf\xe9">a</a><div style="background:url(/c?\xe9)"></div>'
        b'<a href="/gone?q=caf\xe9">g</a>'
    )
    out = rewrite_html(body, PAGE, "windows-1252", QUERIES.get, HERE)
    assert out == (
        b'<meta charset="windows-1252"><a href="../s@q=caf-1252.html">a</a>'
        b'<div style="background:url(../c.png)"></div>'  # CSS URLs are always UTF-8
        b'<a href="http://site.test/gone?q=caf%E9">g</a>'
    )
    # What the rewrite linked is what the crawl fetched.
    fetched = {link.url for link in extract_html(body, PAGE, "windows-1252").links}
    assert fetched == {
        "http://site.test/s?q=caf%E9",
        "http://site.test/c?%C3%A9",
        "http://site.test/gone?q=caf%E9",
    }


def test_pages_in_two_encodings_sharing_a_memo_link_one_query_text_to_two_urls() -> None:
    memo = Memo()
    latin = rewrite_html(
        '<a href="/s?q=café">'.encode("cp1252"), PAGE, "windows-1252", QUERIES.get, HERE, memo
    )
    utf8 = rewrite_html('<a href="/s?q=café">'.encode(), PAGE, "utf-8", QUERIES.get, HERE, memo)
    assert latin.endswith(b'<a href="../s@q=caf-1252.html">')
    assert utf8 == b'<meta charset="utf-8"><a href="../s@q=caf-utf8.html">'


@pytest.mark.parametrize("label", ["iso-8859-1", "latin1", "us-ascii"])
def test_a_page_labelled_latin1_is_rewritten_as_the_windows_1252_browsers_read(label: str) -> None:
    archived = {"http://site.test/%E2%82%AC.html": "site.test/\u20ac.html"}
    body = b'<a href="/\x80.html">\x93a\x94</a><a href="/\x85">b</a><iframe srcdoc="<p>\x93</p>"></iframe>'
    out = rewrite_html(body, PAGE, label, archived.get, HERE)
    assert out == (
        f'<meta charset="{label}">'.encode()
        + b'<a href="../%E2%82%AC.html">\x93a\x94</a><a href="http://site.test/%E2%80%A6">b</a>'
        + b'<iframe srcdoc="<p>\x93</p>"></iframe>'
    )


def test_a_utf16_page_a_header_names_gets_a_byte_order_mark_a_file_on_disk_is_read_by() -> None:
    # A <meta> saying UTF-16 is read as UTF-8, and XML reads UTF-16 only after a mark.
    page = '<a href="/target">\u65e5\u672c</a>'
    out = rewrite_html(page.encode("utf-16-le"), PAGE, "utf-16", resolve, HERE)
    assert out == codecs.BOM_UTF16_LE + ('<a href="../target.html">\u65e5\u672c</a>'.encode("utf-16-le"))
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><image href="/img/a.png"/></svg>'
    out = rewrite_svg(svg.encode("utf-16-be"), SVG_URL, "UTF-16BE", resolve, SVG_PATH)
    assert lxml.etree.fromstring(out).find("{*}image").get("href") == "../img/a.png"


@pytest.mark.parametrize("label", ["ISO-2022-KR", "hz-gb-2312"])
def test_a_document_in_a_replacement_encoding_is_kept_and_says_its_encoding(label: str) -> None:
    """A browser shows such a document as one U+FFFD: its file keeps the bytes received, links
    untouched, and names the encoding its header gave, so that read from disk it shows the same."""
    page = b'<!doctype html><a href="/target">a</a><script>x()</script>'
    out = rewrite_html(page, PAGE, label, resolve, HERE)
    assert out == f'<meta charset="{label}">'.encode() + page
    assert rewrite_html(out, PAGE, None, resolve, HERE) == out  # it says so already
    xhtml = b'<?xml version="1.0" encoding="utf-8"?><html><a href="/target">a</a></html>'
    out = rewrite_html(xhtml, PAGE, label, resolve, HERE, xml=True)
    assert out == xhtml.replace(b"utf-8", label.encode())
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><image href="/img/a.png"/></svg>'
    out = rewrite_svg(svg, SVG_URL, label, resolve, SVG_PATH)
    assert out == f'<?xml version="1.0" encoding="{label}"?>'.encode() + svg
    css = b"a{background:url(/img/a.png)}"
    out = rewrite_css_bytes(css, "http://site.test/style.css", label, resolve, "site.test/style.css")
    assert out == f'@charset "{label}";'.encode() + css


def test_an_xhtml_page_is_rewritten_in_the_encoding_xml_gives() -> None:
    # Its XML declaration counts, a <meta> does not; read another way, its link named another URL.
    page = '<?xml version="1.0" encoding="shift_jis"?><html><a href="/\u65e5\u672c.html">a</a></html>'
    out = rewrite_html(page.encode("cp932"), PAGE, None, resolve, HERE, xml=True)
    assert out.decode("cp932") == page.replace("/\u65e5\u672c.html", "../%E6%97%A5%E6%9C%AC.html")
    meta = '<html><head><meta charset="shift_jis"/></head><a href="/\u65e5\u672c.html">a</a></html>'
    out = rewrite_html(meta.encode(), PAGE, None, resolve, HERE, xml=True)
    assert out.decode() == meta.replace("/\u65e5\u672c.html", "../%E6%97%A5%E6%9C%AC.html")
